"""Limits on a second demo started with small limits (include/inferserve.h options):
413 body too large, 431 headers too large, idle timeout, header/body timeout (408 or close),
max connections."""
import json
import socket
import time

import pytest
import requests

from isvtest import (TIMEOUT, Closed, Demo, RawConn, assert_error, http_request, ok_json,
                     outputs_by_name, show, simple_body, slow_body)

MAX_BODY = 1024
MAX_HEADER = 1024
IDLE_MS = 1000
HEADER_MS = 300
INFER = "/v2/models/simple/infer"


@pytest.fixture(scope="module")
def limited():
    d = Demo(extra_args=["--max-body-bytes", str(MAX_BODY), "--max-header-bytes", str(MAX_HEADER),
                         "--idle-timeout-ms", str(IDLE_MS), "--header-timeout-ms", str(HEADER_MS)])
    yield d
    d.stop_and_check()


def _padded_body(size, req_id="pad"):
    body = json.dumps(simple_body(req_id=req_id))
    assert len(body) <= size
    return (body + " " * (size - len(body))).encode()


# --- body size ----------------------------------------------------------------------------
def test_body_at_limit_accepted(limited):
    r = requests.post(limited.url(INFER), data=_padded_body(MAX_BODY),
                      headers={"Content-Type": "application/json"}, timeout=TIMEOUT)
    assert ok_json(r)["id"] == "pad", show(r)


def test_body_over_limit_413(limited):
    r = requests.post(limited.url(INFER), data=_padded_body(MAX_BODY + 1),
                      headers={"Content-Type": "application/json"}, timeout=TIMEOUT)
    assert_error(r, 413)


def test_big_content_length_413_without_sending_body(limited):
    # The server knows from Content-Length alone; it must not wait for 10 MB.
    with RawConn(limited) as c:
        c.send("POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
               "Content-Length: 10000000\r\n\r\n{" % INFER)
        r = c.read_response(timeout=3.0)
        assert r.status == 413, r
        assert isinstance(r.json().get("error"), str), r


