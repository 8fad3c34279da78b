"""The OpenAI-compatible endpoints with requests and curl: the exact Server-Sent Event bytes of
a stream (HTTP/1.1 and h2c), the error shapes and statuses, what the demo's tiny_lm does with
max_tokens, stop, seed and temperature, embeddings, the statistics and metrics of these
requests, the front end switched off, and a client that hangs up mid-stream cancelling the
model. (test_openai_sdk.py drives the same endpoints with OpenAI's Node SDK.)"""
import base64
import json
import re
import socket
import struct
import subprocess
import time

import pytest
import requests

from grpc_stubs import curl_h2
from isvtest import demo_path, get, http_request, post_json

CHAT = "/openai/v1/chat/completions"
CMPL = "/openai/v1/completions"
EMBED = "/openai/v1/embeddings"


def chat_body(content="tell me about the server", **kw):
    body = {"model": "tiny_lm", "messages": [{"role": "user", "content": content}]}
    body.update(kw)
    return body


def ok(resp):
    assert resp.status_code == 200, "%d %s" % (resp.status_code, resp.text)
    assert resp.headers["Content-Type"] == "application/json"
    return resp.json()


def openai_error(resp, status, needle, param=None, code=None, type_="invalid_request_error"):
    assert resp.status_code == status, "%d %s" % (resp.status_code, resp.text)
    body = resp.json()
    assert set(body) == {"error"}
    e = body["error"]
    assert set(e) == {"message", "type", "param", "code"}
    assert needle in e["message"], e
    assert (e["type"], e["param"], e["code"]) == (type_, param, code), e
    return e


CHUNK = re.compile(rb'data: \{"id":"chatcmpl-[0-9a-f]{16}","object":"chat\.completion\.chunk",'
                   rb'"created":\d+,"model":"tiny_lm","choices":(.*)\}\n\n')


def test_stream_bytes_exactly(demo):
    """Every event is `data: {json}\\n\\n`; the role first, one word per chunk, the finish
    reason in the last, then the usage chunk and `data: [DONE]`."""
    r = requests.post(demo.url(CHAT), json=chat_body(max_tokens=3, seed=1, stream=True,
                                                     stream_options={"include_usage": True}),
                      timeout=10)
    assert r.status_code == 200
    assert r.headers["Content-Type"] == "text/event-stream; charset=utf-8"
    assert r.headers["Cache-Control"] == "no-cache"
    raw = r.content
    assert raw.endswith(b"data: [DONE]\n\n")
    events = raw.split(b"\n\n")[:-1]
    assert events[-1] == b"data: [DONE]"
    chunks = [e + b"\n\n" for e in events[:-1]]
    bodies = []
    for c in chunks:
        m = CHUNK.fullmatch(c)
        assert m, c
        bodies.append(m.group(1))
    assert len({json.loads(c[6:])["id"] for c in chunks}) == 1
    assert bodies[0] == (b'[{"index":0,"delta":{"role":"assistant","content":""},'
                         b'"logprobs":null,"finish_reason":null}],"usage":null')
    words = []
    for b in bodies[1:4]:
        m = re.fullmatch(rb'\[\{"index":0,"delta":\{"content":"([^"]*)"\},"logprobs":null,'
                         rb'"finish_reason":null\}\],"usage":null', b)
        assert m, b
        words.append(m.group(1).decode())
    assert bodies[4] == (b'[{"index":0,"delta":{},"logprobs":null,"finish_reason":"length"}],'
                         b'"usage":null')
    # the prompt, "user: tell me about the server\nassistant:", is 7 words to tiny_lm
    assert bodies[5] == (b'[],"usage":{"prompt_tokens":7,"completion_tokens":3,'
                         b'"total_tokens":10}')
    assert len(bodies) == 6
    assert words[0] and all(w.startswith(" ") for w in words[1:])
    # the same request without "stream": the same text in one object
    whole = ok(post_json(demo, CHAT, chat_body(max_tokens=3, seed=1)))
    assert whole["choices"][0]["message"]["content"] == "".join(words)


