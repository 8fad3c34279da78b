"""HTTP/2 with a hand-driven client (h2raw.py): REST and gRPC multiplexed on one connection,
RST_STREAM mid-call, flow control with a tiny window, the concurrent-stream limit,
CONTINUATION frames, grpc-timeout units, trailers and grpc-message encoding, frames and
malformed request header blocks the server must refuse."""
import json
import struct
import time
import urllib.parse

import pytest

import h2raw
from grpc_stubs import (SERVICE, add_input, decode_raw, grpc_frame, outputs_of, simple_request,
                        slow_request, wrap32)
from grpc_stubs import protos  # noqa: F401 (fixture)
from h2raw import H2Conn, grpc_headers, rest_headers
from isvtest import RawConn, http_request, simple_body

T = 5.0


def _grpc_ok(st, pb_type):
    """A complete successful unary gRPC answer: headers, one message, trailers grpc-status 0."""
    assert st.reset is None, st
    assert st.status == 200, st
    assert st.header("content-type").startswith("application/grpc"), st
    assert len(st.blocks) == 2, "want response headers then trailers: %r" % st
    assert st.grpc("grpc-status") == "0", st
    msgs = st.grpc_messages()
    assert len(msgs) == 1 and msgs[0][0] == 0, st
    return pb_type.FromString(msgs[0][1])


def _grpc_error(st):
    """A gRPC error: a trailers-only response (or headers + trailers) without a message."""
    assert st.reset is None, st
    assert st.status == 200, st
    assert st.grpc_messages() == [], st
    code = st.grpc("grpc-status")
    assert code is not None, "no grpc-status in %r" % st
    return int(code), urllib.parse.unquote(st.grpc("grpc-message") or "")


def _infer_call(c, demo, req, extra=()):
    return c.request(grpc_headers(demo, SERVICE + "ModelInfer", extra),
                     body=grpc_frame(req.SerializeToString()), end_stream=True)


# ------------------------------------------------------------------------------------------
# Multiplexing
# ------------------------------------------------------------------------------------------
def test_rest_and_grpc_on_one_connection(demo, protos):
    pb = protos.pb
    with H2Conn(demo) as c:
        s_slow = _infer_call(c, demo, slow_request(pb, 300, req_id="slow"))
        s_ready = c.request(rest_headers(demo, "GET", "/v2/health/ready"))
        s_live = c.request(grpc_headers(demo, SERVICE + "ServerLive"), body=grpc_frame(b""),
                           end_stream=True)
        body = json.dumps(simple_body(rows=1, req_id="rest")).encode()
        s_rest = c.request(rest_headers(demo, "POST", "/v2/models/simple/infer",
                                        [("content-type", "application/json"),
                                         ("content-length", str(len(body)))]),
                           body=body, end_stream=True)
        req, fa, fb = simple_request(pb, req_id="grpc")
        s_grpc = _infer_call(c, demo, req)

        for sid in (s_ready, s_live, s_rest, s_grpc):
            c.wait(sid)
        assert not c.streams[s_slow].done, "the fast streams waited for the slow one"

        st = c.streams[s_ready]
        assert st.status == 200 and json.loads(st.data) == {"ready": True}, st
        assert _grpc_ok(c.streams[s_live], pb.ServerLiveResponse).live is True
        st = c.streams[s_rest]
        assert st.status == 200, st
        rest = json.loads(st.data)
        assert rest["id"] == "rest" and len(rest["outputs"]) == 2, st
        resp = _grpc_ok(c.streams[s_grpc], pb.ModelInferResponse)
        assert resp.id == "grpc"
        assert decode_raw("INT32", outputs_of(resp)["OUTPUT1"][2]) == \
            [wrap32(x - y) for x, y in zip(fa, fb)]

        resp = _grpc_ok(c.wait(s_slow), pb.ModelInferResponse)
        assert resp.id == "slow"


def test_many_streams_one_connection(demo, protos):
    pb = protos.pb
    with H2Conn(demo) as c:
        sids = {}
        # 45 x 2 = 90 streams opened at once: under the 100 concurrent streams the server
        # advertises (beyond it, nghttp2 rightly refuses streams with REFUSED_STREAM)
        for i in range(45):
            req, fa, fb = simple_request(pb, rows=1 + i % 8, req_id="m%d" % i)
            sids[_infer_call(c, demo, req)] = (req.id, fa, fb)
            sids[c.request(rest_headers(demo, "GET", "/v2/health/live"))] = None
        for sid, want in sids.items():
            st = c.wait(sid)
            if want is None:
                assert st.status == 200 and json.loads(st.data) == {"live": True}, st
                continue
            resp = _grpc_ok(st, pb.ModelInferResponse)
            rid, fa, fb = want
            assert resp.id == rid
            assert decode_raw("INT32", outputs_of(resp)["OUTPUT0"][2]) == \
                [wrap32(x + y) for x, y in zip(fa, fb)], rid


# ------------------------------------------------------------------------------------------
# Cancellation by RST_STREAM
# ------------------------------------------------------------------------------------------
def test_rst_stream_cancels_call_connection_survives(demo, protos):
    pb = protos.pb
    with H2Conn(demo) as c:
        s1 = _infer_call(c, demo, slow_request(pb, 300, req_id="cancelled"))
        c.pump(0.05)
        c.rst(s1, h2raw.CANCEL)
        # the connection keeps working while the cancelled request still sleeps
        req, fa, fb = simple_request(pb, req_id="after")
        t0 = time.monotonic()
        st = c.wait(_infer_call(c, demo, req))
        assert time.monotonic() - t0 < 0.2, "blocked behind the cancelled call"
        assert _grpc_ok(st, pb.ModelInferResponse).id == "after"
        # the cancelled call's late completion sends nothing on stream 1
        n_before = len([f for f in c.frames if f[2] == s1])
        c.pump(0.4)
        late = [f for f in c.frames if f[2] == s1][n_before:]
        assert late == [], "frames on the reset stream after RST_STREAM: %r" % late
        assert c.goaway is None, c.goaway
        st = c.wait(c.request(grpc_headers(demo, SERVICE + "ServerLive"), body=grpc_frame(b""),
                              end_stream=True))
        assert _grpc_ok(st, pb.ServerLiveResponse).live


def test_rst_stream_on_half_sent_message(demo, protos):
    """RST_STREAM while the server holds half a message (and for a REST body half sent)."""
    pb = protos.pb
    req, _, _ = simple_request(pb)
    framed = grpc_frame(req.SerializeToString())
    with H2Conn(demo) as c:
        s1 = c.request(grpc_headers(demo, SERVICE + "ModelInfer"), body=framed[:20],
                       end_stream=False)
        s3 = c.request(rest_headers(demo, "POST", "/v2/models/simple/infer",
                                    [("content-type", "application/json")]),
                       body=b'{"inputs": [', end_stream=False)
        c.pump(0.05)
        c.rst(s1)
        c.rst(s3)
        st = c.wait(c.request(rest_headers(demo, "GET", "/v2/health/live")))
        assert st.status == 200, st
        assert c.goaway is None


