"""HTTP/1.1 behaviour over raw sockets and curl: keep-alive, pipelining, chunked request
bodies, Expect: 100-continue, Connection: close, HTTP/1.0, concurrency with the slow model."""
import json
import os
import subprocess
import tempfile
import threading
import time

import pytest
import requests

from isvtest import (TIMEOUT, Closed, RawConn, flatten, http_request, ok_json, outputs_by_name,
                     show, simple_body, slow_body, tensor)

INFER = "/v2/models/simple/infer"


def _body(req_id=None, rows=1):
    return json.dumps(simple_body(rows=rows, req_id=req_id)).encode()


def _check_simple(resp, req_id=None, rows=1):
    assert resp.status == 200, resp
    body = resp.json()
    if req_id is not None:
        assert body.get("id") == req_id, resp
    out = outputs_by_name(body)["OUTPUT0"]
    assert flatten(out["data"])[:16] == [i + 1 for i in range(16)], resp
    assert out["shape"] == [rows, 16], resp
    return body


# --- keep-alive ---------------------------------------------------------------------------
def test_keep_alive_two_requests_one_socket(demo):
    with RawConn(demo) as c:
        c.send(http_request("GET", "/v2/health/live"))
        r1 = c.read_response()
        assert r1.status == 200 and r1.json() == {"live": True}, r1
        c.send(http_request("GET", "/v2/health/ready"))
        r2 = c.read_response()
        assert r2.status == 200 and r2.json() == {"ready": True}, r2
        c.send(http_request("POST", INFER, _body("k3")))
        _check_simple(c.read_response(), "k3")
        c.send(http_request("GET", "/v2/models/simple"))
        r4 = c.read_response()
        assert r4.status == 200 and r4.json()["name"] == "simple", r4


def test_keep_alive_after_error_response(demo):
    with RawConn(demo) as c:
        c.send(http_request("GET", "/v2/models/no_such_model"))
        r1 = c.read_response()
        assert r1.status == 404, r1
        c.send(http_request("POST", INFER, b'{"inputs": []}'))
        r2 = c.read_response()
        assert r2.status == 400, r2
        c.send(http_request("POST", INFER, _body("after-errors")))
        _check_simple(c.read_response(), "after-errors")


def test_response_has_framing(demo):
    with RawConn(demo) as c:
        c.send(http_request("GET", "/v2/health/live"))
        r = c.read_response()
        assert r.version == "HTTP/1.1", r
        assert r.header("content-length") is not None or \
            "chunked" in (r.header("transfer-encoding") or ""), r
        assert "application/json" in (r.header("content-type") or ""), r


# --- pipelining ---------------------------------------------------------------------------
def test_pipelining_three_requests_in_order(demo):
    # The first is slow (200 ms): the two quick ones behind it must still answer in order.
    slow = json.dumps(slow_body(demo, 200, req_id="p1")).encode()
    data = (http_request("POST", "/v2/models/slow/infer", slow)
            + http_request("POST", INFER, _body("p2"))
            + http_request("GET", "/v2/health/live"))
    with RawConn(demo) as c:
        c.send(data)
        r1 = c.read_response()
        assert r1.status == 200 and r1.json().get("id") == "p1", r1
        assert flatten(outputs_by_name(r1.json())["OUTPUT0"]["data"]) == [200], r1
        _check_simple(c.read_response(), "p2")
        r3 = c.read_response()
        assert r3.status == 200 and r3.json() == {"live": True}, r3


def test_pipelining_many(demo):
    n = 20
    data = b"".join(http_request("POST", INFER, _body("m%d" % i)) for i in range(n))
    with RawConn(demo) as c:
        c.send(data)
        for i in range(n):
            _check_simple(c.read_response(), "m%d" % i)
        # the connection is still usable
        c.send(http_request("GET", "/v2/health/live"))
        assert c.read_response().status == 200


def test_pipelined_error_does_not_desync(demo):
    data = (http_request("POST", INFER, b'{"broken')
            + http_request("GET", "/v2/models/nope")
            + http_request("POST", INFER, _body("x3")))
    with RawConn(demo) as c:
        c.send(data)
        r1 = c.read_response()
        assert r1.status == 400, r1
        r2 = c.read_response()
        assert r2.status == 404, r2
        _check_simple(c.read_response(), "x3")


