"""Attacks from issue 10, each a regression test: what a hostile client sends, over raw sockets,
and what the server must do instead of crashing, stalling or holding memory.

Point 1: Upgrade and CONNECT. An HTTP/1.1 request carrying `Upgrade` (h2c, websocket) followed
by any byte used to crash the server (llhttp's upgrade pause reached the router with no
request). The server ignores Upgrade (RFC 9110 §7.8: optional), answers over HTTP/1.1 and keeps
parsing HTTP/1.1; CONNECT asks for a tunnel and gets 405, then the connection closes.
"""
import json
import signal
import socket
import subprocess
import time

import pytest

from isvtest import TIMEOUT, RawConn, http_request, simple_body

UPGRADES = {
    "h2c": {"Connection": "Upgrade, HTTP2-Settings", "Upgrade": "h2c",
            "HTTP2-Settings": "AAMAAABkAAQAoAAAAAIAAAAA"},
    "websocket": {"Connection": "Upgrade", "Upgrade": "websocket",
                  "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version": "13"},
}


def _live(c):
    c.send(http_request("GET", "/v2/health/live"))
    r = c.read_response()
    assert r.status == 200 and r.json() == {"live": True}, r


@pytest.mark.parametrize("kind", sorted(UPGRADES))
def test_upgrade_then_pipelined_byte(demo, kind):
    """The one-request crash: the upgrade request and one more byte in the same segment."""
    with RawConn(demo) as c:
        c.send(http_request("GET", "/nothing", headers=UPGRADES[kind]) + b"X")
        r = c.read_response()
        assert r.status == 404 and r.version == "HTTP/1.1", r
        assert "unknown path" in r.json()["error"], r
        # "X" then the end of the line starts an HTTP/1.1 request that is not valid: 400, close
        c.send(b" / HTTP/1.1\r\n\r\n")
        r = c.read_response()
        assert r.status == 400, r
        assert c.wait_closed(TIMEOUT)


@pytest.mark.parametrize("kind", sorted(UPGRADES))
def test_upgrade_then_byte_sent_later(demo, kind):
    with RawConn(demo) as c:
        c.send(http_request("GET", "/v2/health/ready", headers=UPGRADES[kind]))
        r = c.read_response()
        assert r.status == 200 and r.json() == {"ready": True}, r
        assert r.header("upgrade") is None, r
        time.sleep(0.05)
        c.send(b"X")
        time.sleep(0.05)
        c.send(b"Y / HTTP/1.1\r\nHost: x\r\n\r\n")
        r = c.read_response()
        assert r.status in (400, 405, 501), r  # "XY" is not a method; never a crash


@pytest.mark.parametrize("kind", sorted(UPGRADES))
def test_upgrade_request_with_body_then_next_request(demo, kind):
    """The upgrade is ignored, so the body is read as the request's body and the connection
    keeps serving HTTP/1.1 requests."""
    body = json.dumps(simple_body(req_id="up")).encode()
    with RawConn(demo) as c:
        c.send(http_request("POST", "/v2/models/simple/infer", body, headers=UPGRADES[kind])
               + http_request("GET", "/v2/health/live"))
        r = c.read_response()
        assert r.status == 200 and r.json()["id"] == "up", r
        r = c.read_response()
        assert r.status == 200 and r.json() == {"live": True}, r
        _live(c)


def test_upgrade_many_pipelined(demo):
    reqs = b"".join(http_request("GET", "/v2/health/live", headers=UPGRADES["h2c"])
                    for _ in range(5))
    with RawConn(demo) as c:
        c.send(reqs)
        for _ in range(5):
            r = c.read_response()
            assert r.status == 200 and r.json() == {"live": True}, r


@pytest.mark.parametrize("trailing", [b"", b"\x16\x03\x01\x00\x05hello", b"GET / HTTP/1.1\r\n\r\n"],
                         ids=["alone", "tls-bytes", "http-bytes"])