def test_stream_without_usage_and_over_h2c(demo):
    res = curl_h2(demo, CMPL, data=json.dumps({"model": "tiny_lm", "prompt": "the client",
                                               "max_tokens": 2, "temperature": 0,
                                               "stream": True}).encode(),
                  headers=("content-type: application/json",))
    assert res.status == 200, res
    events = res.body.split(b"\n\n")[:-1]
    assert events[-1] == b"data: [DONE]"
    chunks = [json.loads(e[6:]) for e in events[:-1]]
    assert all(c["object"] == "text_completion" and "usage" not in c for c in chunks)
    assert [c["choices"][0]["finish_reason"] for c in chunks] == [None, None, "length"]
    text = "".join(c["choices"][0]["text"] for c in chunks)
    whole = ok(post_json(demo, CMPL, {"model": "tiny_lm", "prompt": "the client",
                                      "max_tokens": 2, "temperature": 0}))
    assert whole["choices"][0]["text"] == text
    assert whole["usage"] == {"prompt_tokens": 2, "completion_tokens": 2, "total_tokens": 4}


def test_chat_completion_object(demo):
    body = ok(post_json(demo, CHAT, chat_body(max_tokens=4, seed=5, user="x",
                                              tools=[], response_format={"type": "text"})))
    assert set(body) == {"id", "object", "created", "model", "choices", "usage"}
    assert body["object"] == "chat.completion" and body["model"] == "tiny_lm"
    assert abs(body["created"] - time.time()) < 60
    assert body["choices"][0]["message"]["role"] == "assistant"
    assert body["choices"][0]["finish_reason"] == "length"
    assert body["usage"]["completion_tokens"] == 4


def test_the_demo_model_follows_its_parameters(demo):
    def text(**kw):
        return ok(post_json(demo, CMPL, dict({"model": "tiny_lm", "prompt": "the model",
                                              "max_tokens": 12}, **kw)))["choices"][0]

    a, b = text(seed=1), text(seed=1)
    assert a == b  # deterministic for a seed
    assert len({text(seed=s)["text"] for s in range(8)}) > 1  # and the seed matters
    greedy = text(temperature=0)
    assert greedy == text(temperature=0, seed=99)  # greedy ignores the seed
    assert text(prompt="the embedding", temperature=0)["text"] != greedy["text"]
    short = text(max_tokens=1)
    assert short["finish_reason"] == "length" and len(short["text"].split()) == 1
    # a stop word ends the text before it
    full = text(temperature=0, max_tokens=30)["text"].split()
    stop = full[2]
    cut = text(temperature=0, max_tokens=30, stop=[stop])
    assert cut["finish_reason"] == "stop"
    assert cut["text"].split() == full[:full.index(stop)]


def f32(v):
    """Python floats as the FP32 values they were written from."""
    return tuple(struct.unpack("<%df" % len(v), struct.pack("<%df" % len(v), *v)))


def test_embeddings_float_and_base64(demo):
    body = ok(post_json(demo, EMBED, {"model": "tiny_embed", "input": ["abc", "abd"]}))
    assert body["object"] == "list" and body["model"] == "tiny_embed"
    assert body["usage"] == {"prompt_tokens": 0, "total_tokens": 0}
    rows = [d["embedding"] for d in body["data"]]
    assert [d["object"] for d in body["data"]] == ["embedding", "embedding"]
    assert len(rows[0]) == 64 and rows[0] != rows[1]
    one = ok(post_json(demo, EMBED, {"model": "tiny_embed", "input": "abc",
                                     "encoding_format": "base64"}))
    assert struct.unpack("<64f", base64.b64decode(one["data"][0]["embedding"])) == f32(rows[0])


def test_a_large_embeddings_request(demo):
    """600 strings: the body (~130 KB) is parsed and the answer (~600 KB) written on worker
    threads; row i is what the string alone gives."""
    texts = ["%d %s" % (i, "word " * 40) for i in range(600)]
    body = ok(post_json(demo, EMBED, {"model": "tiny_embed", "input": texts}))
    assert [d["index"] for d in body["data"]] == list(range(600))
    for i in (0, 299, 599):
        alone = ok(post_json(demo, EMBED, {"model": "tiny_embed", "input": texts[i]}))
        assert body["data"][i]["embedding"] == alone["data"][0]["embedding"]
    b64 = ok(post_json(demo, EMBED, {"model": "tiny_embed", "input": texts,
                                     "encoding_format": "base64"}))
    assert struct.unpack("<64f", base64.b64decode(b64["data"][599]["embedding"])) == \
        f32(body["data"][599]["embedding"])


