"""The host's own HTTP routes (isv_server_add_route, grps's customized HTTP) against the demo's:
POST /custom/echo (the body uppercased, inline) and POST /custom/sse?n=N (Server-Sent Events on
the worker pool), over HTTP/1.1 with requests and raw sockets, and h2c with curl."""
import json
import re
import socket
import subprocess
import time

import pytest
import requests

from isvtest import TIMEOUT


def post(demo, path, data=b"", **kw):
    return requests.post(demo.base + path, data=data, timeout=TIMEOUT, **kw)


def test_echo_uppercases_the_body(demo):
    r = post(demo, "/custom/echo", b"hello, grps \xc3\xa9")
    assert r.status_code == 200 and r.headers["Content-Type"] == "text/plain"
    assert r.content == b"HELLO, GRPS \xc3\xa9"


def test_echo_under_the_prefix_and_large_body(demo):
    body = b"abc" * 200000
    r = post(demo, "/custom/echo/anything/below", body)
    assert r.status_code == 200 and r.content == body.upper()


def test_other_methods_are_405_with_allow(demo):
    r = requests.get(demo.base + "/custom/echo", timeout=TIMEOUT)
    assert r.status_code == 405 and r.headers["Allow"] == "POST"


def events(text):
    assert text.endswith("\n\n"), text
    return [e for e in text.split("\n\n") if e]


@pytest.mark.parametrize("n", [0, 1, 5, 300])
def test_sse_streams_n_events_then_done(demo, n):
    r = post(demo, "/custom/sse?n=%d" % n, stream=True)
    assert r.status_code == 200
    assert r.headers["Content-Type"] == "text/event-stream"
    assert r.headers["Cache-Control"] == "no-cache"
    assert r.headers.get("Transfer-Encoding") == "chunked"
    text = b"".join(r.raw.read_chunked()).decode()
    assert events(text) == ["data: %d" % i for i in range(n)] + ["data: [DONE]"]


def test_sse_events_arrive_as_they_are_written(demo):
    """The first event is read while the handler is still running (the others 100 ms apart).
    /metrics, on whichever loop, counts the route on every loop."""
    r = post(demo, "/custom/sse?n=5&delay_ms=100", stream=True)
    chunks = r.raw.read_chunked()
    assert next(chunks) == b"data: 0\n\n"
    assert _inflight(demo) == 1  # still writing: the event was not held back to the end
    rest = b"".join(chunks)
    assert rest.count(b"data: ") == 5  # 1..4 and [DONE]
    r.close()


def test_sse_handler_answers_its_own_errors(demo):
    r = post(demo, "/custom/sse")
    assert r.status_code == 400 and b"query parameter n" in r.content


def test_sse_over_h2c_with_curl(demo):
    out = subprocess.run(["curl", "-s", "-N", "--http2-prior-knowledge", "-X", "POST", "-D", "-",
                          demo.base + "/custom/sse?n=3"],
                         capture_output=True, timeout=TIMEOUT * 2, check=True).stdout.decode()
    head, _, body = out.partition("\r\n\r\n")
    assert head.startswith("HTTP/2 200") and "content-type: text/event-stream" in head
    assert events(body) == ["data: 0", "data: 1", "data: 2", "data: [DONE]"]


def _inflight(demo):
    text = requests.get(demo.base + "/metrics", timeout=TIMEOUT).text
    m = re.search(r'isv_inflight_requests\{model="@route POST /custom/sse",version="1"\} (\d+)',
                  text)
    assert m, "the route's model is in /metrics"
    return int(m.group(1))


def test_client_disconnect_mid_stream_stops_the_handler(start_demo):
    d = start_demo()
    s = socket.create_connection((d.host, d.port), timeout=TIMEOUT)
    s.sendall(b"POST /custom/sse?n=100000&delay_ms=20 HTTP/1.1\r\nHost: x\r\n"
              b"Content-Length: 0\r\n\r\n")
    got = b""
    while got.count(b"data: ") < 3:
        got += s.recv(4096)
    assert b"200 OK" in got and _inflight(d) == 1
    s.close()  # 100000 events of 20 ms: the handler runs ~30 min unless the close stops it
    deadline = time.time() + 3
    while _inflight(d) and time.time() < deadline:
        time.sleep(0.05)
    assert _inflight(d) == 0


def test_route_models_are_invisible_to_clients(demo):
    name = "@route POST /custom/echo"
    r = requests.get(demo.base + "/v2/models/" + requests.utils.quote(name, safe=""),
                     timeout=TIMEOUT)
    assert r.status_code == 404
    meta = requests.get(demo.base + "/grps/v1/metadata/server", timeout=TIMEOUT).json()
    assert "@route" not in meta["str_data"]
    stats = requests.get(demo.base + "/v2/models/stats", timeout=TIMEOUT).json()
    assert all(not m["name"].startswith("@") for m in stats["model_stats"])
    r = requests.post(demo.base + "/grps/v1/infer/predict", data=json.dumps(
        {"model": name, "str_data": "x"}), headers={"Content-Type": "application/json"},
        timeout=TIMEOUT)
    assert r.status_code == 404