def test_chunked_body_over_limit_413(limited):
    body = _padded_body(3 * MAX_BODY)
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(body[i:i + 256]), body[i:i + 256])
                      for i in range(0, len(body), 256)) + b"0\r\n\r\n"
    with RawConn(limited) as c:
        c.send(("POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                "Transfer-Encoding: chunked\r\n\r\n" % INFER).encode())
        try:
            c.send(chunks)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server may answer and close before reading everything
        r = c.read_response(timeout=3.0)
        assert r.status == 413, r
        assert isinstance(r.json().get("error"), str), r


def test_expect_100_with_oversized_length_gets_413(limited):
    with RawConn(limited) as c:
        c.send("POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
               "Content-Length: 5000\r\nExpect: 100-continue\r\n\r\n" % INFER)
        r = c.read_response(timeout=3.0)
        if r.status == 100:  # allowed, but then the body must still be refused
            try:
                c.send(b" " * 5000)
            except (BrokenPipeError, ConnectionResetError):
                pass
            r = c.read_response(timeout=3.0)
        assert r.status == 413, r


# --- header size --------------------------------------------------------------------------
def test_headers_under_limit_accepted(limited):
    r = requests.get(limited.url("/v2/health/live"), headers={"X-Pad": "a" * 500}, timeout=TIMEOUT)
    assert ok_json(r) == {"live": True}, show(r)


def test_headers_too_large_431(limited):
    r = requests.get(limited.url("/v2/health/live"), headers={"X-Pad": "a" * 2000},
                     timeout=TIMEOUT)
    assert_error(r, 431)


def test_many_headers_too_large_431(limited):
    hdrs = {"X-H%d" % i: "v" * 40 for i in range(60)}
    r = requests.get(limited.url("/v2/health/live"), headers=hdrs, timeout=TIMEOUT)
    assert_error(r, 431)


def test_request_line_too_large_431(limited):
    r = requests.get(limited.url("/v2/models/" + "m" * 2000), timeout=TIMEOUT)
    assert_error(r, 431)


def test_server_alive_after_limit_errors(limited):
    assert requests.get(limited.url("/v2/health/live"), timeout=TIMEOUT).status_code == 200
    assert limited.alive(), limited.describe_exit(limited.proc.returncode)


# --- timeouts -----------------------------------------------------------------------------
def test_idle_connection_closed(limited):
    with RawConn(limited) as c:
        t0 = time.monotonic()
        closed = c.wait_closed(IDLE_MS / 1000 + 2.0)
        elapsed = time.monotonic() - t0
        assert closed, "idle connection still open after %.2f s" % elapsed
        assert elapsed >= IDLE_MS / 1000 * 0.8, "closed too early (%.2f s)" % elapsed
        assert c.buf == b"", "server sent something on an idle connection: %r" % c.buf


def test_idle_after_keepalive_request_closed(limited):
    with RawConn(limited) as c:
        c.send(http_request("GET", "/v2/health/live"))
        assert c.read_response().status == 200
        t0 = time.monotonic()
        closed = c.wait_closed(IDLE_MS / 1000 + 2.0)
        elapsed = time.monotonic() - t0
        assert closed, "keep-alive connection still open after %.2f s idle" % elapsed
        assert elapsed >= IDLE_MS / 1000 * 0.8, "closed too early (%.2f s)" % elapsed


def test_request_in_progress_not_cut_by_idle_timeout(limited):
    # A backend running longer than the idle timeout: the connection has a request in progress.
    body = json.dumps(slow_body(limited, IDLE_MS + 300, req_id="long"))
    r = requests.post(limited.url("/v2/models/slow/infer"), data=body,
                      headers={"Content-Type": "application/json"}, timeout=TIMEOUT)
    assert ok_json(r)["id"] == "long", show(r)


def _await_408_or_close(c, limit):
    """Wait up to `limit` s; returns (elapsed, response or None). Fails if nothing happens."""
    t0 = time.monotonic()
    try:
        r = c.read_response(timeout=limit)
    except Closed:
        r = None
    except socket.timeout:
        raise AssertionError("server neither answered 408 nor closed within %.1f s" % limit)
    return time.monotonic() - t0, r


def test_header_timeout_partial_headers(limited):
    with RawConn(limited) as c:
        c.send(b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\n")
        elapsed, r = _await_408_or_close(c, 3.0)
        if r is not None:
            assert r.status == 408, r
        assert elapsed < IDLE_MS / 1000 * 0.9, \
            "took %.2f s: the header timeout is %d ms" % (elapsed, HEADER_MS)


def test_header_timeout_slowloris_trickle(limited):
    """Headers trickled one byte every 50 ms never complete: the header timeout counts from
    the request's first byte, not from the last read."""
    with RawConn(limited) as c:
        c.send(b"GET /v2/health/live HTTP/1.1\r\n")
        t0 = time.monotonic()
        acted = None
        while time.monotonic() - t0 < 3.0:
            try:
                c.send(b"X")
            except (BrokenPipeError, ConnectionResetError):
                acted = time.monotonic() - t0
                break
            c.sock.settimeout(0.05)
            try:
                chunk = c.sock.recv(4096)
            except socket.timeout:
                continue
            except ConnectionResetError:
                chunk = b""
            acted = time.monotonic() - t0
            if chunk:
                assert chunk.startswith(b"HTTP/1.1 408"), chunk
            break
        assert acted is not None, "server kept reading trickled headers for 3 s"
        assert acted < IDLE_MS / 1000 * 0.9, "took %.2f s (header timeout %d ms)" % (acted, HEADER_MS)


def test_body_timeout_stalled_body(limited):
    with RawConn(limited) as c:
        c.send("POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
               "Content-Length: 500\r\n\r\n{\"inputs\": " % INFER)
        elapsed, r = _await_408_or_close(c, 3.0)
        if r is not None:
            assert r.status == 408, r
        assert elapsed < IDLE_MS / 1000 * 0.9, \
            "took %.2f s: the body must keep arriving within %d ms" % (elapsed, HEADER_MS)


# --- max connections ----------------------------------------------------------------------
def test_max_connections(start_demo):
    """With every connection busy, one more is accepted and closed (test_security.py: idle
    keep-alive connections make room instead)."""
    d = start_demo("--max-connections", "2", "--threads", "1")  # each server's: one loop
    keep = []
    try:
        for i in range(2):
            c = RawConn(d)
            c.send(http_request("GET", "/v2/health/live"))
            assert c.read_response().status == 200, "connection %d refused" % i
            keep.append(c)
        busy = []
        for c in keep:  # both busy: a 600 ms request in flight on each
            c.send(http_request("POST", "/v2/models/slow/infer", json.dumps(
                {"inputs": [{"name": "INPUT0", "shape": [1], "datatype": "INT32", "data": [600]}]})))
            busy.append(c)
        time.sleep(0.1)
        extra = RawConn(d)
        keep.append(extra)
        try:
            extra.send(http_request("GET", "/v2/health/live"))
        except (BrokenPipeError, ConnectionResetError):
            pass
        assert extra.wait_closed(2.0), "a third connection was served with max-connections 2"
        assert b" 200 " not in extra.buf, "the third connection got an answer: %r" % extra.buf
        # the first two are still fine
        for c in busy:
            assert c.read_response().status == 200
        for c in keep[:2]:
            c.send(http_request("GET", "/v2/health/ready"))
            assert c.read_response().status == 200
        # closing one frees a slot
        keep[0].close()
        time.sleep(0.2)
        with RawConn(d) as c:
            c.send(http_request("GET", "/v2/health/live"))
            r = c.read_response()
            assert r.status == 200, r
    finally:
        for c in keep:
            c.close()


def _hold_without_a_request(d, n):
    """n connections of each kind that never complete a request, oldest first: silent since
    their accept, a request head cut in the middle, an HTTP/2 preface cut in the middle."""
    held = {"silent": [], "partial head": [], "partial preface": []}
    for kind, data in (("silent", b""),
                       ("partial head", b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\nX-A: "),
                       ("partial preface", b"PRI * HTTP/2.0\r\n")):
        for _ in range(n):
            s = socket.create_connection((d.host, d.port), timeout=TIMEOUT)
            if data:
                s.sendall(data)
            held[kind].append(s)
            time.sleep(0.005)  # accepted in this order
    return held


def _closed_by_server(s, wait):
    s.settimeout(wait)
    try:
        return s.recv(4096) == b""
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


def test_connections_that_never_ask_do_not_lock_new_clients_out(start_demo):
    """max_connections filled with connections that never complete a request (silent, a
    partial head, a partial HTTP/2 preface) — long before any of their timeouts (idle 60 s,
    header 30 s) — still lets 10 new clients in, all connected at once: the connections idle
    the longest make room, oldest first."""
    n = 10
    d = start_demo("--max-connections", str(3 * n), "--threads", "1")  # one loop: its limit
    held = _hold_without_a_request(d, n)
    fresh = []
    try:
        time.sleep(0.2)
        t0 = time.monotonic()
        for _ in range(10):
            fresh.append(RawConn(d, timeout=3.0))
        time.sleep(0.1)
        for c in fresh:
            c.send(http_request("GET", "/v2/health/live"))
        for i, c in enumerate(fresh):
            try:
                r = c.read_response(timeout=3.0)
            except (Closed, socket.timeout) as e:
                raise AssertionError("new client %d of 10 was not served: %s" % (i, e))
            assert r.status == 200, r
        assert time.monotonic() - t0 < 5.0
        # the oldest made room: the silent ones; the others are still open
        for s in held["silent"]:
            assert _closed_by_server(s, 2.0), "the oldest (silent) connection was kept"
        for s in held["partial head"] + held["partial preface"]:
            assert not _closed_by_server(s, 0.01), "a newer connection was closed first"
        # at the limit again: the partial heads go next (a new client in for each)
        for i in range(n):
            c = RawConn(d, timeout=3.0)
            fresh.append(c)
            c.send(http_request("GET", "/v2/health/ready"))
            assert c.read_response(timeout=3.0).status == 200
        for s in held["partial head"]:
            assert _closed_by_server(s, 2.0), "a partial head was kept"
        assert "connection limit (%d) is reached" % (3 * n) in d.stderr_tail()
    finally:
        for c in fresh:
            c.close()
        for group in held.values():
            for s in group:
                s.close()


# --- read batching of large bodies (SO_RCVLOWAT) -------------------------------------------
def _binary_identity_request(n, content_length=None):
    head = ('{"inputs":[{"name":"INPUT0","shape":[1,%d],"datatype":"UINT8","parameters":'
            '{"binary_data_size":%d}}],"parameters":{"binary_data_output":true}}' % (n, n)).encode()
    raw = bytes(range(256)) * (n // 256)
    req = ("POST /v2/models/identity_uint8/infer HTTP/1.1\r\nHost: x\r\n"
           "Content-Type: application/octet-stream\r\nInference-Header-Content-Length: %d\r\n"
           "Content-Length: %d\r\n\r\n" % (len(head), content_length or len(head) + n)).encode()
    return req + head, raw


def test_large_body_trickled_within_the_timeout_is_served(start_demo):
    """A 256 KiB body sent in 16 KiB pieces 100 ms apart — 1.6 s in all, each gap shorter than
    the 300 ms body timeout — is answered: the server batches its reads of a large body, but a
    client that pauses is still read (and timed) piece by piece."""
    d = start_demo("--header-timeout-ms", str(HEADER_MS))
    n = 256 << 10
    head, raw = _binary_identity_request(n)
    with RawConn(d) as c:
        c.send(head)
        for i in range(0, n, 16 << 10):
            time.sleep(0.1)
            c.send(raw[i:i + (16 << 10)])
        r = c.read_response(timeout=5)
        assert r.status == 200, r
        hl = int(r.header("inference-header-content-length"))
        assert r.body[hl:] == raw


def test_large_body_stalled_half_way_gets_408(start_demo):
    """A 1 MiB body that stops after 100 KiB: 408 (or a close) within the body timeout, as for a
    small body — the batching does not hide the stall."""
    d = start_demo("--header-timeout-ms", str(HEADER_MS), "--idle-timeout-ms", str(IDLE_MS))
    head, raw = _binary_identity_request(1 << 20)
    with RawConn(d) as c:
        c.send(head + raw[:100 << 10])
        elapsed, r = _await_408_or_close(c, 3.0)
        if r is not None:
            assert r.status == 408, r
        assert elapsed < IDLE_MS / 1000 * 0.9, \
            "took %.2f s: the body must keep arriving within %d ms" % (elapsed, HEADER_MS)
