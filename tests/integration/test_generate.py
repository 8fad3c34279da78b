"""Triton's generate extension over REST with requests and curl: the flat request object
(inputs by name, other keys and "parameters" as request parameters), the flat response object,
errors as {"error": ...} with their status, a decoupled model refused on /generate and streamed
by /generate_stream as Server-Sent Events (HTTP/1.1 and h2c); and REST clients that go away —
hang up, half-close, reset their h2c stream — cancelling their request."""
import concurrent.futures
import json
import socket
import time

import pytest
import requests

import h2raw
from grpc_stubs import curl_h2
from isvtest import assert_error, get, http_request, ok_json, post_json


def test_generate_maps_keys_to_inputs_and_outputs(demo):
    body = ok_json(post_json(demo, "/v2/models/half_plus_three/generate", {"x": [1, 2, 3]}))
    assert body == {"model_name": "half_plus_three", "model_version": "123", "y": [3.5, 4.0, 4.5]}
    body = ok_json(post_json(demo, "/v2/models/half_plus_three/versions/123/generate",
                             {"x": 4, "parameters": {"temperature": 0.1}}))
    assert body["y"] == 5.0  # one element: a scalar, not a list


def test_generate_on_a_text_model_with_parameters(demo):
    ins = {"INPUT0": [str(i) for i in range(16)], "INPUT1": ["1"] * 16, "stream": False,
           "parameters": {"max_tokens": 8}}
    body = ok_json(post_json(demo, "/v2/models/simple_string/generate", ins))
    assert body["OUTPUT0"] == [str(i + 1) for i in range(16)]
    assert body["OUTPUT1"] == [str(i - 1) for i in range(16)]


def test_generate_errors(demo):
    assert_error(post_json(demo, "/v2/models/nope/generate", {"x": 1}), 404,
                 "Request for unknown model: 'nope' is not found")
    assert_error(post_json(demo, "/v2/models/half_plus_three/generate", {"x": [[1], [2]]}), 400,
                 "'x' must be a string, a number, a bool or a flat array of them")
    assert_error(post_json(demo, "/v2/models/half_plus_three/generate", "{\"x\": [1,"), 400,
                 "malformed JSON")
    assert_error(post_json(demo, "/v2/models/half_plus_three/generate", {"y": 1}), 400,
                 "missing input 'x' for model 'half_plus_three'")
    assert_error(post_json(demo, "/v2/models/tokens/generate", {"text_input": "a b"}), 400,
                 "model 'tokens' is decoupled")


# ---- generate_stream (Server-Sent Events) -------------------------------------------------

def sse_events(resp):
    """The JSON of each "data:" event, as they arrive."""
    for line in resp.iter_lines():
        if line.startswith(b"data: "):
            yield json.loads(line[6:])


def test_generate_stream_sends_each_response_as_it_comes(demo):
    """Three words 150 ms apart: the first event is read while the request is still in flight
    on the server (it was not buffered to the end)."""
    with requests.post(demo.url("/v2/models/tokens/generate_stream"), stream=True, timeout=10,
                       json={"text_input": "hello big world", "delay_ms": 150}) as r:
        assert r.status_code == 200
        assert r.headers["Content-Type"] == "text/event-stream; charset=utf-8"
        events = sse_events(r)
        first = next(events)
        assert first == {"model_name": "tokens", "model_version": "1", "text_output": "hello"}
        assert 'isv_inflight_requests{model="tokens",version="1"} 1' in \
            get(demo, "/metrics").text.splitlines()
        assert [e["text_output"] for e in events] == ["big", "world"]


def test_generate_stream_of_a_model_with_one_answer(demo):
    with requests.post(demo.url("/v2/models/half_plus_three/generate_stream"), stream=True,
                       timeout=10, json={"x": [2]}) as r:
        assert r.status_code == 200
        assert list(sse_events(r)) == [{"model_name": "half_plus_three", "model_version": "123",
                                        "y": 4.0}]


