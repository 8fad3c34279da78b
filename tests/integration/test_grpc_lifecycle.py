"""gRPC / HTTP/2 against demos started with their own flags: message limits, idle timeout,
strict readiness, and SIGTERM with calls and streams in flight (each demo must exit 0)."""
import json
import queue
import signal
import threading
import time

import grpc
import pytest

import h2raw
from grpc_stubs import (SERVICE, add_input, encode_raw, expect_rpc_error, grpc_frame,
                        make_channel, outputs_of, simple_request, slow_request)
from grpc_stubs import protos  # noqa: F401 (fixture)
from h2raw import H2Conn, grpc_headers, rest_headers

T = 5.0


def _stubs(protos, d):
    ch = make_channel(d)
    grpc.channel_ready_future(ch).result(timeout=T)
    return ch, protos.pb_grpc.GRPCInferenceServiceStub(ch), protos.health_grpc.HealthStub(ch)


def _uint8_request(pb, n):
    req = pb.ModelInferRequest(model_name="identity_uint8")
    add_input(req, "INPUT0", "UINT8", [1, n], raw=b"\x07" * n)
    return req


def test_max_body_bytes_applies_to_grpc_and_h2(start_demo, protos):
    d = start_demo("--max-body-bytes", "4096")
    ch, stub, _ = _stubs(protos, d)
    try:
        resp = stub.ModelInfer(_uint8_request(protos.pb, 3000), timeout=T)
        assert outputs_of(resp)["OUTPUT0"][2] == b"\x07" * 3000
        expect_rpc_error(stub.ModelInfer, grpc.StatusCode.RESOURCE_EXHAUSTED,
                         request=_uint8_request(protos.pb, 5000), timeout=T)
        assert stub.ServerLive(protos.pb.ServerLiveRequest(), timeout=T).live
        # ModelStreamInfer: the limit holds per message
        big, small = _uint8_request(protos.pb, 5000), _uint8_request(protos.pb, 100)
        with pytest.raises(grpc.RpcError) as ei:
            list(stub.ModelStreamInfer(iter([small, big]), timeout=T))
        assert ei.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, ei.value
    finally:
        ch.close()
    # REST over h2c: 413 JSON
    with H2Conn(d) as c:
        body = json.dumps({"inputs": [{"name": "INPUT0", "datatype": "UINT8", "shape": [1, 3000],
                                       "data": [7] * 3000}]}).encode()
        st = c.wait(c.request(rest_headers(d, "POST", "/v2/models/identity_uint8/infer",
                                           [("content-type", "application/json")]),
                              body=body, end_stream=True))
        assert st.status == 413, st
        assert "error" in json.loads(st.data), st
        st = c.wait(c.request(rest_headers(d, "GET", "/v2/health/live")))
        assert st.status == 200, st