def test_connect_is_refused_and_closed(demo, trailing):
    with RawConn(demo) as c:
        c.send(b"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n" + trailing)
        r = c.read_response()
        assert r.status == 405, r
        assert "CONNECT" in r.json()["error"], r
        assert r.header("connection") == "close", r
        assert c.wait_closed(TIMEOUT)
    with RawConn(demo) as c:
        _live(c)


def test_curl_http2_upgrade_answered_over_http1(demo):
    """curl --http2 on http:// asks for the h2c upgrade; the answer comes over HTTP/1.1 and
    curl's second request on the same connection works too."""
    url = demo.url("/v2/health/live")
    out = subprocess.run(["curl", "-sS", "--http2", "-w", "%{http_code} %{http_version}\\n",
                          url, url], capture_output=True, text=True, timeout=15)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.replace('{"live":true}', "").split()
    assert lines == ["200", "1.1", "200", "1.1"], out.stdout


# --- point 2: HPACK amplification ----------------------------------------------------------
import h2raw  # noqa: E402
from h2raw import H2Conn, rest_headers  # noqa: E402

ENHANCE_YOUR_CALM = 0xb


def _amplified_block(demo, path, refs):
    """Pseudo-headers, one 4,000-byte header entered into the HPACK dynamic table (literal with
    incremental indexing: it becomes index 62), then `refs` one-byte references to it: a few
    bytes on the wire that decode to refs x 4 KB."""
    block = h2raw.hpack_encode(rest_headers(demo, "GET", path))
    name, value = b"x-big", b"v" * 4000
    block += b"\x40" + h2raw.hpack_int(len(name), 7) + name + h2raw.hpack_int(len(value), 7) + value
    return block + b"\xbe" * refs


def test_hpack_amplification_is_refused_then_closed(demo):
    with H2Conn(demo) as c:
        # one block decoding to 4 MB from 5 KB: answered 431 as any block over the 64 KiB
        # header limit (not reset: #34), nothing past the limit kept
        c.send(h2raw.frame(h2raw.HEADERS, h2raw.END_HEADERS | h2raw.END_STREAM, 1,
                           _amplified_block(demo, "/v2/health/live", 1000)))
        st = c.wait(1)
        assert st.status == 431 and st.reset is None, st
        # the connection still serves ordinary requests
        sid = c.request(rest_headers(demo, "GET", "/v2/health/live"), sid=3)
        assert c.wait(sid).status == 200
        # doing it again and again closes the connection
        for sid in (5, 7, 9, 11):
            try:
                c.send(h2raw.frame(h2raw.HEADERS, h2raw.END_HEADERS | h2raw.END_STREAM, sid,
                                   b"\xbe" * 1000 if sid > 5 else
                                   _amplified_block(demo, "/v2/health/live", 1000)))
            except OSError:
                break
        assert c.wait_closed(5.0)
        assert c.goaway is not None and c.goaway[1] == ENHANCE_YOUR_CALM, c.goaway
    # other clients were served meanwhile and still are
    with RawConn(demo) as other:
        _live(other)


def test_headers_a_little_over_the_limit_still_get_431(demo):
    with H2Conn(demo) as c:
        extra = [("x-h%d" % i, "v" * 1000) for i in range(70)]  # ~70 KB: over 64 KiB, under 2x
        sid = c.request(rest_headers(demo, "GET", "/v2/health/live", extra))
        st = c.wait(sid)
        assert st.status == 431, st


def test_headers_far_over_the_limit_get_431_not_a_reset(demo):
    """A header block past twice the limit is answered 431 as on HTTP/1.1 (and as a block a
    little over it), in the path's shape, not RST_STREAM INTERNAL_ERROR; the connection goes
    on."""
    with H2Conn(demo) as c:
        c.pump(0.05)  # the server's SETTINGS: frames up to 1 MiB
        extra = [("x-h%d" % i, "v" * 10000) for i in range(20)]  # 200 KB: over 2 x 64 KiB
        sid = c.request(rest_headers(demo, "GET", "/v2/health/live", extra))
        st = c.wait(sid)
        assert st.status == 431 and st.reset is None, st
        assert b"exceed the server's limit" in st.data, st
        st = c.wait(c.request(rest_headers(demo, "GET", "/v2/health/live")))
        assert st.status == 200, st