# ------------------------------------------------------------------------------------------
# Flow control
# ------------------------------------------------------------------------------------------
def test_server_respects_small_stream_window(demo, protos):
    pb = protos.pb
    window = 1000
    payload = bytes(range(256)) * 400  # 100 KiB response
    with H2Conn(demo, settings={h2raw.INITIAL_WINDOW_SIZE: window}, auto_window=False) as c:
        c.pump(0.05)
        req = pb.ModelInferRequest(model_name="identity_uint8", id="fc")
        add_input(req, "INPUT0", "UINT8", [1, len(payload)], raw=payload)
        s1 = _infer_call(c, demo, req)
        c.pump(0.2)
        st = c.streams[s1]
        assert len(st.data) <= window, "the server sent %d bytes into a %d-byte window" % (
            len(st.data), window)
        assert not st.done, st
        # a second stream still works while the first one is blocked on flow control
        s3 = c.request(grpc_headers(demo, SERVICE + "ServerLive"), body=grpc_frame(b""),
                       end_stream=True)
        assert _grpc_ok(c.wait(s3), pb.ServerLiveResponse).live
        # open the windows: the rest arrives, intact
        c.window_update(0, 1 << 20)
        c.window_update(s1, 1 << 20)
        resp = _grpc_ok(c.wait(s1), pb.ModelInferResponse)
        assert outputs_of(resp)["OUTPUT0"][2] == payload