def test_request_split_into_tiny_segments(demo):
    data = http_request("POST", INFER, _body("tiny"))
    with RawConn(demo) as c:
        for i in range(0, len(data), 7):
            c.send(data[i:i + 7])
        _check_simple(c.read_response(), "tiny")


def test_header_names_case_insensitive(demo):
    body = _body("case")
    raw = ("POST %s HTTP/1.1\r\nhOsT: x\r\ncontent-LENGTH: %d\r\nCONTENT-TYPE: application/json"
           "\r\n\r\n" % (INFER, len(body))).encode() + body
    with RawConn(demo) as c:
        c.send(raw)
        _check_simple(c.read_response(), "case")


# --- chunked request bodies ---------------------------------------------------------------
def _chunked(body, sizes, ext=False, trailer=False):
    out = b""
    i = 0
    k = 0
    while i < len(body):
        n = sizes[k % len(sizes)]
        k += 1
        piece = body[i:i + n]
        i += n
        out += ("%x%s\r\n" % (len(piece), ";name=value" if ext else "")).encode() + piece + b"\r\n"
    out += b"0\r\n"
    if trailer:
        out += b"X-Trailer: yes\r\n"
    return out + b"\r\n"


def test_chunked_request_body(demo):
    body = _body("chunked", rows=3)
    head = ("POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            "Transfer-Encoding: chunked\r\n\r\n" % INFER).encode()
    payload = _chunked(body, [1, 10, 100, 3])
    with RawConn(demo) as c:
        c.send(head)
        for i in range(0, len(payload), 97):
            c.send(payload[i:i + 97])
            time.sleep(0.002)
        _check_simple(c.read_response(), "chunked", rows=3)
        # and the connection carries on
        c.send(http_request("GET", "/v2/health/live"))
        assert c.read_response().status == 200


def test_chunked_with_extensions_and_trailer(demo):
    body = _body("ext")
    raw = ("POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
           "Transfer-Encoding: chunked\r\n\r\n" % INFER).encode() + \
        _chunked(body, [50], ext=True, trailer=True)
    with RawConn(demo) as c:
        c.send(raw + http_request("POST", INFER, _body("next")))
        _check_simple(c.read_response(), "ext")
        _check_simple(c.read_response(), "next")


def test_chunked_via_requests_generator(demo):
    body = _body("gen")

    def gen():
        for i in range(0, len(body), 64):
            yield body[i:i + 64]

    r = requests.post(demo.url(INFER), data=gen(), headers={"Content-Type": "application/json"},
                      timeout=TIMEOUT)
    assert r.request.headers.get("Transfer-Encoding") == "chunked"
    body = ok_json(r)
    assert body["id"] == "gen", show(r)


# --- Expect: 100-continue -----------------------------------------------------------------
def test_expect_100_continue_raw(demo):
    body = _body("expect")
    head = ("POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            "Content-Length: %d\r\nExpect: 100-continue\r\n\r\n" % (INFER, len(body))).encode()
    with RawConn(demo) as c:
        c.send(head)
        interim = c.read_response(timeout=2.0)
        assert interim.status == 100, interim
        assert interim.version == "HTTP/1.1", interim
        c.send(body)
        _check_simple(c.read_response(), "expect")


def test_expect_100_continue_chunked_raw(demo):
    body = _body("expect-chunked")
    head = ("POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            "Transfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n" % INFER).encode()
    with RawConn(demo) as c:
        c.send(head)
        assert c.read_response(timeout=2.0).status == 100
        c.send(_chunked(body, [33]))
        _check_simple(c.read_response(), "expect-chunked")


def test_no_100_continue_for_http10(demo):
    body = _body("e10")
    head = ("POST %s HTTP/1.0\r\nContent-Type: application/json\r\n"
            "Content-Length: %d\r\nExpect: 100-continue\r\n\r\n" % (INFER, len(body))).encode()
    with RawConn(demo) as c:
        c.send(head + body)
        r = c.read_response(timeout=2.0)
        assert r.status == 200, "an HTTP/1.0 client must not get 100 Continue: %r" % r


def _curl(*args, timeout=15):
    return subprocess.run(["curl", "-sS", "-v", "--max-time", "10"] + list(args),
                          capture_output=True, timeout=timeout)


def test_curl_large_body_with_expect(demo):
    n = 60000
    vals = [(i * 7919) % 2000003 - 1000000 for i in range(n)]
    body = json.dumps({"id": "big", "inputs": [tensor("INPUT0", "INT32", [1, n], vals)]})
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        f.write(body)
        path = f.name
    try:
        p = _curl("-H", "Content-Type: application/json", "-H", "Expect: 100-continue",
                  "--data-binary", "@" + path, demo.url("/v2/models/identity_int32/infer"))
    finally:
        os.unlink(path)
    err = p.stderr.decode("utf-8", "replace")
    assert p.returncode == 0, err[-3000:]
    assert "HTTP/1.1 100 Continue" in err, "no 100 Continue seen by curl:\n" + err[-3000:]
    assert "< HTTP/1.1 200" in err, err[-3000:]
    out = json.loads(p.stdout)
    o = outputs_by_name(out)["OUTPUT0"]
    assert o["shape"] == [1, n] and flatten(o["data"]) == vals


def test_curl_chunked_upload(demo):
    body = _body("curl-chunked", rows=2)
    with tempfile.NamedTemporaryFile("wb", delete=False) as f:
        f.write(body)
        path = f.name
    try:
        p = _curl("-H", "Content-Type: application/json", "-H", "Transfer-Encoding: chunked",
                  "--data-binary", "@" + path, demo.url(INFER))
    finally:
        os.unlink(path)
    err = p.stderr.decode("utf-8", "replace")
    assert p.returncode == 0, err[-3000:]
    assert "Transfer-Encoding: chunked" in err, err[-3000:]
    assert json.loads(p.stdout)["id"] == "curl-chunked", p.stdout[:2000]


def test_curl_http10(demo):
    p = _curl("--http1.0", demo.url("/v2/health/live"))
    err = p.stderr.decode("utf-8", "replace")
    assert p.returncode == 0, err
    assert json.loads(p.stdout) == {"live": True}, p.stdout


def test_curl_reuses_connection(demo):
    p = _curl(demo.url("/v2/health/live"), demo.url("/v2/health/ready"))
    err = p.stderr.decode("utf-8", "replace")
    assert p.returncode == 0, err
    assert "Re-using existing connection" in err or "Reusing existing connection" in err, err
    assert b"".join(p.stdout.split()) == b'{"live":true}{"ready":true}', p.stdout


# --- Connection: close and HTTP/1.0 -------------------------------------------------------
def test_connection_close_closes_after_response(demo):
    with RawConn(demo) as c:
        c.send(http_request("POST", INFER, _body("cc"), headers={"Connection": "close"}))
        _check_simple(c.read_response(), "cc")
        assert c.wait_closed(2.0), "server kept the connection open after Connection: close"
        assert c.buf == b"", c.buf


def test_connection_close_response_says_close(demo):
    with RawConn(demo) as c:
        c.send(http_request("GET", "/v2/health/live", headers={"Connection": "close"}))
        r = c.read_response()
        assert r.status == 200, r
        assert "close" in (r.header("connection") or "").lower(), r


def test_requests_after_connection_close_are_ignored(demo):
    data = (http_request("GET", "/v2/health/live", headers={"Connection": "close"})
            + http_request("GET", "/v2/health/ready"))
    with RawConn(demo) as c:
        c.send(data)
        r = c.read_response()
        assert r.status == 200 and r.json() == {"live": True}, r
        assert c.wait_closed(2.0), "server did not close"
        assert c.buf == b"", "server answered a request after Connection: close: %r" % c.buf


@pytest.mark.parametrize("with_body", [False, True])
def test_http10_response_then_close(demo, with_body):
    with RawConn(demo) as c:
        if with_body:
            body = _body("h10")
            c.send(("POST %s HTTP/1.0\r\nContent-Type: application/json\r\nContent-Length: %d"
                    "\r\n\r\n" % (INFER, len(body))).encode() + body)
        else:
            c.send(b"GET /v2/health/live HTTP/1.0\r\n\r\n")
        r = c.read_response()
        assert r.status == 200, r
        if with_body:
            _check_simple(r, "h10")
        else:
            assert r.json() == {"live": True}, r
        assert c.wait_closed(2.0), "server kept an HTTP/1.0 connection open"


# --- malformed HTTP -----------------------------------------------------------------------
@pytest.mark.parametrize("raw", [
    b"GARBAGE\r\n\r\n",
    b"GET /v2/health/live HTTP/9.9\r\nHost: x\r\n\r\n",
    b"POST /v2/models/simple/infer HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n",
    b"POST /v2/models/simple/infer HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nZZ\r\n",
    b"GET /v2/health/live HTTP/1.1\r\nBad Header Line\r\n\r\n",
])
def test_malformed_http_400_and_close(demo, raw):
    with RawConn(demo) as c:
        c.send(raw)
        try:
            r = c.read_response(timeout=3.0)
        except Closed:
            r = None  # closing without an answer is acceptable for garbage
        if r is not None:
            assert 400 <= r.status < 500 or r.status == 505, r
        assert c.wait_closed(2.0), "server kept a broken connection open"
    # the server is unharmed
    assert requests.get(demo.url("/v2/health/live"), timeout=TIMEOUT).status_code == 200


# --- concurrency with the slow model ------------------------------------------------------
def test_slow_request_does_not_block_other_connections(demo):
    slow = slow_body(demo, 300, req_id="slow")
    times = {}
    errors = []

    def run_slow():
        try:
            t0 = time.monotonic()
            r = requests.post(demo.url("/v2/models/slow/infer"), data=json.dumps(slow),
                              headers={"Content-Type": "application/json"}, timeout=TIMEOUT)
            times["slow"] = time.monotonic()
            times["slow_elapsed"] = times["slow"] - t0
            assert r.status_code == 200, show(r)
            assert flatten(outputs_by_name(r.json())["OUTPUT0"]["data"]) == [300], show(r)
        except Exception as e:  # reported below
            errors.append(e)

    t = threading.Thread(target=run_slow)
    t.start()
    time.sleep(0.05)
    r = requests.post(demo.url(INFER), data=_body("fast"),
                      headers={"Content-Type": "application/json"}, timeout=TIMEOUT)
    times["fast"] = time.monotonic()
    t.join(TIMEOUT)
    assert not errors, errors
    assert r.status_code == 200, show(r)
    assert times["slow_elapsed"] >= 0.29, times
    assert times["fast"] < times["slow"], \
        "the quick request finished after the slow one: %r" % times


def test_two_slow_requests_run_in_parallel(demo):
    body = json.dumps(slow_body(demo, 300))
    results = []

    def run():
        r = requests.post(demo.url("/v2/models/slow/infer"), data=body,
                          headers={"Content-Type": "application/json"}, timeout=TIMEOUT)
        results.append(r.status_code)

    t0 = time.monotonic()
    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(TIMEOUT)
    elapsed = time.monotonic() - t0
    assert results == [200, 200], results
    assert elapsed < 0.55, "two 300 ms pool requests took %.3f s (serialised?)" % elapsed


# --- framing edge cases (RFC 9112) --------------------------------------------------------
def test_http10_response_not_chunked(demo):
    with RawConn(demo) as c:
        c.send(b"GET /v2/models/simple HTTP/1.0\r\n\r\n")
        r = c.read_response()
        assert r.status == 200, r
        assert "chunked" not in (r.header("transfer-encoding") or "").lower(), r
        assert r.json()["name"] == "simple", r


def test_http10_keep_alive_is_consistent(demo):
    # An HTTP/1.0 client asking for keep-alive: the server may keep the connection open only
    # if its response says "Connection: keep-alive"; otherwise it must close.
    with RawConn(demo) as c:
        c.send(b"GET /v2/health/live HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        r = c.read_response()
        assert r.status == 200, r
        if "keep-alive" in (r.header("connection") or "").lower():
            c.send(b"GET /v2/health/ready HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
            assert c.read_response().status == 200
        else:
            assert c.wait_closed(2.0), "no keep-alive in the response, yet the connection stayed open"


def test_query_string_ignored_by_routing(demo):
    r = requests.get(demo.url("/v2/health/live?probe=1&x=y"), timeout=TIMEOUT)
    assert ok_json(r) == {"live": True}, show(r)


@pytest.mark.parametrize("raw", [
    # duplicate Content-Length with different values: MUST be rejected (RFC 9112 §6.3)
    b"POST /v2/models/simple/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n"
    b"Content-Length: 3\r\n\r\n{}x",
    b"POST /v2/models/simple/infer HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n",
    b"POST /v2/models/simple/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999999"
    b"\r\n\r\n",
    b"POST /v2/models/simple/infer HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
    b"fffffffffffffffffffffff\r\n",
])
def test_bad_framing_rejected(demo, raw):
    with RawConn(demo) as c:
        c.send(raw)
        try:
            r = c.read_response(timeout=3.0)
        except Closed:
            r = None
        if r is not None:
            assert r.status in (400, 413), r
        assert c.wait_closed(2.0), "server kept a connection with broken framing open"


def test_content_length_and_chunked_together(demo):
    # RFC 9112 §6.3: reject (400), or follow Transfer-Encoding and close after responding.
    body = _body("te-cl")
    chunked = _chunked(body, [64])
    raw = ("POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
           "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n" % INFER).encode() + chunked
    with RawConn(demo) as c:
        c.send(raw + http_request("GET", "/v2/health/live"))
        r = c.read_response(timeout=3.0)
        assert r.status in (200, 400), r
        if r.status == 200:
            _check_simple(r, "te-cl")
        assert c.wait_closed(2.0), "connection kept open after an ambiguous (TE + CL) request"
        assert c.buf == b"", "a request smuggled behind TE+CL was answered: %r" % c.buf


def test_multiple_listeners(start_demo):
    d = start_demo("--listen", "127.0.0.1:0")
    deadline = time.monotonic() + 3.0
    import re
    while time.monotonic() < deadline:
        ports = [int(m.group(1)) for m in
                 (re.match(r"inferserve-demo listening on 127\.0\.0\.1:(\d+)$", l) for l in d.lines) if m]
        if len(ports) >= 2:
            break
        time.sleep(0.02)
    assert len(ports) == 2 and ports[0] != ports[1], d.lines
    for p in ports:
        r = requests.get("http://127.0.0.1:%d/v2/health/live" % p, timeout=TIMEOUT)
        assert ok_json(r) == {"live": True}, show(r)


# --- request-target and Host (RFC 9112 §3.2) ----------------------------------------------
def test_head_request(demo):
    with RawConn(demo) as c:
        c.send(http_request("HEAD", "/v2/health/live"))
        r = c.read_response(head=True)
        assert r.status == 200, r
        # no body follows: the next response on the connection parses cleanly
        c.send(http_request("GET", "/v2/health/ready"))
        r2 = c.read_response()
        assert r2.status == 200 and r2.json() == {"ready": True}, r2


def test_absolute_form_target_accepted(demo):
    # "A server MUST accept the absolute-form in requests" (RFC 9112 §3.2.2).
    with RawConn(demo) as c:
        c.send(b"GET http://127.0.0.1:%d/v2/health/live HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n"
               % (demo.port, demo.port))
        r = c.read_response()
        assert r.status == 200 and r.json() == {"live": True}, r


@pytest.mark.parametrize("headers", [b"", b"Host: a\r\nHost: b\r\n"], ids=["no-host", "two-hosts"])
def test_http11_host_header_required_once(demo, headers):
    # "A server MUST respond with a 400 (Bad Request) status code to any HTTP/1.1 request
    # message that lacks a Host header field and to any request message that contains more
    # than one Host header field" (RFC 9112 §3.2).
    with RawConn(demo) as c:
        c.send(b"GET /v2/health/live HTTP/1.1\r\n" + headers + b"\r\n")
        r = c.read_response()
        assert r.status == 400, r