def test_grpc_metadata_over_the_limit_gets_resource_exhausted(demo):
    """gRPC's analogue of 431: a trailers-only RESOURCE_EXHAUSTED, a little over the limit and
    far over it."""
    with H2Conn(demo) as c:
        c.pump(0.05)
        for n in (70, 200):  # ~70 KB and ~200 KB of metadata
            extra = [("x-m%d" % i, "v" * 1000) for i in range(n)]
            sid = c.request(h2raw.grpc_headers(
                demo, "/inference.GRPCInferenceService/ServerLive", extra), end_stream=True)
            st = c.wait(sid)
            assert st.reset is None, st
            assert st.status == 200 and st.grpc("grpc-status") == "8", st
            assert "exceeds the server's limit" in (st.grpc("grpc-message") or ""), st
        st = c.wait(c.request(rest_headers(demo, "GET", "/v2/health/live")))
        assert st.status == 200, st


def test_header_decoding_rate_is_bounded(start_demo):
    """Blocks just under the header limit, each a few bytes on the wire: past 16 MiB of decoded
    headers in a second the connection is closed with ENHANCE_YOUR_CALM. The blocks go out in
    bursts of 40 (2.4 MB decoded from ~1 KB sent) so that the client's own speed — a busy
    machine, a slow interpreter — cannot keep it under the rate: seven bursts a second cross
    it, where one block at a time needed ~400 round trips of the client's loop a second."""
    d = start_demo()
    refs, burst = 15, 40  # 15 x 4 KB = 60 KB a block: under the 64 KiB limit (a 404, not a 431)
    with H2Conn(d) as c:
        c.send(h2raw.frame(h2raw.HEADERS, h2raw.END_HEADERS | h2raw.END_STREAM, 1,
                           _amplified_block(d, "/v2/nope", refs)))
        block = h2raw.hpack_encode(rest_headers(d, "GET", "/v2/nope")) + b"\xbe" * refs
        sid, sent, closed = 3, 1, False
        try:
            while sid < 8000 and not closed:  # up to ~240 MB decoded from ~100 KB sent
                c.send(b"".join(h2raw.frame(h2raw.HEADERS, h2raw.END_HEADERS | h2raw.END_STREAM,
                                            sid + 2 * k, block) for k in range(burst)))
                sid += 2 * burst
                sent += burst
                # never past the server's 100 concurrent streams, however slow it runs (a
                # sanitizer build on a busy machine): that limit has its own GOAWAY
                until = time.monotonic() + 5.0
                while (sent - sum(1 for st in c.streams.values() if st.done) > 90 - burst and
                       time.monotonic() < until):
                    c.pump(0.005)
        except (OSError, h2raw.ConnectionClosed):
            closed = True
        # read to the end even when a send failed first: the GOAWAY came before the server's
        # reset and waits in the socket (a burst cut by the reset left it unread)
        assert c.wait_closed(5.0) or closed
        assert c.goaway is not None and c.goaway[1] == ENHANCE_YOUR_CALM, c.goaway


# --- point 3: a header block that never ends ----------------------------------------------
def test_unfinished_header_block_times_out(start_demo):
    d = start_demo("--header-timeout-ms", "300")
    with H2Conn(d) as c:
        c.pump(0.2)  # the SETTINGS exchange first: nothing may follow the open block
        block = h2raw.hpack_encode(rest_headers(d, "GET", "/v2/health/live"))
        c.send(h2raw.frame(h2raw.HEADERS, 0, 1, block))  # no END_HEADERS, then silence
        assert c.wait_closed(5.0), "the connection was held open"
        assert c.goaway is not None and c.goaway[1] == ENHANCE_YOUR_CALM, c.goaway