def test_idle_timeout_spares_active_streams(start_demo, protos):
    """--idle-timeout-ms 300: a call running for 600 ms is not cut by the idle timer; an idle
    h2 connection is closed afterwards (preferably with GOAWAY)."""
    d = start_demo("--idle-timeout-ms", "300")
    with H2Conn(d) as c:
        sid = c.request(grpc_headers(d, SERVICE + "ModelInfer"),
                        body=grpc_frame(slow_request(protos.pb, 600).SerializeToString()),
                        end_stream=True)
        st = c.wait(sid, timeout=3)
        assert st.grpc("grpc-status") == "0", st
        t0 = time.monotonic()
        assert c.wait_closed(3.0), "idle h2 connection not closed"
        assert time.monotonic() - t0 < 1.5
        if c.goaway is not None:
            assert c.goaway[1] == h2raw.NO_ERROR, c.goaway
    # a half-open gRPC stream that sends its message slowly is also "active"
    with H2Conn(d) as c:
        req, _, _ = simple_request(protos.pb, req_id="trickle")
        framed = grpc_frame(req.SerializeToString())
        sid = c.request(grpc_headers(d, SERVICE + "ModelInfer"), end_stream=False)
        for i in range(0, len(framed), len(framed) // 4 + 1):
            c.pump(0.2)
            c.send_data(sid, framed[i:i + len(framed) // 4 + 1])
        c.send_data(sid, b"", end_stream=True)
        st = c.wait(sid)
        assert st.grpc("grpc-status") == "0", st


def test_strict_readiness_grpc_matches_rest(start_demo, protos):
    d = start_demo("--strict-readiness")
    ch, stub, health = _stubs(protos, d)
    try:
        import requests
        rest = requests.get(d.url("/v2/health/ready"), timeout=T)
        ready = stub.ServerReady(protos.pb.ServerReadyRequest(), timeout=T).ready
        assert ready is (rest.status_code == 200), (ready, rest.status_code, rest.text)
        assert ready is False, "`loading` is not ready: strict readiness says the server is not"
        hp = protos.health_pb
        r = health.Check(hp.HealthCheckRequest(service=""), timeout=T)
        assert r.status == hp.HealthCheckResponse.NOT_SERVING, r
        # a ready model stays ready/SERVING
        r = health.Check(hp.HealthCheckRequest(service="simple"), timeout=T)
        assert r.status == hp.HealthCheckResponse.SERVING, r
        assert stub.ServerLive(protos.pb.ServerLiveRequest(), timeout=T).live
    finally:
        ch.close()


def test_sigterm_drains_inflight_unary(start_demo, protos):
    d = start_demo()
    ch, stub, _ = _stubs(protos, d)
    try:
        fut = stub.ModelInfer.future(slow_request(protos.pb, 400, req_id="drain"), timeout=T)
        time.sleep(0.1)
        d.send_signal(signal.SIGTERM)
        resp = fut.result()
        assert resp.id == "drain" and outputs_of(resp)["OUTPUT0"][2] == encode_raw("INT32", [400])
        rc = d.wait_exit(5.0)
        assert rc == 0, d.describe_exit(rc)
    finally:
        ch.close()


def test_sigterm_new_call_refused(start_demo, protos):
    """After SIGTERM, a call on an existing connection is refused (UNAVAILABLE), the in-flight
    one completes."""
    d = start_demo()
    ch, stub, _ = _stubs(protos, d)
    try:
        with H2Conn(d) as c:
            s1 = c.request(grpc_headers(d, SERVICE + "ModelInfer"),
                           body=grpc_frame(slow_request(protos.pb, 400).SerializeToString()),
                           end_stream=True)
            c.pump(0.1)
            d.send_signal(signal.SIGTERM)
            c.pump(0.1)
            try:
                s3 = c.request(grpc_headers(d, SERVICE + "ServerLive"), body=grpc_frame(b""),
                               end_stream=True)
                st3 = c.wait(s3)
                refused = st3.reset == h2raw.REFUSED_STREAM or st3.grpc("grpc-status") == "14"
                # or ignored: a stream above the GOAWAY's last-stream-id is never processed
                assert refused or (c.goaway and c.goaway[0] < s3), st3
            except (h2raw.ConnectionClosed, BrokenPipeError, ConnectionResetError, AssertionError):
                assert c.goaway is not None and c.goaway[0] >= s1, \
                    "closed with the in-flight call unanswered (goaway %r)" % (c.goaway,)
            st1 = c.wait(s1)
            assert st1.grpc("grpc-status") == "0", st1
        rc = d.wait_exit(5.0)
        assert rc == 0, d.describe_exit(rc)
    finally:
        ch.close()


def test_sigterm_two_step_goaway_serves_what_was_already_sent(start_demo, protos):
    """Shutdown in two steps (RFC 9113 6.8), as a proxy reusing its connection needs it: first
    GOAWAY(2^31-1) and a PING; a call the client sends before it has answered that PING is
    still served (a one-step GOAWAY would have refused it: a lost call behind nginx); the PING's
    ACK brings the final GOAWAY, naming that call; then the server exits 0."""
    d = start_demo()
    with H2Conn(d) as c:
        c.auto_ping_ack = False
        s1 = c.request(grpc_headers(d, SERVICE + "ModelInfer"),
                       body=grpc_frame(slow_request(protos.pb, 300).SerializeToString()),
                       end_stream=True)
        c.pump(0.1)
        d.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 5
        while not c.held_pings and time.monotonic() < deadline:
            c.pump(0.05)
        assert c.goaways and c.goaways[0][0] == 2 ** 31 - 1, c.goaways
        assert c.held_pings, "no PING after the first GOAWAY"
        # sent "before the client saw the notice", as far as the server can tell: served
        s3 = c.request(grpc_headers(d, SERVICE + "ServerLive"), body=grpc_frame(b""),
                       end_stream=True)
        st3 = c.wait(s3)
        assert st3.grpc("grpc-status") == "0", st3
        for p in c.held_pings:
            c.send(h2raw.frame(h2raw.PING, h2raw.ACK, 0, p))
        st1 = c.wait(s1)
        assert st1.grpc("grpc-status") == "0", st1
        c.wait_closed(5.0)
        assert len(c.goaways) >= 2 and c.goaways[-1][0] >= s3, c.goaways
    rc = d.wait_exit(5.0)
    assert rc == 0, d.describe_exit(rc)


def test_sigterm_client_that_never_answers_the_ping(start_demo, protos):
    """A client that does not answer the shutdown's PING cannot hold the server: the final
    GOAWAY follows within a second, and the server exits."""
    d = start_demo()
    with H2Conn(d) as c:
        c.auto_ping_ack = False
        sid = c.request(grpc_headers(d, SERVICE + "ServerLive"), body=grpc_frame(b""),
                        end_stream=True)
        assert c.wait(sid).grpc("grpc-status") == "0"
        t0 = time.monotonic()
        d.send_signal(signal.SIGTERM)
        c.wait_closed(5.0)
        assert c.goaways and c.goaways[-1][0] == sid, c.goaways
    rc = d.wait_exit(5.0)
    assert rc == 0, d.describe_exit(rc)
    assert time.monotonic() - t0 < 4.0


def test_sigterm_with_open_stream(start_demo, protos):
    """An open ModelStreamInfer (one answer in flight, client never half-closes) must not keep
    the server from exiting: the answer is delivered, the stream is ended, exit 0 within 5 s."""
    d = start_demo()
    ch, stub, _ = _stubs(protos, d)
    q = queue.Queue()

    def requests_iter():
        while True:
            m = q.get()
            if m is None:
                return
            yield m
    try:
        call = stub.ModelStreamInfer(requests_iter(), timeout=10)
        q.put(slow_request(protos.pb, 300, req_id="in-flight"))
        got = []
        done = threading.Event()

        def reader():
            try:
                for r in call:
                    got.append(r)
            except grpc.RpcError:
                pass
            done.set()
        threading.Thread(target=reader, daemon=True).start()
        time.sleep(0.1)
        d.send_signal(signal.SIGTERM)
        rc = d.wait_exit(3.0)
        assert rc == 0, d.describe_exit(rc)
        assert done.wait(2.0), "the stream was not ended by the server's exit"
        assert [r.infer_response.id for r in got] == ["in-flight"], got
    finally:
        q.put(None)
        ch.close()


@pytest.mark.parametrize("kind", ["grpc", "rest"])
def test_sigterm_with_half_open_h2_stream(start_demo, protos, kind):
    """A request whose body never comes (HEADERS without END_STREAM: a unary gRPC call missing
    its message, or a REST POST missing its body) must not keep the server from exiting."""
    d = start_demo()
    with H2Conn(d) as c:
        if kind == "grpc":
            sid = c.request(grpc_headers(d, SERVICE + "ModelInfer"), end_stream=False)
        else:
            sid = c.request(rest_headers(d, "POST", "/v2/models/simple/infer",
                                         [("content-type", "application/json")]),
                            body=b'{"inputs": [', end_stream=False)
        c.pump(0.1)
        t0 = time.monotonic()
        d.send_signal(signal.SIGTERM)
        rc = d.wait_exit(3.0)
        assert rc == 0, "%.1f s after SIGTERM: %s" % (time.monotonic() - t0, d.describe_exit(rc))
        c.wait_closed(1.0)
        st = c.streams[sid]
        assert st.done or c.closed, st


def test_idle_grpc_channel_does_not_block_exit(start_demo, protos):
    d = start_demo()
    ch, stub, _ = _stubs(protos, d)
    try:
        assert stub.ServerLive(protos.pb.ServerLiveRequest(), timeout=T).live
        t0 = time.monotonic()
        d.send_signal(signal.SIGTERM)
        rc = d.wait_exit(5.0)
        assert rc == 0, d.describe_exit(rc)
        assert time.monotonic() - t0 < 2.0, "exit took %.1f s" % (time.monotonic() - t0)
    finally:
        ch.close()


def test_oversized_headers_h2_like_http1(start_demo, protos):
    """--max-header-bytes 2048. HTTP/1.1 answers 431 (test_limits.py); over h2 a REST request
    should get the same 431, and a gRPC call a definite error — not RST_STREAM REFUSED_STREAM,
    which tells clients the request was not processed and may be retried (RFC 9113 8.7; grpcio
    turns it into UNAVAILABLE, the retryable code) although it can never succeed."""
    d = start_demo("--max-header-bytes", "2048")
    with H2Conn(d) as c:
        st = c.wait(c.request(rest_headers(d, "GET", "/v2/health/live", [("x-big", "v" * 2500)])))
        assert st.status == 431, "REST over h2 with 2.5 KB of headers: %r (HTTP/1.1 says 431)" \
            % st
        st = c.wait(c.request(rest_headers(d, "GET", "/v2/health/live")))
        assert st.status == 200, st
    ch, stub, _ = _stubs(protos, d)
    try:
        with pytest.raises(grpc.RpcError) as ei:
            stub.ServerLive(protos.pb.ServerLiveRequest(), timeout=T,
                            metadata=[("x-big", "v" * 2500)])
        assert ei.value.code() != grpc.StatusCode.UNAVAILABLE, \
            "oversized metadata -> %s %r (a retryable code)" % (ei.value.code(),
                                                                 ei.value.details())
        assert stub.ServerLive(protos.pb.ServerLiveRequest(), timeout=T).live
    finally:
        ch.close()