def test_models(demo):
    body = ok(get(demo, "/openai/v1/models"))
    ids = [m["id"] for m in body["data"]]
    assert body["object"] == "list" and "tiny_lm" in ids and ids == sorted(ids)
    assert ok(get(demo, "/openai/v1/models/tiny_embed"))["id"] == "tiny_embed"
    openai_error(get(demo, "/openai/v1/models/nope"), 404, "'nope'", param="model",
                 code="model_not_found")


def test_errors(demo):
    openai_error(post_json(demo, CHAT, chat_body(n=2)), 400, "'n' must be 1", param="n")
    openai_error(post_json(demo, CHAT, chat_body(temperature=5)), 400, "between 0 and 2",
                 param="temperature")
    openai_error(post_json(demo, CHAT, {"model": "tiny_lm"}), 400, "'messages' is required",
                 param="messages")
    openai_error(post_json(demo, CHAT, '{"model": "tiny_lm",'), 400, "malformed JSON")
    openai_error(post_json(demo, CHAT, dict(chat_body(), model="nope")), 404,
                 "unknown model: 'nope'", code="model_not_found")
    openai_error(post_json(demo, CHAT, dict(chat_body(), model="simple")), 400,
                 "not a text model")
    openai_error(post_json(demo, EMBED, {"model": "tiny_lm", "input": "x"}), 400,
                 "missing input 'max_tokens'")
    openai_error(post_json(demo, EMBED, {"model": "tiny_embed", "input": ["x"] * 2049}), 400,
                 "more than 2048 strings", param="input")
    # the router's and the transport's errors take the same shape
    openai_error(get(demo, "/openai/v1/nothing"), 404, "")
    openai_error(get(demo, CHAT), 405, "")
    # a stream that fails before its first event is an ordinary answer
    openai_error(post_json(demo, CHAT, dict(chat_body(stream=True), model="nope")), 404,
                 "'nope'", code="model_not_found")


def test_statistics_and_metrics_count_openai_requests(demo):
    def count():
        stats = get(demo, "/v2/models/tiny_embed/stats").json()["model_stats"][0]
        return stats["inference_stats"]["success"]["count"]

    before = count()
    ok(post_json(demo, EMBED, {"model": "tiny_embed", "input": "x"}))
    assert count() == before + 1
    metrics = get(demo, "/metrics").text
    assert re.search(r'isv_requests_total\{[^}]*model="tiny_embed"[^}]*protocol="openai"', metrics) \
        or re.search(r'isv_requests_total\{[^}]*protocol="openai"[^}]*model="tiny_embed"',
                     metrics), [l for l in metrics.splitlines() if "tiny_embed" in l]


def test_the_front_end_can_be_switched_off(start_demo):
    d = start_demo("--disable-protocol", "openai")
    r = get(d, "/openai/v1/models")
    assert r.status_code == 404
    assert get(d, "/v2/models/tiny_lm").status_code == 200


def test_a_client_that_hangs_up_mid_stream_cancels_the_model(start_demo):
    d = start_demo("--lm-delay-ms", "100")
    s = socket.create_connection((d.host, d.port))
    s.sendall(http_request("POST", CHAT, json.dumps(chat_body(max_tokens=500, stream=True))
                           .encode()))
    got = b""
    while got.count(b"data: ") < 3:  # the role and two words
        got += s.recv(65536)
    s.close()
    deadline = time.monotonic() + 10
    while "tiny_lm: cancelled after" not in d.stderr_tail() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "tiny_lm: cancelled after" in d.stderr_tail()


def test_under_v1_when_tf_serving_is_off(start_demo):
    d = start_demo("--disable-protocol", "tfserving", "--openai-prefix", "/v1")
    assert "tiny_lm" in [m["id"] for m in ok(get(d, "/v1/models"))["data"]]
    assert ok(get(d, "/v1/models/tiny_lm"))["id"] == "tiny_lm"
    body = ok(post_json(d, "/v1/chat/completions", chat_body(max_tokens=2, seed=3)))
    assert body == dict(ok(post_json(d, CHAT, chat_body(max_tokens=2, seed=3))),
                        id=body["id"], created=body["created"])
    openai_error(post_json(d, "/v1/embeddings", {"model": "nope", "input": "x"}), 404, "'nope'",
                 code="model_not_found")
    assert ok(get(d, "/openai/v1/models"))["object"] == "list"  # still there too


def test_under_v1_beside_tf_serving_is_refused():
    res = subprocess.run([demo_path(), "--listen", "127.0.0.1:0", "--openai-prefix", "/v1"],
                         capture_output=True, timeout=20)
    assert res.returncode == 1
    assert b"/v1/models is already served by another route" in res.stderr
    assert b'turn the "tfserving" protocol off' in res.stderr