# --- point 7: the smaller ones -------------------------------------------------------------
def test_http2_version_on_an_http1_connection_is_505(demo):
    with RawConn(demo) as c:
        c.send(b"GET /v2/health/live HTTP/2.0\r\nHost: x\r\n\r\n")
        r = c.read_response()
        assert r.status == 505 and "HTTP/1.1" in r.json()["error"], r
        assert c.wait_closed(TIMEOUT)


@pytest.mark.parametrize("coding", ["gzip", "deflate", "br"])
def test_content_encoding_is_decoded_or_refused_never_parsed_as_plain(demo, coding):
    # a plain JSON body that claims a coding: gzip and deflate fail to decode (400), other
    # codings are refused before the body is read (415) — never read as plain
    body = json.dumps(simple_body()).encode()
    with RawConn(demo) as c:
        c.send(http_request("POST", "/v2/models/simple/infer", body,
                            headers={"Content-Encoding": coding}))
        r = c.read_response()
        if coding == "br":
            assert r.status == 415, r
            assert "Content-Encoding 'br' is not supported" in r.json()["error"], r
        else:
            assert r.status == 400, r
            assert "the body is not valid %s data" % coding in r.json()["error"], r
    # identity is no coding at all
    with RawConn(demo) as c:
        c.send(http_request("POST", "/v2/models/simple/infer", body,
                            headers={"Content-Encoding": "identity"}))
        assert c.read_response().status == 200


def test_content_encoding_over_h2c_is_decoded_or_refused(demo):
    body = json.dumps(simple_body()).encode()
    for coding, status in [("gzip", 400), ("br", 415)]:
        with H2Conn(demo) as c:
            sid = c.request(rest_headers(demo, "POST", "/v2/models/simple/infer",
                                         [("content-encoding", coding),
                                          ("content-type", "application/json")]), body=body,
                            end_stream=True)
            st = c.wait(sid)
            assert st.status == status, st


def test_oversized_chunk_is_refused_from_its_size_line(start_demo):
    d = start_demo("--max-body-bytes", "1000")
    with RawConn(d) as c:
        c.send(b"POST /v2/models/simple/infer HTTP/1.1\r\nHost: x\r\n"
               b"Transfer-Encoding: chunked\r\n\r\n10000\r\n")  # 64 KiB announced, none sent
        r = c.read_response()  # at once: not after waiting for the data
        assert r.status == 413, r


def _many_inputs(n):
    return json.dumps({"inputs": [{"name": "x%d" % i, "shape": [1], "datatype": "INT8",
                                   "data": [1]} for i in range(n)]}).encode()


def test_too_many_inputs_is_400_before_they_are_decoded(demo):
    r = RawConn(demo)
    with r as c:
        c.send(http_request("POST", "/v2/models/simple/infer", _many_inputs(1025)))
        resp = c.read_response()
        assert resp.status == 400, resp
        assert "more than 1024 inputs" in resp.json()["error"], resp
    # 200,000 inputs (12 MB): refused at the 1,025th, the server does not stall on them
    with RawConn(demo) as c:
        c.send(http_request("POST", "/v2/models/simple/infer", _many_inputs(200000)))
        resp = c.read_response(timeout=30)
        assert resp.status == 400 and "more than 1024 inputs" in resp.json()["error"], resp


def test_max_tensors_is_an_option(start_demo):
    d = start_demo("--max-tensors", "2")
    with RawConn(d) as c:
        c.send(http_request("POST", "/v2/models/simple/infer", _many_inputs(3)))
        resp = c.read_response()
        assert resp.status == 400 and "more than 2 inputs" in resp.json()["error"], resp
        c.send(http_request("POST", "/v2/models/simple/infer", json.dumps(simple_body())))
        assert c.read_response().status == 200


