"""--threads N: the demo on N loops in N threads, all on the same port (SO_REUSEPORT). Each
loop's server counts its own statistics, so a connection that asks for them after its own
request shows how many requests its loop served: with 2 loops and many connections, no loop
served them all. The authorizer guards every loop; SIGTERM closes them all (exit 0)."""
import http.client
import json

import grpc
import pytest

from grpc_stubs import load_stubs, make_channel, simple_request
from isvtest import TIMEOUT, simple_body

N = 40


def served_per_connection(d, n=N, headers=None):
    seen = []
    body = json.dumps(simple_body())
    for _ in range(n):
        c = http.client.HTTPConnection(d.host, d.port, timeout=TIMEOUT)
        try:
            c.request("POST", "/v2/models/simple/infer", body=body, headers=headers or {})
            r = c.getresponse()
            r.read()
            assert r.status == 200, r.status
            c.request("GET", "/v2/models/simple/stats", headers=headers or {})
            r = c.getresponse()
            stats = json.loads(r.read())
            seen.append(stats["model_stats"][0]["inference_count"])
        finally:
            c.close()
    return seen


def test_two_loops_share_the_port(start_demo):
    d = start_demo("--threads", "2")
    seen = served_per_connection(d)
    # one loop alone would have counted up to N; each saw only its share (2^-39 to fail)
    assert max(seen) < N, seen
    # gRPC too, on whichever loop its connection lands
    pb = load_stubs()
    for _ in range(4):
        ch = make_channel(d)
        try:
            resp = pb.pb_grpc.GRPCInferenceServiceStub(ch).ModelInfer(
                simple_request(pb.pb)[0], timeout=TIMEOUT)
            assert resp.model_name == "simple"
        finally:
            ch.close()


def test_every_loop_is_guarded(start_demo, tmp_path):
    token = tmp_path / "token"
    token.write_text("tok")
    d = start_demo("--threads", "2", "--bearer-token", str(token))
    for _ in range(16):
        c = http.client.HTTPConnection(d.host, d.port, timeout=TIMEOUT)
        c.request("GET", "/v2/models/simple")
        r = c.getresponse()
        r.read()
        c.close()
        assert r.status == 401
    seen = served_per_connection(d, 24, {"Authorization": "Bearer tok"})
    assert max(seen) < 24, seen  # both loops served, both let the token in


def test_bad_thread_counts_are_refused(start_demo):
    for v in ("0", "65", "x"):
        with pytest.raises(RuntimeError):
            start_demo("--threads", v)