def test_a_model_that_answers_once(demo):
    """tiny_lm_once is tiny_lm not decoupled: the same text, whole; streamed, one piece."""
    for path, body in ((CHAT, chat_body(max_tokens=5, seed=4)),
                       (CMPL, {"model": "tiny_lm", "prompt": "the loop", "max_tokens": 5,
                               "temperature": 0})):
        want = ok(post_json(demo, path, body))
        got = ok(post_json(demo, path, dict(body, model="tiny_lm_once")))
        assert got["choices"] == want["choices"] and got["usage"] == want["usage"]
        r = requests.post(demo.url(path), json=dict(body, model="tiny_lm_once", stream=True),
                          timeout=10)
        events = r.content.split(b"\n\n")[:-1]
        assert events[-1] == b"data: [DONE]"
        chunks = [json.loads(e[6:]) for e in events[:-1]]
        if path == CHAT:
            assert [list(c["choices"][0]["delta"]) for c in chunks] == [["role", "content"],
                                                                        ["content"], []]
            assert chunks[1]["choices"][0]["delta"]["content"] == \
                want["choices"][0]["message"]["content"]
        else:
            assert chunks[0]["choices"][0]["text"] == want["choices"][0]["text"]
        assert chunks[-1]["choices"][0]["finish_reason"] == want["choices"][0]["finish_reason"]


def test_the_edge_limits_and_cors_answer_in_openai_shape(start_demo):
    origin = "http://app.example"
    d = start_demo("--max-client-requests", "1", "--lm-delay-ms", "200", "--cors-origin", origin)
    r = requests.options(d.url(CHAT), timeout=10, headers={
        "Origin": origin, "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization, content-type"})
    assert r.status_code == 204 and r.headers["Access-Control-Allow-Origin"] == origin
    with requests.post(d.url(CHAT), json=chat_body(max_tokens=20, stream=True), stream=True,
                       timeout=10) as slow:
        assert slow.status_code == 200
        r = requests.post(d.url(CHAT), json=chat_body(max_tokens=1), timeout=10,
                          headers={"Origin": origin})
        openai_error(r, 429, "requests in flight", code="rate_limit_exceeded", type_="requests")
        assert r.headers["Access-Control-Allow-Origin"] == origin
    # the stream's client left: its count goes once the cancelled model stops (a word later)
    deadline = time.monotonic() + 10
    while True:
        r = requests.post(d.url(CHAT), json=chat_body(max_tokens=1), timeout=10,
                          headers={"Origin": origin})
        if r.status_code != 429 or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert r.status_code == 200 and r.headers["Access-Control-Allow-Origin"] == origin


def test_the_model_stage_refusal_in_openai_shape(start_demo):
    d = start_demo("--forbid-model", "tiny_lm")
    openai_error(post_json(d, CHAT, chat_body()), 403, "tiny_lm")
    openai_error(get(d, "/openai/v1/models/tiny_lm"), 403, "tiny_lm")
    assert ok(post_json(d, EMBED, {"model": "tiny_embed", "input": "x"}))["object"] == "list"


def test_an_h2c_client_that_resets_mid_stream_cancels_the_model(start_demo):
    """curl over h2c gives up after a second of a 200-word stream: its stream is reset, the
    model stops."""
    d = start_demo("--lm-delay-ms", "100")
    res = subprocess.run(["curl", "-s", "-N", "--http2-prior-knowledge", "--max-time", "1",
                          "-H", "content-type: application/json", "--data-binary",
                          json.dumps(chat_body(max_tokens=200, stream=True)), d.url(CHAT)],
                         capture_output=True, timeout=20)
    assert res.returncode == 28, res  # curl's timeout: it left mid-stream
    assert res.stdout.startswith(b"data: ") and b"[DONE]" not in res.stdout
    deadline = time.monotonic() + 10
    while "tiny_lm: cancelled after" not in d.stderr_tail() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "tiny_lm: cancelled after" in d.stderr_tail()