def test_too_many_inputs_over_grpc(start_demo):
    import grpc
    from grpc_stubs import add_input, expect_rpc_error, load_stubs, make_channel
    protos = load_stubs()
    d = start_demo()
    req = protos.pb.ModelInferRequest(model_name="simple")
    for i in range(1025):
        add_input(req, "x%d" % i, "INT8", [1], raw=b"\x01")
    ch = make_channel(d)
    try:
        stub = protos.pb_grpc.GRPCInferenceServiceStub(ch)
        expect_rpc_error(stub.ModelInfer, grpc.StatusCode.INVALID_ARGUMENT,
                         "more than 1024 inputs", request=req, timeout=TIMEOUT)
    finally:
        ch.close()


# --- point 6: the connection limit --------------------------------------------------------
def test_idle_keep_alive_connections_make_room_for_new_clients(start_demo):
    # one loop: max_connections is each server's (a group of N accepts N times as many)
    d = start_demo("--max-connections", "4", "--threads", "1")
    idle = []
    for _ in range(4):  # 4 clients each make one request and keep the connection open
        c = RawConn(d)
        _live(c)
        idle.append(c)
    try:
        for _ in range(3):  # new clients are served: the oldest idle connections make room
            with RawConn(d) as newcomer:
                _live(newcomer)
        assert idle[0].wait_closed(TIMEOUT), "the oldest idle connection was kept"
        # a connection with a request in flight is never the one closed
        busy = RawConn(d)
        busy.send(http_request("POST", "/v2/models/slow/infer",
                               json.dumps({"inputs": [{"name": "INPUT0", "shape": [1],
                                                       "datatype": "INT32", "data": [400]}]})))
        time.sleep(0.1)
        for _ in range(4):
            with RawConn(d) as newcomer:
                _live(newcomer)
        r = busy.read_response()
        assert r.status == 200, r
        busy.close()
    finally:
        for c in idle:
            c.close()
    assert "connection limit (4) is reached" in d.stderr_tail(), d.stderr_tail()
    assert d.stderr_tail().count("connection limit (4) is reached") <= 2  # once per episode


# --- point 5: a client that never reads --------------------------------------------------
def _binary_identity_request(n):
    head = json.dumps({"inputs": [{"name": "INPUT0", "shape": [1, n], "datatype": "UINT8",
                                   "parameters": {"binary_data_size": n}}],
                       "parameters": {"binary_data_output": True}}).encode()
    return http_request("POST", "/v2/models/identity_uint8/infer", head + b"\x07" * n,
                        headers={"Inference-Header-Content-Length": str(len(head)),
                                 "Content-Type": "application/octet-stream"})


def test_response_never_read_is_dropped_after_the_send_timeout(start_demo):
    d = start_demo("--send-timeout-ms", "300")
    n = 32 << 20  # more than the socket buffers of both ends hold
    s = socket.create_connection((d.host, d.port))
    s.sendall(_binary_identity_request(n))  # and it does not read
    time.sleep(2.0)  # several send timeouts
    got = b""
    s.settimeout(5.0)
    try:
        while True:
            chunk = s.recv(1 << 20)
            if not chunk:
                break
            got += chunk
    except (ConnectionResetError, socket.timeout):
        pass
    s.close()
    assert len(got) < n, "the whole 32 MiB answer waited for a client that does not read"
    with RawConn(d) as c:
        _live(c)


def test_response_never_read_is_reset_after_the_send_timeout(start_demo):
    """The connection cut by the send timeout is reset (SO_LINGER 0, as nginx's
    reset_timedout_connection), not closed with a FIN behind the bytes the client never read:
    the kernel frees them at once. The client sees ECONNRESET, not the end of the stream."""
    d = start_demo("--send-timeout-ms", "300")
    s = socket.create_connection((d.host, d.port))
    try:
        s.sendall(_binary_identity_request(32 << 20))  # and it does not read
        time.sleep(1.5)  # several send timeouts
        s.settimeout(5.0)
        outcome = None
        try:
            while True:
                chunk = s.recv(1 << 20)
                if not chunk:
                    outcome = "end of stream (FIN)"
                    break
        except ConnectionResetError:
            outcome = "reset"
        except socket.timeout:
            outcome = "still open"
        assert outcome == "reset", outcome
    finally:
        s.close()
    with RawConn(d) as c:
        _live(c)