def test_generate_stream_errors_before_and_after_the_first_event(demo):
    r = post_json(demo, "/v2/models/tokens/generate_stream", {"text_input": 5})
    assert_error(r, 400, "expected a string for BYTES")  # before: a JSON error, its status
    with requests.post(demo.url("/v2/models/tokens/generate_stream"), stream=True, timeout=10,
                       json={"text_input": "one two FAIL three"}) as r:
        assert r.status_code == 200  # after: an error event ends the stream
        events = list(sse_events(r))
    assert [e.get("text_output") for e in events[:2]] == ["one", "two"]
    assert events[2:] == [{"error": "asked to fail at byte 8"}]


def test_generate_stream_over_h2c(demo):
    res = curl_h2(demo, "/v2/models/tokens/generate_stream",
                  data=json.dumps({"text_input": "a b"}).encode(),
                  headers=("content-type: application/json",))
    assert res.status == 200, res
    assert res.body.count(b"data: ") == 2
    assert b'"text_output":"b"' in res.body


# ---- a REST client that goes away cancels its request --------------------------------------

def executions(demo, model):
    for line in get(demo, "/metrics").text.splitlines():
        if line.startswith('isv_executions_total{model="%s",' % model):
            return int(line.split()[-1])
    return 0


def wait_line(demo, line):
    for _ in range(1000):
        if line in get(demo, "/metrics").text.splitlines():
            return
        time.sleep(0.005)
    raise AssertionError("/metrics never showed %r" % line)


def slow_body(ms):
    return json.dumps({"inputs": [{"name": "INPUT0", "shape": [1], "datatype": "INT32",
                                   "data": [ms]}]}).encode()


@pytest.fixture
def demo1(start_demo):
    """One loop: queue1's one instance is each loop's own, and these cases need the second call
    to wait behind the first (else it would not tell whether the first stopped early)."""
    return start_demo("--threads", "1")


def test_an_http1_client_that_hangs_up_cancels_its_request(demo1):
    """queue1 (one instance) runs a 3 s call whose client hangs up after it started; the model
    stops early, so a second call is answered long before those 3 s are over. A third client
    that hangs up while still waiting behind a busy instance never runs at all."""
    s = socket.create_connection((demo1.host, demo1.port))
    s.sendall(http_request("POST", "/v2/models/queue1/infer", slow_body(3000)))
    wait_line(demo1, 'isv_inflight_requests{model="queue1",version="1"} 1')
    s.close()
    t0 = time.monotonic()
    r = post_json(demo1, "/v2/models/queue1/infer", slow_body(10))
    assert r.status_code == 200
    assert time.monotonic() - t0 < 2.0, "the abandoned 3 s call ran to its end"
    # waiting, then gone
    before = executions(demo1, "queue1")
    with concurrent.futures.ThreadPoolExecutor(1) as ex:
        busy = ex.submit(post_json, demo1, "/v2/models/queue1/infer", slow_body(400))
        wait_line(demo1, 'isv_inflight_requests{model="queue1",version="1"} 1')
        w = socket.create_connection((demo1.host, demo1.port))
        w.sendall(http_request("POST", "/v2/models/queue1/infer", slow_body(10)))
        wait_line(demo1, 'isv_queued_requests{model="queue1",version="1"} 1')
        w.shutdown(socket.SHUT_WR)  # a half-close is a client that has gone (as nginx takes it)
        wait_line(demo1, 'isv_queued_requests{model="queue1",version="1"} 0')
        w.close()
        assert busy.result().status_code == 200
    assert executions(demo1, "queue1") == before + 1  # only the busy one ran


def test_an_h2c_stream_reset_cancels_its_rest_request(demo1):
    with h2raw.H2Conn(demo1) as c:
        sid = c.request(h2raw.rest_headers(demo1, "POST", "/v2/models/queue1/infer",
                                           [("content-type", "application/json")]),
                        body=slow_body(3000), end_stream=True)
        wait_line(demo1, 'isv_inflight_requests{model="queue1",version="1"} 1')
        c.rst(sid)
        t0 = time.monotonic()
        r = post_json(demo1, "/v2/models/queue1/infer", slow_body(10))
        assert r.status_code == 200
        assert time.monotonic() - t0 < 2.0, "the reset 3 s call ran to its end"