def test_large_request_respects_server_window(demo, protos):
    """A 3 MiB gRPC message sent within the server's advertised windows."""
    pb = protos.pb
    payload = bytes(range(251)) * (3 * (1 << 20) // 251)
    with H2Conn(demo) as c:
        c.pump(0.05)
        req = pb.ModelInferRequest(model_name="identity_uint8", id="big")
        add_input(req, "INPUT0", "UINT8", [1, len(payload)], raw=payload)
        resp = _grpc_ok(c.wait(_infer_call(c, demo, req), timeout=10), pb.ModelInferResponse)
        assert outputs_of(resp)["OUTPUT0"][2] == payload


# ------------------------------------------------------------------------------------------
# Stream limits, header blocks
# ------------------------------------------------------------------------------------------
def test_concurrent_stream_limit(demo, protos):
    """Streams beyond SETTINGS_MAX_CONCURRENT_STREAMS are refused: RST_STREAM REFUSED_STREAM
    (a stream error) or, as libnghttp2 does once the limit was acknowledged, GOAWAY
    PROTOCOL_ERROR (RFC 9113 5.1.2). Either way the server goes on serving other connections."""
    pb = protos.pb
    with H2Conn(demo) as c:
        c.pump(0.05)
        limit = c.server_settings.get(h2raw.MAX_CONCURRENT_STREAMS)
        assert limit is not None and 1 <= limit <= 1000, c.server_settings
        open_sids = [c.request(grpc_headers(demo, SERVICE + "ServerLive"), end_stream=False)
                     for _ in range(limit)]
        extra = c.request(grpc_headers(demo, SERVICE + "ServerLive"), end_stream=False)
        try:
            st = c.wait(extra)
            assert st.reset == h2raw.REFUSED_STREAM, st
            for sid in open_sids:  # a stream error only: the others are still served
                c.send_data(sid, grpc_frame(b""), end_stream=True)
            for sid in open_sids:
                assert _grpc_ok(c.wait(sid), pb.ServerLiveResponse).live
        except h2raw.ConnectionClosed:
            assert c.goaway is not None and c.goaway[1] == h2raw.PROTOCOL_ERROR, c.goaway
            assert c.goaway[0] < extra, "GOAWAY last-stream-id %d covers the refused stream %d" \
                % (c.goaway[0], extra)
    with H2Conn(demo) as c2:
        st = c2.wait(c2.request(grpc_headers(demo, SERVICE + "ServerLive"), body=grpc_frame(b""),
                                end_stream=True))
        assert _grpc_ok(st, pb.ServerLiveResponse).live


def test_headers_in_continuation_frames(demo, protos):
    with H2Conn(demo) as c:
        hdrs = grpc_headers(demo, SERVICE + "ModelMetadata", [("x-pad", "p" * 3000)])
        msg = protos.pb.ModelMetadataRequest(name="simple").SerializeToString()
        # HEADERS + 3 CONTINUATION frames (libnghttp2 >= 1.61 / Debian's fix for CVE-2024-28182
        # caps a header block at 8 CONTINUATION frames)
        sid = c.request(hdrs, body=grpc_frame(msg), end_stream=True, split_headers=900)
        resp = _grpc_ok(c.wait(sid), protos.pb.ModelMetadataResponse)
        assert resp.name == "simple"


def test_oversized_header_list_refused_connection_survives(demo):
    with H2Conn(demo) as c:
        c.pump(0.05)
        sid = c.request(rest_headers(demo, "GET", "/v2/health/live",
                                     [("x-big-%d" % i, "v" * 12000) for i in range(6)]))
        st = c.wait(sid)
        assert st.reset is not None or st.status == 431, st
        st = c.wait(c.request(rest_headers(demo, "GET", "/v2/health/live")))
        assert st.status == 200, st


# ------------------------------------------------------------------------------------------
# gRPC details on the wire
# ------------------------------------------------------------------------------------------
def test_grpc_response_headers_and_trailers(demo, protos):
    with H2Conn(demo) as c:
        msg = protos.pb.ModelMetadataRequest(name="simple").SerializeToString()
        st = c.wait(c.request(grpc_headers(demo, SERVICE + "ModelMetadata"),
                              body=grpc_frame(msg), end_stream=True))
        _grpc_ok(st, protos.pb.ModelMetadataResponse)
        assert st.header("content-type") in ("application/grpc", "application/grpc+proto"), st
        assert not any(k.startswith("grpc-") for k, _ in st.headers), \
            "grpc-status belongs in the trailers: %r" % st
        assert all(k.startswith("grpc-") for k, _ in st.trailers), st.trailers


@pytest.mark.parametrize("name", ["ünïcödé", "per%cent", "new\nline", "tab\tand\r\n", "nul\x00",
                                  "\x7f\x01 ctl"])
def test_grpc_message_is_percent_encoded(demo, protos, name):
    """grpc-message carries the error text percent-encoded (bytes outside 0x20-0x7E and '%');
    an error naming odd bytes must still reach the client, never break the stream."""
    msg = protos.pb.ModelMetadataRequest(name=name).SerializeToString()
    with H2Conn(demo) as c:
        st = c.wait(c.request(grpc_headers(demo, SERVICE + "ModelMetadata"),
                              body=grpc_frame(msg), end_stream=True))
        code, text = _grpc_error(st)
        # NOT_FOUND; a NUL can never be part of a model name, INVALID_ARGUMENT is fine too
        assert code == 5 or ("\x00" in name and code == 3), st
        if code == 3:
            return
        raw = st.grpc("grpc-message")
        assert raw is not None and all(0x20 <= ord(ch) <= 0x7E for ch in raw), \
            "grpc-message not percent-encoded: %r" % raw
        decoded = urllib.parse.unquote_to_bytes(raw).decode("utf-8")
        assert name in decoded, "decoded grpc-message %r does not name %r" % (decoded, name)
        assert c.goaway is None


@pytest.mark.parametrize("timeout,ms,want", [("200m", 500, "4"), ("200000u", 500, "4"),
                                             ("99999999n", 500, "4"), ("2S", 50, "0"),
                                             ("1M", 50, "0"), ("1H", 50, "0"),
                                             ("99999999S", 50, "0")])
def test_grpc_timeout_units(demo, protos, timeout, ms, want):
    with H2Conn(demo) as c:
        t0 = time.monotonic()
        st = c.wait(_infer_call(c, demo, slow_request(protos.pb, ms),
                                [("grpc-timeout", timeout)]))
        elapsed = time.monotonic() - t0
        assert st.grpc("grpc-status") == want, st
        if want == "4":
            assert 0.05 < elapsed < 0.45, "DEADLINE_EXCEEDED after %.3f s" % elapsed


def test_grpc_timeout_on_stream(demo, protos):
    """grpc-timeout on ModelStreamInfer: the deadline ends the call (DEADLINE_EXCEEDED) even with
    the client's side still open and a request in flight; the late answer goes nowhere."""
    pb = protos.pb
    with H2Conn(demo) as c:
        req, _, _ = simple_request(pb, req_id="fast")
        body = grpc_frame(req.SerializeToString()) + \
            grpc_frame(slow_request(pb, 500, req_id="slow").SerializeToString())
        t0 = time.monotonic()
        sid = c.request(grpc_headers(demo, SERVICE + "ModelStreamInfer",
                                     [("grpc-timeout", "200m")]), body=body, end_stream=False)
        st = c.wait(sid, timeout=2)
        elapsed = time.monotonic() - t0
        assert st.grpc("grpc-status") == "4" or st.reset is not None, st
        assert elapsed < 0.45, "ended after %.3f s" % elapsed
        ids = [pb.ModelStreamInferResponse.FromString(m).infer_response.id
               for _, m in st.grpc_messages()]
        assert ids == ["fast"], ids
        c.pump(0.4)
        st2 = c.wait(c.request(rest_headers(demo, "GET", "/v2/health/live")))
        assert st2.status == 200


@pytest.mark.parametrize("timeout", ["abc", "", "123", "-5m", "123456789S", "1x"])
def test_grpc_timeout_malformed(demo, protos, timeout):
    """A malformed grpc-timeout is ignored or refused, never a crash or a stuck call."""
    with H2Conn(demo) as c:
        st = c.wait(_infer_call(c, demo, slow_request(protos.pb, 20),
                                [("grpc-timeout", timeout)]))
        assert st.reset is not None or st.grpc("grpc-status") in ("0", "3", "13"), st


def test_unary_without_message(demo, protos):
    with H2Conn(demo) as c:
        st = c.wait(c.request(grpc_headers(demo, SERVICE + "ModelInfer")))  # END_STREAM at once
        code, _ = _grpc_error(st)
        assert code == 3, st  # INVALID_ARGUMENT


def test_request_trailers_end_the_request(demo, protos):
    """A request may end with a trailers HEADERS frame instead of END_STREAM on DATA."""
    with H2Conn(demo) as c:
        sid = c.request(grpc_headers(demo, SERVICE + "ServerLive"), body=grpc_frame(b""),
                        end_stream=False)
        c.send(h2raw.frame(h2raw.HEADERS, h2raw.END_STREAM | h2raw.END_HEADERS, sid,
                           h2raw.hpack_encode([("x-trailer", "1")])))
        assert _grpc_ok(c.wait(sid), protos.pb.ServerLiveResponse).live
        body = json.dumps({"inputs": [{"name": "INPUT0", "datatype": "INT32", "shape": [1, 1],
                                       "data": [5]}]}).encode()
        sid = c.request(rest_headers(demo, "POST", "/v2/models/identity_int32/infer",
                                     [("content-type", "application/json")]),
                        body=body, end_stream=False)
        c.send(h2raw.frame(h2raw.HEADERS, h2raw.END_STREAM | h2raw.END_HEADERS, sid,
                           h2raw.hpack_encode([("x-trailer", "1")])))
        st = c.wait(sid)
        assert st.status == 200 and json.loads(st.data)["outputs"][0]["data"] == [5], st


@pytest.mark.parametrize("path", ["/v2/health/live", "/v2/models/simple"])
def test_rest_head_over_h2(demo, path):
    """HEAD over h2c: the GET's status and headers, no body (or 405), and the server lives."""
    with H2Conn(demo) as c:
        st_get = c.wait(c.request(rest_headers(demo, "GET", path)))
        assert st_get.status == 200, st_get
        st = c.wait(c.request(rest_headers(demo, "HEAD", path)))
        assert st.status in (200, 405), st
        assert st.data == b"", "a HEAD response carries no body: %r" % st
        if st.status == 200:
            assert st.header("content-length") in (None, str(len(st_get.data))), st
        st = c.wait(c.request(rest_headers(demo, "GET", "/v2/health/live")))
        assert st.status == 200, st


def test_content_length_mismatch_over_h2(demo):
    with H2Conn(demo) as c:
        st = c.wait(c.request(rest_headers(demo, "GET", "/v2/models/simple")))
        assert st.status == 200 and int(st.header("content-length")) == len(st.data), st
        # a content-length that disagrees with the DATA sent: the stream is refused
        sid = c.request(rest_headers(demo, "POST", "/v2/models/simple/infer",
                                     [("content-type", "application/json"),
                                      ("content-length", "1000")]),
                        body=b"{}", end_stream=True)
        st = c.wait(sid)
        assert st.reset is not None or st.status == 400, st
        st = c.wait(c.request(rest_headers(demo, "GET", "/v2/health/live")))
        assert st.status == 200, st


def test_empty_message_server_live(demo, protos):
    with H2Conn(demo) as c:
        st = c.wait(c.request(grpc_headers(demo, SERVICE + "ServerMetadata"),
                              body=grpc_frame(b""), end_stream=True))
        assert "classification" in _grpc_ok(st, protos.pb.ServerMetadataResponse).extensions


def test_grpc_message_split_across_many_frames(demo, protos):
    pb = protos.pb
    req, fa, fb = simple_request(pb, rows=8, req_id="split")
    framed = grpc_frame(req.SerializeToString())
    with H2Conn(demo) as c:
        sid = c.request(grpc_headers(demo, SERVICE + "ModelInfer"), end_stream=False)
        for i in range(0, len(framed), 7):  # 7-byte DATA frames: the prefix is split too
            c.send_data(sid, framed[i:i + 7])
        c.send_data(sid, b"", end_stream=True)
        resp = _grpc_ok(c.wait(sid), pb.ModelInferResponse)
        assert resp.id == "split"
        assert decode_raw("INT32", outputs_of(resp)["OUTPUT0"][2]) == \
            [wrap32(x + y) for x, y in zip(fa, fb)]


def test_stream_infer_many_messages_in_one_frame(demo, protos):
    pb = protos.pb
    data = b""
    for i in range(5):
        req, _, _ = simple_request(pb, req_id="b%d" % i)
        data += grpc_frame(req.SerializeToString())
    with H2Conn(demo) as c:
        st = c.wait(c.request(grpc_headers(demo, SERVICE + "ModelStreamInfer"), body=data,
                              end_stream=True))
        assert st.grpc("grpc-status") == "0", st
        ids = sorted(pb.ModelStreamInferResponse.FromString(m).infer_response.id
                     for _, m in st.grpc_messages())
        assert ids == ["b%d" % i for i in range(5)], st


# ------------------------------------------------------------------------------------------
# Frames the server must refuse
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("what", ["even_stream", "data_on_stream_0", "window_update_zero",
                                  "headers_on_closed_stream", "settings_bad_length",
                                  "data_on_idle_stream", "rst_on_idle_stream"])
def test_protocol_errors_close_connection(demo, protos, what):
    with H2Conn(demo) as c:
        c.pump(0.05)
        if what == "even_stream":
            c.request(rest_headers(demo, "GET", "/v2/health/live"), sid=2)
        elif what == "data_on_stream_0":
            c.send(h2raw.frame(h2raw.DATA, 0, 0, b"xx"))
        elif what == "window_update_zero":
            c.send(h2raw.frame(h2raw.WINDOW_UPDATE, 0, 0, struct.pack(">I", 0)))
        elif what == "headers_on_closed_stream":
            c.wait(c.request(rest_headers(demo, "GET", "/v2/health/live")))
            c.request(rest_headers(demo, "GET", "/v2/health/live"), sid=1)
        elif what == "settings_bad_length":
            c.send(h2raw.frame(h2raw.SETTINGS, 0, 0, b"\x00\x01\x00"))
        elif what == "data_on_idle_stream":
            c.send(h2raw.frame(h2raw.DATA, 0, 9, b"xx"))
        elif what == "rst_on_idle_stream":
            c.send(h2raw.frame(h2raw.RST_STREAM, 0, 11, struct.pack(">I", 8)))
        closed = c.wait_closed(3.0)
        errs = [f for f in c.frames if f[0] == h2raw.RST_STREAM]
        assert closed or errs, "no GOAWAY/close nor RST_STREAM after %s" % what
        if closed:
            assert c.goaway is not None and c.goaway[1] != h2raw.NO_ERROR, \
                "%s: closed without a GOAWAY carrying an error (%r)" % (what, c.goaway)
    with H2Conn(demo) as c2:  # everyone else is still served
        st = c2.wait(c2.request(rest_headers(demo, "GET", "/v2/health/ready")))
        assert st.status == 200, st
    with RawConn(demo) as h1:
        h1.send(http_request("GET", "/v2/health/live"))
        assert h1.read_response().status == 200


# Malformed request header blocks (RFC 9113 8.1.1, 8.2, 8.3). Each is a stream error: the
# stream is reset with PROTOCOL_ERROR and the connection serves the next request. The library
# makes these checks (lib/transport/h2_fields.c; nghttp2's own are off), as nghttp2 1.52 made
# them before: these cases were written against nghttp2's and pin that behaviour.
def _live(demo):
    return rest_headers(demo, "GET", "/v2/health/live")


def _authority(demo):
    return "%s:%d" % (demo.host, demo.port)


MALFORMED_HEADER_BLOCKS = {
    "upper_case_name": lambda d: _live(d) + [("X-Trace", "1")],
    "pseudo_after_regular": lambda d: [(":method", "GET"), (":scheme", "http"), ("x-a", "1"),
                                       (":path", "/v2/health/live"), (":authority", _authority(d))],
    "pseudo_twice": lambda d: _live(d)[:3] + [(":path", "/v2/health/ready")] + _live(d)[3:],
    "unknown_pseudo": lambda d: _live(d) + [(":color", "blue")],
    "response_pseudo": lambda d: _live(d) + [(":status", "200")],
    "no_method": lambda d: [h for h in _live(d) if h[0] != ":method"],
    "no_scheme": lambda d: [h for h in _live(d) if h[0] != ":scheme"],
    "no_path": lambda d: [h for h in _live(d) if h[0] != ":path"],
    "no_authority_nor_host": lambda d: [h for h in _live(d) if h[0] != ":authority"],
    "empty_path": lambda d: [(k, "" if k == ":path" else v) for k, v in _live(d)],
    "relative_path": lambda d: [(k, "v2/health/live" if k == ":path" else v) for k, v in _live(d)],
    "space_in_method": lambda d: [(k, "G ET" if k == ":method" else v) for k, v in _live(d)],
    "connection": lambda d: _live(d) + [("connection", "keep-alive")],
    "keep_alive": lambda d: _live(d) + [("keep-alive", "timeout=5")],
    "proxy_connection": lambda d: _live(d) + [("proxy-connection", "keep-alive")],
    "transfer_encoding": lambda d: _live(d) + [("transfer-encoding", "chunked")],
    "upgrade": lambda d: _live(d) + [("upgrade", "h2c")],
    "te_not_trailers": lambda d: _live(d) + [("te", "gzip")],
    "content_length_twice": lambda d: _live(d) + [("content-length", "0"), ("content-length", "0")],
    "content_length_not_a_number": lambda d: _live(d) + [("content-length", "12x")],
    # a regular field's bytes too: reset, not ignored (nghttp2 1.52 without an on_invalid_header
    # callback, whose behaviour h2_fields.c keeps)
    "cr_lf_in_value": lambda d: _live(d) + [("x-note", "a\r\nb")],
    "nul_in_value": lambda d: _live(d) + [("x-note", "a\x00b")],
    "space_around_value": lambda d: _live(d) + [("x-note", " padded ")],
    "space_in_name": lambda d: _live(d) + [("x note", "1")],
    "empty_name": lambda d: _live(d) + [("", "1")],
    "colon_alone": lambda d: _live(d) + [(":", "1")],
    "upper_case_pseudo": lambda d: [(k.upper() if k == ":path" else k, v) for k, v in _live(d)],
    "high_byte_in_name": lambda d: _live(d) + [(b"x-\xe9", "1")],
    "del_in_value": lambda d: _live(d) + [("x-note", "a\x7fb")],
    "control_in_value": lambda d: _live(d) + [("x-note", "a\x01b")],
    "tab_ending_value": lambda d: _live(d) + [("x-note", "a\t")],
    "space_in_path": lambda d: [(k, "/v2/health/live x" if k == ":path" else v) for k, v in _live(d)],
    "asterisk_path_not_options": lambda d: [(k, "*" if k == ":path" else v) for k, v in _live(d)],
    "empty_method": lambda d: [(k, "" if k == ":method" else v) for k, v in _live(d)],
    "bad_scheme": lambda d: [(k, "1http" if k == ":scheme" else v) for k, v in _live(d)],
    "empty_authority": lambda d: [(k, "" if k == ":authority" else v) for k, v in _live(d)],
    "bad_authority": lambda d: [(k, "local host" if k == ":authority" else v) for k, v in _live(d)],
    "empty_host": lambda d: [h for h in _live(d) if h[0] != ":authority"] + [("host", "")],
    "host_twice": lambda d: _live(d) + [("host", "a"), ("host", "b")],
    "bad_host": lambda d: _live(d) + [("host", "a/b")],
    "protocol_pseudo": lambda d: [(":method", "CONNECT"), (":protocol", "websocket")] + _live(d)[1:],
    "connect_with_path": lambda d: [(":method", "CONNECT"), (":path", "/"),
                                    (":authority", _authority(d))],
    "connect_with_scheme": lambda d: [(":method", "CONNECT"), (":scheme", "http"),
                                      (":authority", _authority(d))],
    "connect_without_authority": lambda d: [(":method", "CONNECT"), ("host", _authority(d))],
    "content_length_empty": lambda d: _live(d) + [("content-length", "")],
    "content_length_negative": lambda d: _live(d) + [("content-length", "-1")],
    "content_length_overflow": lambda d: _live(d) + [("content-length", "99999999999999999999")],
    # a GET with END_STREAM on its HEADERS has no body: a content-length says otherwise
    "content_length_without_body": lambda d: _live(d) + [("content-length", "3")],
}


@pytest.mark.parametrize("what", sorted(MALFORMED_HEADER_BLOCKS))
def test_malformed_request_header_block_resets_the_stream(demo, what):
    with H2Conn(demo) as c:
        st = c.wait(c.request(MALFORMED_HEADER_BLOCKS[what](demo)))
        assert st.reset == h2raw.PROTOCOL_ERROR, "%s: want RST_STREAM PROTOCOL_ERROR, got %r" % (
            what, st)
        assert st.blocks == [], "%s: answered as well as reset: %r" % (what, st)
        ok = c.wait(c.request(_live(demo)))  # the connection goes on
        assert ok.status == 200 and c.goaway is None, (what, ok, c.goaway)


def test_pseudo_header_in_request_trailers_resets_the_stream(demo):
    with H2Conn(demo) as c:
        sid = c.request(rest_headers(demo, "POST", "/v2/models/simple/infer",
                                     [("content-type", "application/json")]),
                        body=json.dumps(simple_body(rows=1)).encode(), end_stream=False)
        c.send(h2raw.frame(h2raw.HEADERS, h2raw.END_STREAM | h2raw.END_HEADERS, sid,
                           h2raw.hpack_encode([(":path", "/v2/health/ready")])))
        st = c.wait(sid)
        assert st.reset == h2raw.PROTOCOL_ERROR, st
        assert c.wait(c.request(_live(demo))).status == 200


@pytest.mark.parametrize("sent", ["short", "long"])
@pytest.mark.parametrize("kind", ["rest", "grpc"])
def test_body_against_content_length_resets_the_stream(demo, protos, kind, sent):
    """DATA that ends short of its content-length, or runs past it, is malformed (RFC 9113
    8.1.1): RST_STREAM PROTOCOL_ERROR, nothing answered, and the connection goes on."""
    if kind == "rest":
        body = json.dumps(simple_body(rows=1)).encode()
        hdrs = rest_headers(demo, "POST", "/v2/models/simple/infer",
                            [("content-type", "application/json")])
    else:
        body = grpc_frame(simple_request(protos.pb)[0].SerializeToString())
        hdrs = grpc_headers(demo, SERVICE + "ModelInfer")
    claimed = len(body) + 10 if sent == "short" else len(body) - 10
    with H2Conn(demo) as c:
        st = c.wait(c.request(hdrs + [("content-length", str(claimed))], body=body,
                              end_stream=True))
        assert st.reset == h2raw.PROTOCOL_ERROR and st.blocks == [], (kind, sent, st)
        # the same body with its length right is served
        st = c.wait(c.request(hdrs + [("content-length", str(len(body)))], body=body,
                              end_stream=True))
        assert st.reset is None and st.status == 200, st
        if kind == "grpc":
            assert st.grpc("grpc-status") == "0", st
        assert c.goaway is None, c.goaway


def test_request_trailers_without_end_stream_reset_the_stream(demo):
    """A second HEADERS on a request is its trailers, and must end the stream (RFC 9113 8.1)."""
    with H2Conn(demo) as c:
        sid = c.request(rest_headers(demo, "POST", "/v2/models/simple/infer",
                                     [("content-type", "application/json")]),
                        body=json.dumps(simple_body(rows=1)).encode(), end_stream=False)
        c.send(h2raw.frame(h2raw.HEADERS, h2raw.END_HEADERS, sid,
                           h2raw.hpack_encode([("x-trailer", "1")])))
        st = c.wait(sid)
        assert st.reset == h2raw.PROTOCOL_ERROR and st.blocks == [], st
        assert c.wait(c.request(_live(demo))).status == 200


@pytest.mark.parametrize("trailer", [("connection", "close"), ("te", "gzip"), ("X-Up", "1"),
                                     ("x-note", "a\r\nb"), ("content-length", "1")])
def test_malformed_request_trailers_reset_the_stream(demo, trailer):
    """Trailers obey the header rules (and a content-length there must agree with the DATA)."""
    body = json.dumps(simple_body(rows=1)).encode()
    with H2Conn(demo) as c:
        sid = c.request(rest_headers(demo, "POST", "/v2/models/simple/infer",
                                     [("content-type", "application/json"),
                                      ("content-length", str(len(body)))]),
                        body=body, end_stream=False)
        c.send(h2raw.frame(h2raw.HEADERS, h2raw.END_STREAM | h2raw.END_HEADERS, sid,
                           h2raw.hpack_encode([trailer])))
        st = c.wait(sid)
        assert st.reset == h2raw.PROTOCOL_ERROR and st.blocks == [], (trailer, st)
        assert c.wait(c.request(_live(demo))).status == 200


@pytest.mark.parametrize("hdrs", [
    # what the field rules allow: served (or answered by the router), never reset
    [(":method", "OPTIONS"), (":scheme", "http"), (":path", "*"), (":authority", "a")],
    [(":method", "GET"), (":scheme", "urn"), (":path", "v2/health/live"), (":authority", "a")],
    [(":method", "CONNECT"), (":authority", "a:1")],
    [(":method", "GET"), (":scheme", "HTTP"), (":path", "/v2/health/live"), ("host", "a")],
    [(":method", "GET"), (":scheme", "http"), (":path", "/v2/health/live"), (":authority", "a"),
     ("te", "Trailers"), ("x-note", "tab\tinside, \xe9 high"), ("x-empty", ""),
     ("!#$%&'*+-.^_`|~09az", "token")],
], ids=["options_asterisk", "other_scheme", "connect", "upper_scheme_host", "odd_but_valid"])
def test_well_formed_unusual_request_header_blocks_are_answered(demo, hdrs):
    with H2Conn(demo) as c:
        st = c.wait(c.request(hdrs))
        assert st.reset is None and st.status is not None, st
        if hdrs[0][1] == "GET" and hdrs[2][1].startswith("/"):
            assert st.status == 200, st
        else:  # no route takes them: the router's answer, not a reset
            assert 400 <= st.status < 500, st
        assert c.wait(c.request(_live(demo))).status == 200


def test_host_field_stands_for_authority(demo):
    """The control for no_authority_nor_host above: `host` in place of `:authority` is served."""
    with H2Conn(demo) as c:
        hdrs = [h for h in _live(demo) if h[0] != ":authority"] + [("host", _authority(demo))]
        st = c.wait(c.request(hdrs))
        assert st.reset is None and st.status == 200, st


def test_headers_on_a_stream_the_client_ended_is_stream_closed(demo):
    """The server keeps no closed streams for nghttp2's priority tree; the last ones the client
    ended are still known: HEADERS on one is a connection error STREAM_CLOSED (RFC 9113 5.1),
    even after other streams have come and gone."""
    with H2Conn(demo) as c:
        first = c.request(rest_headers(demo, "GET", "/v2/health/live"))
        c.wait(first)
        for _ in range(5):
            c.wait(c.request(rest_headers(demo, "GET", "/v2/health/ready")))
        c.request(rest_headers(demo, "GET", "/v2/health/live"), sid=first)
        assert c.wait_closed(3.0), "HEADERS on closed stream %d: still open" % first
        assert c.goaway is not None and c.goaway[1] == h2raw.STREAM_CLOSED, c.goaway


def test_data_on_a_closed_stream_is_dropped(demo, protos):
    """DATA on a stream that has closed is dropped (as h2o does; nghttp2 reports nothing for
    it): the connection goes on, and the bytes count against its window only."""
    pb = protos.pb
    with H2Conn(demo) as c:
        first = c.request(rest_headers(demo, "GET", "/v2/health/live"))
        c.wait(first)
        c.send(h2raw.frame(h2raw.DATA, h2raw.END_STREAM, first, b"late bytes"))
        st = c.wait(c.request(grpc_headers(demo, SERVICE + "ServerLive"), body=grpc_frame(b""),
                              end_stream=True))
        assert _grpc_ok(st, pb.ServerLiveResponse).live
        assert c.goaway is None, c.goaway


def test_data_after_the_server_ended_a_stream_early_is_not_an_error(demo, protos):
    """A stream the server answered (and reset) before the client finished sending may still
    receive the client's frames in flight: they are dropped, the connection goes on."""
    pb = protos.pb
    with H2Conn(demo) as c:
        sid = c.request(grpc_headers(demo, SERVICE + "NoSuchMethod"), end_stream=False)
        st = c.wait(sid)
        code, _ = _grpc_error(st)
        assert code == 12, st  # UNIMPLEMENTED, answered before the client's END_STREAM
        c.send_data(sid, grpc_frame(b""), end_stream=True)
        st = c.wait(c.request(grpc_headers(demo, SERVICE + "ServerLive"), body=grpc_frame(b""),
                              end_stream=True))
        assert _grpc_ok(st, pb.ServerLiveResponse).live
        assert c.goaway is None, c.goaway


def test_ping_and_settings_ack(demo):
    with H2Conn(demo) as c:
        c.ping(b"abcdefgh")
        deadline = time.monotonic() + T
        while (not c.pings or not c.settings_acked) and time.monotonic() < deadline:
            c.read_frame(deadline - time.monotonic())
        assert c.pings == [b"abcdefgh"], c.frames
        assert c.settings_acked, "our SETTINGS were never acknowledged"
        assert c.frames[0][0] == h2raw.SETTINGS and not c.frames[0][1] & h2raw.ACK, \
            "the server's first frame must be its SETTINGS"


def test_client_goaway_then_close(demo, protos):
    """The client says GOAWAY with a call in flight, then drops the connection."""
    with H2Conn(demo) as c:
        _infer_call(c, demo, slow_request(protos.pb, 200))
        c.send(h2raw.frame(h2raw.GOAWAY, 0, 0, struct.pack(">II", 1, 0)))
    time.sleep(0.3)
    with H2Conn(demo) as c2:
        st = c2.wait(c2.request(rest_headers(demo, "GET", "/v2/health/live")))
        assert st.status == 200


# ------------------------------------------------------------------------------------------
# Responses abandoned mid-transfer (the server holds tensors by reference while sending)
# ------------------------------------------------------------------------------------------
def _big_identity(pb, n, rid):
    req = pb.ModelInferRequest(model_name="identity_uint8", id=rid)
    add_input(req, "INPUT0", "UINT8", [1, n], raw=bytes(range(256)) * (n // 256))
    return req


@pytest.mark.parametrize("how", ["rst_stream", "close_socket"])
def test_response_abandoned_mid_transfer(demo, protos, how):
    pb = protos.pb
    n = 4 << 20
    c = H2Conn(demo, settings={h2raw.INITIAL_WINDOW_SIZE: 65535}, auto_window=False)
    try:
        c.pump(0.05)
        c.window_update(0, 1 << 24)  # the connection may carry it all; the stream may not
        sids = [_infer_call(c, demo, _big_identity(pb, n, "big%d" % i)) for i in range(3)]
        deadline = time.monotonic() + T
        while sum(len(c.streams[s].data) for s in sids if s in c.streams) < 3 * 60000 and \
                time.monotonic() < deadline:
            c.read_frame(0.2)
        assert all(0 < len(c.streams[s].data) <= 65535 for s in sids), \
            [len(c.streams[s].data) for s in sids if s in c.streams]
        if how == "rst_stream":
            for s in sids[:2]:
                c.rst(s, h2raw.CANCEL)
            c.window_update(sids[2], 1 << 24)
            resp = _grpc_ok(c.wait(sids[2]), pb.ModelInferResponse)
            assert outputs_of(resp)["OUTPUT0"][2] == bytes(range(256)) * (n // 256)
            st = c.wait(c.request(rest_headers(demo, "GET", "/v2/health/live")))
            assert st.status == 200
    finally:
        c.close()
    time.sleep(0.1)
    with H2Conn(demo) as c2:
        resp = _grpc_ok(c2.wait(_infer_call(c2, demo, _big_identity(pb, 1 << 20, "again")),
                                timeout=10), pb.ModelInferResponse)
        assert resp.id == "again"


def test_stream_infer_cancelled_mid_responses(demo, protos):
    """A ModelStreamInfer with big answers queued, reset by the client mid-transfer."""
    pb = protos.pb
    data = b"".join(grpc_frame(_big_identity(pb, 1 << 20, "s%d" % i).SerializeToString())
                    for i in range(4))
    with H2Conn(demo, settings={h2raw.INITIAL_WINDOW_SIZE: 65535}, auto_window=False) as c:
        c.pump(0.05)
        c.window_update(0, 1 << 24)
        sid = c.request(grpc_headers(demo, SERVICE + "ModelStreamInfer"), body=data,
                        end_stream=True)
        deadline = time.monotonic() + T
        while len(c.streams[sid].data) < 60000 and time.monotonic() < deadline:
            c.read_frame(0.2)
        c.rst(sid, h2raw.CANCEL)
        c.pump(0.1)
        st = c.wait(c.request(grpc_headers(demo, SERVICE + "ServerLive"), body=grpc_frame(b""),
                              end_stream=True))
        assert _grpc_ok(st, pb.ServerLiveResponse).live


@pytest.mark.parametrize("max_frame", [None, 1 << 20])
def test_data_frames_follow_the_peers_max_frame_size(demo, protos, max_frame):
    """Response DATA frames are as large as the client allows (grpcio advertises 4 MiB), never
    larger: 16 KiB by default."""
    pb = protos.pb
    n = 4 << 20
    settings = {h2raw.INITIAL_WINDOW_SIZE: 16 << 20}
    if max_frame:
        settings[h2raw.MAX_FRAME_SIZE] = max_frame
    with H2Conn(demo, settings=settings) as c:
        c.window_update(0, 16 << 20)
        sid = _infer_call(c, demo, _big_identity(pb, n, "frames"))
        resp = _grpc_ok(c.wait(sid, timeout=10), pb.ModelInferResponse)
        assert outputs_of(resp)["OUTPUT0"][2] == bytes(range(256)) * (n // 256)
        sizes = [len(f[3]) for f in c.frames if f[0] == h2raw.DATA and f[2] == sid]
        assert max(sizes) <= (max_frame or 16384), sizes[:20]
        if max_frame:
            assert max(sizes) > 16384, "16 KiB frames although the client takes %d" % max_frame


# ------------------------------------------------------------------------------------------
# Read batching: while a large message is half received the server asks the kernel to wake
# it only for big batches (SO_RCVLOWAT); a client that pauses must still be heard.
# ------------------------------------------------------------------------------------------
def _half_sent_big_call(c, demo, pb, n, sent):
    """Open a ModelInfer call whose message is n bytes of tensor and send only `sent` bytes of
    it: the server now waits for far more than it has."""
    framed = grpc_frame(_big_identity(pb, n, "half").SerializeToString())
    sid = c.request(grpc_headers(demo, SERVICE + "ModelInfer"), body=framed[:sent],
                    end_stream=False)
    return sid, framed


def _time_until(c, pred, timeout):
    t0 = time.monotonic()
    deadline = t0 + timeout
    while not pred() and time.monotonic() < deadline:
        c.read_frame(deadline - time.monotonic())
    assert pred(), "nothing within %.1f s: %r" % (timeout, c.frames[-5:])
    return time.monotonic() - t0


def test_ping_answered_while_a_large_message_is_half_received(demo, protos):
    """A PING that arrives behind half a 4 MiB message is answered (the batch it waits in is
    cut short), and the message then completes intact."""
    pb = protos.pb
    n = 4 << 20
    with H2Conn(demo) as c:
        c.pump(0.05)
        sid, framed = _half_sent_big_call(c, demo, pb, n, 128 << 10)
        c.pump(0.05)
        c.ping(b"midmessg")
        _time_until(c, lambda: c.pings == [b"midmessg"], T)
        c.send_data(sid, framed[128 << 10:], end_stream=True)
        resp = _grpc_ok(c.wait(sid, timeout=10), pb.ModelInferResponse)
        assert outputs_of(resp)["OUTPUT0"][2] == bytes(range(256)) * (n // 256)


def test_new_call_answered_after_a_large_message_is_cancelled_half_way(demo, protos):
    """RST_STREAM on a half-sent 4 MiB message, then a small call on the same connection: the
    server reads the few bytes that follow and answers."""
    pb = protos.pb
    with H2Conn(demo) as c:
        c.pump(0.05)
        sid, _ = _half_sent_big_call(c, demo, pb, 4 << 20, 200 << 10)
        c.pump(0.05)
        c.rst(sid)
        st = c.wait(c.request(grpc_headers(demo, SERVICE + "ServerLive"), body=grpc_frame(b""),
                              end_stream=True))
        assert _grpc_ok(st, pb.ServerLiveResponse).live
        assert c.goaway is None


def test_slow_sender_of_a_large_message_is_served(demo, protos):
    """A client that trickles a 1 MiB message in 32 KiB pieces with pauses between them (each
    pause longer than the batching allows to wait) gets its complete answer."""
    pb = protos.pb
    n = 1 << 20
    with H2Conn(demo) as c:
        c.pump(0.05)
        sid, framed = _half_sent_big_call(c, demo, pb, n, 0)
        for i in range(0, len(framed), 32 << 10):
            c.send_data(sid, framed[i:i + (32 << 10)], end_stream=i + (32 << 10) >= len(framed))
            c.pump(0.02)
        resp = _grpc_ok(c.wait(sid, timeout=10), pb.ModelInferResponse)
        assert outputs_of(resp)["OUTPUT0"][2] == bytes(range(256)) * (n // 256)


# ------------------------------------------------------------------------------------------
# Outputs by reference: identity_* hands its input back (isv_request_set_output, ISV_STATIC),
# so the response refers to the request body until it is written.
# ------------------------------------------------------------------------------------------
def test_rest_binary_output_refers_to_the_request_body_over_h2(start_demo):
    """REST over h2c, binary tensor extension: the input is used in place in the body and the
    output is that same memory; the body must outlive the response. MALLOC_PERTURB_ makes glibc
    overwrite freed memory, so a body freed too early shows as wrong bytes."""
    d = start_demo(env={"MALLOC_PERTURB_": "165"})
    n = 16384  # FP32 elements: 64 KiB, below glibc's mmap threshold
    raw = struct.pack("<%df" % n, *[float(i % 1000) for i in range(n)])
    head = ('{"inputs":[{"name":"INPUT0","shape":[1,%d],"datatype":"FP32","parameters":'
            '{"binary_data_size":%d}}],"parameters":{"binary_data_output":true}}' % (n, len(raw)))
    head = (head + " " * (-len(head) % 64)).encode()  # the tensor lands aligned: used in place
    with H2Conn(d) as c:
        for i in range(3):
            sid = c.request(rest_headers(d, "POST", "/v2/models/identity_fp32/infer",
                                         [("inference-header-content-length", str(len(head))),
                                          ("content-type", "application/octet-stream")]),
                            body=head + raw, end_stream=True)
            st = c.wait(sid)
            assert st.status == 200, st
            hl = int(st.header("inference-header-content-length"))
            assert json.loads(st.data[:hl])["outputs"][0]["parameters"]["binary_data_size"] == \
                len(raw)
            assert st.data[hl:] == raw, "round %d: the output bytes differ from the input" % i


def test_client_may_send_1mib_data_frames(demo, protos):
    """The server advertises SETTINGS_MAX_FRAME_SIZE 1 MiB: a 3 MiB message in 1 MiB DATA frames
    is taken whole; a frame one byte over the limit is a connection error (FRAME_SIZE_ERROR)."""
    pb = protos.pb
    n = 3 << 20
    with H2Conn(demo) as c:
        c.pump(0.05)
        assert c.server_settings.get(h2raw.MAX_FRAME_SIZE) == 1 << 20, c.server_settings
        sid = _infer_call(c, demo, _big_identity(pb, n, "bigframes"))
        resp = _grpc_ok(c.wait(sid, timeout=10), pb.ModelInferResponse)
        assert outputs_of(resp)["OUTPUT0"][2] == bytes(range(256)) * (n // 256)
    with H2Conn(demo) as c:
        c.pump(0.05)
        sid = c.request(grpc_headers(demo, SERVICE + "ModelInfer"), body=None, end_stream=False)
        # the frame's header and the start of its payload: the server judges the header alone and
        # closes; sending all 1 MiB + 1 raced that close (EPIPE on a loaded machine)
        over = h2raw.frame(h2raw.DATA, 0, sid, b"\0" * ((1 << 20) + 1))
        c.send(over[:9 + 1024])
        assert c.wait_closed(T), "the connection survived an oversized frame"
        assert c.goaway is not None and c.goaway[1] == h2raw.FRAME_SIZE_ERROR, c.goaway


# ------------------------------------------------------------------------------------------
# A REST request's body must keep arriving over HTTP/2 too (the header timeout, as HTTP/1.1's
# 408); gRPC streams may idle (streaming calls do), bounded only by grpc-timeout.
# ------------------------------------------------------------------------------------------
BODY_MS = 300


def test_rest_body_stalled_over_h2_gets_408_then_rst(start_demo):
    d = start_demo("--header-timeout-ms", str(BODY_MS))
    with H2Conn(d) as c:
        c.pump(0.05)
        t0 = time.monotonic()
        sid = c.request(rest_headers(d, "POST", "/v2/models/simple/infer",
                                     [("content-type", "application/json")]),
                        body=b'{"inputs": [', end_stream=False)
        st = c.wait(sid, timeout=3)
        elapsed = time.monotonic() - t0
        assert st.status == 408, st
        assert "not received in time" in json.loads(st.data)["error"], st
        assert BODY_MS / 1000 * 0.8 <= elapsed < 2.0, "408 after %.2f s" % elapsed
        c.pump(0.1)
        assert any(f[0] == h2raw.RST_STREAM and f[2] == sid for f in c.frames), \
            "no RST_STREAM after the 408: the stream stays open"
        # the connection is fine
        st2 = c.wait(c.request(rest_headers(d, "GET", "/v2/health/live")))
        assert st2.status == 200, st2


def test_rest_body_trickled_over_h2_within_the_timeout_is_served(start_demo):
    """Each DATA frame restarts the timeout: a body sent in 10 pieces 100 ms apart (1 s in all,
    each gap shorter than the 300 ms timeout) is answered."""
    d = start_demo("--header-timeout-ms", str(BODY_MS))
    body = json.dumps(simple_body(req_id="trickle")).encode()
    step = len(body) // 10 + 1
    with H2Conn(d) as c:
        c.pump(0.05)
        sid = c.request(rest_headers(d, "POST", "/v2/models/simple/infer",
                                     [("content-type", "application/json")]),
                        body=None, end_stream=False)
        for i in range(0, len(body), step):
            time.sleep(0.1)
            c.send_data(sid, body[i:i + step], end_stream=i + step >= len(body))
        st = c.wait(sid, timeout=5)
        assert st.status == 200, st
        assert json.loads(st.data)["id"] == "trickle"


def test_grpc_stream_may_idle_longer_than_the_body_timeout(start_demo, protos):
    """A gRPC call that opens and sends its message only after twice the timeout is served:
    the REST body timeout does not apply to gRPC streams."""
    d = start_demo("--header-timeout-ms", str(BODY_MS))
    pb = protos.pb
    with H2Conn(d) as c:
        c.pump(0.05)
        sid = c.request(grpc_headers(d, SERVICE + "ServerLive"), body=None, end_stream=False)
        c.pump(2 * BODY_MS / 1000)
        assert not c.streams[sid].done, c.streams[sid]
        c.send_data(sid, grpc_frame(b""), end_stream=True)
        assert _grpc_ok(c.wait(sid), pb.ServerLiveResponse).live