def test_h2_window_kept_at_zero_resets_the_stream(start_demo):
    d = start_demo("--send-timeout-ms", "300")
    with H2Conn(d, settings={h2raw.INITIAL_WINDOW_SIZE: 0}, auto_window=False) as c:
        sid = c.request(rest_headers(d, "GET", "/v2"))  # a response with a body it cannot send
        st = c.wait(sid, timeout=5.0)
        assert st.reset == h2raw.CANCEL, st
        sid = c.request(rest_headers(d, "GET", "/v2/health/live"), sid=3)
        c.window_update(0, 1 << 20)
        c.window_update(sid, 1 << 20)
        assert c.wait(sid).status == 200  # the connection is fine


def test_drain_has_a_deadline(start_demo):
    d = start_demo("--send-timeout-ms", "60000", "--drain-timeout-ms", "500")
    s = socket.create_connection((d.host, d.port))
    s.sendall(_binary_identity_request(32 << 20))  # an answer stuck on a client that never reads
    time.sleep(0.3)
    try:
        rc = d.stop(signal.SIGTERM, timeout=10.0)  # the client is still connected
        assert rc == 0, d.describe_exit(rc)
        assert "drain deadline" in d.stderr_tail()
    finally:
        s.close()


# --- point 4: slow bodies and the memory they hold -----------------------------------------
def test_body_trickling_under_the_minimum_rate_gets_408(start_demo):
    d = start_demo("--min-body-rate", "1000:300")  # 1000 bytes/s once 300 ms have passed
    with RawConn(d) as c:
        c.send(b"POST /v2/models/simple/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 10000\r\n\r\n")
        got = None
        for _ in range(50):  # one byte every 100 ms: each read re-arms the header timeout
            try:
                c.send(b"{")
            except OSError:
                break
            time.sleep(0.1)
            if c.wait_closed(0.01) or b"HTTP/1.1" in c.buf:
                break
        got = c.buf
        assert b"408" in got.split(b"\r\n")[0], got
        assert b"arriving too slowly" in got, got


def test_h2_body_trickling_under_the_minimum_rate_gets_408(start_demo):
    d = start_demo("--min-body-rate", "1000:300")
    with H2Conn(d) as c:
        sid = c.request(rest_headers(d, "POST", "/v2/models/simple/infer",
                                     [("content-type", "application/json")]), end_stream=False)
        st = c.streams[sid]
        for _ in range(50):
            c.send_data(sid, b"{")
            c.pump(0.1)
            if st.done:
                break
        assert st.status == 408 and b"arriving too slowly" in st.data, st


def test_body_that_stops_is_cut_after_the_rate_grace_not_the_header_timeout(start_demo):
    """Headers and part of a body, then silence: nothing more arrives, so no read ever checks
    the rate — the deadline itself is the rate's (300 ms + 100 bytes at 1000 bytes/s), not the
    30 s header timeout."""
    d = start_demo("--min-body-rate", "1000:300")  # the header timeout stays at 30 s
    with RawConn(d) as c:
        c.send(b"POST /v2/models/simple/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 10000\r\n"
               b"Content-Type: application/json\r\n\r\n" + b" " * 100)
        t0 = time.monotonic()
        try:
            r = c.read_response(timeout=5.0)
        except socket.timeout:
            raise AssertionError("a stopped body was still waited for after 5 s")
        elapsed = time.monotonic() - t0
        assert r.status == 408 and "arriving too slowly" in r.json()["error"], r
        assert 0.3 <= elapsed < 3.0, elapsed