def test_a_model_failing_mid_stream(demo):
    """The zoo's tokens model (decoupled, a word per response) fails at the word FAIL: streamed,
    the error is the last event (no [DONE]); whole, a 500."""
    body = {"model": "tokens", "prompt": "one two FAIL three", "stream": True}
    r = requests.post(demo.url(CMPL), json=body, timeout=10)
    assert r.status_code == 200
    events = r.content.split(b"\n\n")[:-1]
    assert [json.loads(e[6:])["choices"][0]["text"] for e in events[:2]] == ["one", "two"]
    assert events[2:] == [b'data: {"error":{"message":"asked to fail at byte 8","type":'
                          b'"server_error","param":null,"code":null}}']
    openai_error(post_json(demo, CMPL, dict(body, stream=False)), 500, "asked to fail at byte 8",
                 type_="server_error")


def test_queue_headers_apply(demo):
    """Inference-Priority / Inference-Timeout-Us, as on every protocol whose body cannot say."""
    r = requests.post(demo.url(CHAT), json=chat_body(max_tokens=1), timeout=10,
                      headers={"Inference-Priority": "high"})
    openai_error(r, 400, "header Inference-Priority must be a non-negative decimal")
    r = requests.post(demo.url(CHAT), json=chat_body(max_tokens=1), timeout=10,
                      headers={"Inference-Priority": "0", "traceparent":
                               "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"})
    assert r.status_code == 200


LLAMA3 = ("<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nbe brief<|eot_id|>"
          "<|start_header_id|>user<|end_header_id|>\n\nhi \"there\"<|eot_id|>"
          "<|start_header_id|>assistant<|end_header_id|>\n\n")
CHATML = ("<|im_start|>system\nbe brief<|im_end|>\n<|im_start|>user\nhi \"there\"<|im_end|>\n"
          "<|im_start|>assistant\n")


def test_a_models_own_chat_template_and_a_named_version(demo):
    msgs = [{"role": "system", "content": "be brief"},
            {"role": "user", "content": [{"type": "text", "text": "hi "},
                                         {"type": "text", "text": "\"there\""}]}]
    # chat_echo answers the prompt its template made: version 2 (the default) is Llama 3's
    body = ok(post_json(demo, CHAT, {"model": "chat_echo", "messages": msgs}))
    assert body["choices"][0]["message"]["content"] == LLAMA3
    assert body["model"] == "chat_echo"
    # "<name>/<version>" names version 1, ChatML; the answer repeats the model as asked
    body = ok(post_json(demo, CHAT, {"model": "chat_echo/1", "messages": msgs}))
    assert body["choices"][0]["message"]["content"] == CHATML
    assert body["model"] == "chat_echo/1"
    # streamed, the same text
    r = post_json(demo, CHAT, {"model": "chat_echo/1", "messages": msgs, "stream": True})
    assert r.status_code == 200
    text = "".join(json.loads(line[6:])["choices"][0]["delta"].get("content", "")
                   for line in r.text.split("\n\n") if line.startswith("data: {"))
    assert text == CHATML
    # the template refuses a conversation it cannot render: the client's 400 naming messages
    bad = msgs + [{"role": "assistant", "content": "ok"}]
    openai_error(post_json(demo, CHAT, {"model": "chat_echo", "messages": bad}), 400,
                 "model 'chat_echo' cannot take these messages: the last message must be "
                 "the user's", param="messages")
    # an unknown version of a known model: 404 naming it; an unknown name with a '/': the whole
    openai_error(post_json(demo, CHAT, {"model": "chat_echo/9", "messages": msgs}), 404,
                 "chat_echo", code="model_not_found")
    openai_error(post_json(demo, CHAT, {"model": "org/nope", "messages": msgs}), 404,
                 "org/nope", code="model_not_found")
    # completions are the client's own prompt: no template
    body = ok(post_json(demo, CMPL, {"model": "chat_echo/1", "prompt": "raw"}))
    assert body["choices"][0]["text"] == "raw"


def test_models_say_when_they_were_registered(start_demo):
    before = int(time.time())
    d = start_demo()
    after = int(time.time())
    listed = {m["id"]: m for m in ok(get(d, "/openai/v1/models"))["data"]}
    for m in (listed["tiny_lm"], ok(get(d, "/openai/v1/models/chat_echo"))):
        assert before - 1 <= m["created"] <= after + 1, m


def test_the_model_stage_judges_a_named_version(start_demo):
    d = start_demo("--forbid-model", "chat_echo")
    msgs = [{"role": "user", "content": "hi"}]
    openai_error(post_json(d, CHAT, {"model": "chat_echo/1", "messages": msgs}), 403, "chat_echo")
