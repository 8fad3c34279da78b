"""The OpenAI-compatible endpoints with OpenAI's official Node SDK (the `openai` npm package),
against the demo's tiny_lm and tiny_embed: models, chat and completions whole and streamed
(the SDK's stream iterator sees every chunk and ends), include_usage, embeddings as floats and
base64, the errors the SDK raises, its API key as the authorizer's bearer token, and a client
that leaves mid-stream cancelling the model.

The SDK is installed once with npm into a cache directory outside the repository
($INFERSERVE_NPM_CACHE, default ~/.cache/inferserve-tests/openai-node); without node or npm,
or offline with nothing cached, these cases are skipped and say why."""
import base64
import json
import math
import os
import shutil
import struct
import subprocess
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "openai_sdk.cjs")
SDK_VERSION = "4"  # openai-node 4.x: Node 18 (Debian 12's) and later
TOKEN = "sdk-test-token"


@pytest.fixture(scope="session")
def sdk_modules():
    """The node_modules directory that holds the `openai` package (installed on first use)."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("node and npm are needed for OpenAI's Node SDK (Debian: nodejs npm)")
    cache = os.environ.get("INFERSERVE_NPM_CACHE") or os.path.join(
        os.path.expanduser("~"), ".cache", "inferserve-tests", "openai-node")
    modules = os.path.join(cache, "node_modules")
    if not os.path.isfile(os.path.join(modules, "openai", "package.json")):
        os.makedirs(cache, exist_ok=True)
        try:
            res = subprocess.run([npm, "install", "--prefix", cache, "--no-audit", "--no-fund",
                                  "--silent", "openai@" + SDK_VERSION],
                                 capture_output=True, timeout=300)
        except subprocess.TimeoutExpired:
            pytest.skip("npm install openai@%s took over 300 s (offline?)" % SDK_VERSION)
        if res.returncode != 0 or not os.path.isdir(os.path.join(modules, "openai")):
            pytest.skip("npm install openai@%s failed (offline?): %s" % (
                SDK_VERSION, res.stderr.decode("utf-8", "replace")[-400:]))
    return modules


def run_sdk(modules, demo, scenario, api_key="unused", timeout=60, base="/openai/v1"):
    env = dict(os.environ, NODE_PATH=modules)
    res = subprocess.run(["node", SCRIPT, demo.url(base), api_key, scenario],
                         capture_output=True, timeout=timeout, env=env)
    assert res.returncode == 0, res.stderr.decode("utf-8", "replace")
    out = json.loads(res.stdout)
    assert "ok" in out, "the SDK threw: %r" % out.get("error")
    return out["ok"]


def test_models_list_and_retrieve(sdk_modules, demo):
    r = run_sdk(sdk_modules, demo, "models")
    assert "tiny_lm" in r["ids"] and "tiny_embed" in r["ids"] and "simple" in r["ids"]
    assert r["ids"] == sorted(r["ids"])
    created = r["one"].pop("created")
    assert r["one"] == {"id": "tiny_lm", "object": "model", "owned_by": "libinferserve"}
    assert 0 < created <= time.time()  # the version's registration, Unix seconds


def test_chat_completion_whole_and_streamed_agree(sdk_modules, demo):
    whole = run_sdk(sdk_modules, demo, "chat")
    assert whole["object"] == "chat.completion"
    assert whole["id"].startswith("chatcmpl-")
    assert whole["model"] == "tiny_lm"
    choice = whole["choices"][0]
    assert choice["message"]["role"] == "assistant"
    text = choice["message"]["content"]
    assert text and choice["finish_reason"] in ("stop", "length")
    assert whole["usage"]["completion_tokens"] == len(text.split())
    assert whole["usage"]["total_tokens"] == (whole["usage"]["prompt_tokens"] +
                                              whole["usage"]["completion_tokens"])

    s = run_sdk(sdk_modules, demo, "chat_stream")
    chunks = s["chunks"]
    assert s["ended"]
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    assert len({c["id"] for c in chunks}) == 1
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    content = "".join(c["choices"][0]["delta"].get("content") or ""
                      for c in chunks if c["choices"])
    assert content == text  # the same seed, the same words
    finish = [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]]
    assert finish[-1] == choice["finish_reason"] and not any(finish[:-1])
    assert chunks[-1]["choices"] == []  # include_usage: the last chunk, usage only
    assert chunks[-1]["usage"] == whole["usage"]
    assert all(c["usage"] is None for c in chunks[:-1])


def test_completions_whole_and_streamed(sdk_modules, demo):
    whole = run_sdk(sdk_modules, demo, "completion")
    assert whole["object"] == "text_completion"
    assert whole["id"].startswith("cmpl-")
    s = run_sdk(sdk_modules, demo, "completion_stream")
    assert s["ended"]
    assert all(c["object"] == "text_completion" for c in s["chunks"])
    assert "".join(c["choices"][0]["text"] for c in s["chunks"]) == whole["choices"][0]["text"]
    assert s["chunks"][-1]["choices"][0]["finish_reason"] == whole["choices"][0]["finish_reason"]


def test_embeddings_float_and_base64(sdk_modules, demo):
    r = run_sdk(sdk_modules, demo, "embeddings")
    floats = r["floats"]
    assert floats["object"] == "list" and floats["model"] == "tiny_embed"
    rows = [d["embedding"] for d in floats["data"]]
    assert [d["index"] for d in floats["data"]] == [0, 1, 2]
    assert all(len(v) == 64 for v in rows)
    for v in rows:
        assert abs(math.sqrt(sum(x * x for x in v)) - 1.0) < 1e-5
    near = sum(a * b for a, b in zip(rows[0], rows[1]))
    far = sum(a * b for a, b in zip(rows[0], rows[2]))
    assert near > far  # "hello world" is closer to "hello world!" than to another sentence
    # the SDK's own base64 decoding gives the same FP32 values
    f32 = [struct.unpack("<64f", struct.pack("<64f", *v)) for v in rows]
    assert [tuple(d["embedding"]) for d in r["decoded"]["data"]] == f32
    for d, v in zip(r["raw"]["data"], f32):
        assert struct.unpack("<64f", base64.b64decode(d["embedding"])) == v


def test_errors_as_the_sdk_raises_them(sdk_modules, demo):
    r = run_sdk(sdk_modules, demo, "errors")
    assert r["unknown_model"]["thrown"] == "NotFoundError"
    assert r["unknown_model"]["status"] == 404
    assert r["unknown_model"]["code"] == "model_not_found"
    assert r["n2"]["thrown"] == "BadRequestError"
    assert r["n2"]["status"] == 400
    assert r["n2"]["param"] == "n"
    assert r["n2"]["type"] == "invalid_request_error"
    assert r["stream_unknown_model"]["thrown"] == "NotFoundError"
    # an error event after two chunks: the SDK's iterator yields them, then throws it
    assert r["mid_stream"]["seen"] == ["one", "two"]
    assert r["mid_stream"]["thrown"] == "APIError"
    assert "asked to fail at byte 8" in r["mid_stream"]["message"]


def test_the_api_key_is_the_authorizers_bearer_token(sdk_modules, start_demo, tmp_path):
    token = tmp_path / "token"
    token.write_text(TOKEN + "\n")
    d = start_demo("--bearer-token", str(token))
    assert run_sdk(sdk_modules, d, "completion", api_key=TOKEN)["object"] == "text_completion"
    env = dict(os.environ, NODE_PATH=sdk_modules)
    res = subprocess.run(["node", SCRIPT, d.url("/openai/v1"), "wrong", "completion"],
                         capture_output=True, timeout=60, env=env)
    err = json.loads(res.stdout)["error"]
    assert err["thrown"] == "AuthenticationError" and err["status"] == 401
    assert err["code"] == "invalid_api_key"


def test_a_client_that_leaves_mid_stream_cancels_the_model(sdk_modules, start_demo):
    d = start_demo("--lm-delay-ms", "100")
    r = run_sdk(sdk_modules, d, "abort")
    assert r["chunks"] == 3
    deadline = time.monotonic() + 10
    while "tiny_lm: cancelled after" not in d.stderr_tail() and time.monotonic() < deadline:
        time.sleep(0.05)
    tail = d.stderr_tail()
    assert "tiny_lm: cancelled after" in tail, tail
    words = int(tail.split("tiny_lm: cancelled after ")[1].split()[0])
    assert words < 50  # stopped long before its 200 words


def test_the_sdk_under_v1(sdk_modules, start_demo):
    """base_url http://host:port/v1, as for OpenAI's own service (TF Serving off)."""
    d = start_demo("--disable-protocol", "tfserving", "--openai-prefix", "/v1")
    assert "tiny_lm" in run_sdk(sdk_modules, d, "models", base="/v1")["ids"]
    s = run_sdk(sdk_modules, d, "chat_stream", base="/v1")
    assert s["ended"] and s["chunks"][-1]["usage"]["completion_tokens"] >= 1