def test_h2_body_that_stops_is_cut_after_the_rate_grace(start_demo):
    d = start_demo("--min-body-rate", "1000:300")
    with H2Conn(d) as c:
        sid = c.request(rest_headers(d, "POST", "/v2/models/simple/infer",
                                     [("content-type", "application/json")]), end_stream=False)
        c.send_data(sid, b" " * 100)
        t0 = time.monotonic()
        st = c.wait(sid, timeout=5.0)
        elapsed = time.monotonic() - t0
        assert st.status == 408 and b"arriving too slowly" in st.data, st
        assert 0.3 <= elapsed < 3.0, elapsed


def test_a_fast_body_is_not_limited_by_the_rate(start_demo):
    d = start_demo("--min-body-rate", "1000:1000")
    body = json.dumps(simple_body()).encode()
    with RawConn(d) as c:
        head, rest = http_request("POST", "/v2/models/simple/infer", body).split(b"\r\n\r\n", 1)
        c.send(head + b"\r\n\r\n")
        time.sleep(0.5)  # a pause before the body, within the grace (a longer one is a stop)
        c.send(rest)
        assert c.read_response().status == 200


def test_bodies_in_flight_share_a_budget(start_demo):
    # one loop: the receiving budget is each server's
    d = start_demo("--max-body-bytes", "1000000", "--max-receiving-bytes", "1000000",
                   "--threads", "1")
    holder = RawConn(d)  # announces 900 kB and sends them slowly: they are reserved
    holder.send(b"POST /v2/models/simple/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 900000\r\n\r\n")
    time.sleep(0.1)
    try:
        with RawConn(d) as c:
            c.send(b"POST /v2/models/simple/infer HTTP/1.1\r\nHost: x\r\n"
                   b"Content-Length: 200000\r\n\r\n")
            r = c.read_response()
            assert r.status == 503 and "receiving too much request data" in r.json()["error"], r
        # HTTP/2 REST and gRPC share the same budget
        with H2Conn(d) as c:
            sid = c.request(rest_headers(d, "POST", "/v2/models/simple/infer",
                                         [("content-type", "application/json")]),
                            body=b"x" * 200000)
            assert c.wait(sid).status == 503
        from grpc_stubs import grpc_frame
        with H2Conn(d) as c:
            sid = c.request(h2raw.grpc_headers(d, "/inference.GRPCInferenceService/ModelInfer"),
                            body=grpc_frame(b"\x0a" * 200000)[:1000], end_stream=False)
            st = c.wait(sid)
            assert st.grpc("grpc-status") == "14", st  # UNAVAILABLE: retry later
    finally:
        holder.close()
    time.sleep(0.2)  # the holder is gone: its reservation with it
    with RawConn(d) as c:
        body = json.dumps(simple_body()).encode()
        c.send(http_request("POST", "/v2/models/simple/infer", body))
        assert c.read_response().status == 200


# --- point 7: the answer reaches a client still sending ------------------------------------
def test_413_reaches_a_client_that_keeps_sending(start_demo):
    """The server answers 413 from the headers while the client is still uploading: closing at
    once with unread input resets the connection and a client still writing loses the answer
    (requests raises ConnectionError); a lingering close (FIN, then reading and dropping for a
    while) lets it finish its upload and read the 413."""
    import requests
    d = start_demo("--max-body-bytes", "1000")
    for attempt in range(5):
        r = requests.post(d.url("/v2/models/simple/infer"), data=b"x" * 800000, timeout=10)
        assert r.status_code == 413, "attempt %d: %r" % (attempt, r.text)
    # and the connection ends with a FIN, not a reset
    s = socket.create_connection((d.host, d.port))
    s.sendall(b"POST /v2/models/simple/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 800000\r\n\r\n")
    s.sendall(b"x" * 800000)
    s.settimeout(5.0)
    got = b""
    while True:
        chunk = s.recv(65536)  # a reset would raise ConnectionResetError here
        if not chunk:
            break
        got += chunk
    s.close()
    assert got.startswith(b"HTTP/1.1 413"), got[:200]
