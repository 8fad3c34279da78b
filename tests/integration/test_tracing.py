"""isv_options_set_trace through the demo's --trace-file / --trace-rate: a traced request's
timeline (Triton's TIMESTAMPS names, in order) and its W3C trace id — its caller's from
traceparent, or a fresh one — over REST and gRPC; a caller's sampled flag is always traced,
the rest by the rate."""
import json
import os
import tempfile
import time

import pytest
import requests

from grpc_stubs import load_stubs, make_channel, simple_request
from isvtest import simple_body

TP = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0%d"
ORDER = ["REQUEST_START", "QUEUE_START", "COMPUTE_START", "COMPUTE_INPUT_END",
         "COMPUTE_OUTPUT_START", "COMPUTE_END", "REQUEST_END"]


def lines(path, n, timeout=5.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        got = [json.loads(l) for l in open(path).read().splitlines()] if os.path.exists(path) else []
        if len(got) >= n:
            return got
        time.sleep(0.02)
    raise AssertionError("expected %d trace lines in %s" % (n, path))


def test_every_request_traced_at_rate_1(start_demo):
    with tempfile.TemporaryDirectory() as td:
        path = os.path.join(td, "trace.jsonl")
        d = start_demo("--trace-file", path, "--threads", "1")
        r = requests.post(d.url("/v2/models/simple/infer"), json=simple_body(),
                          headers={"traceparent": TP % 1}, timeout=5)
        assert r.status_code == 200
        stubs = load_stubs()
        with make_channel(d) as ch:
            stubs.pb_grpc.GRPCInferenceServiceStub(ch).ModelInfer(simple_request(stubs.pb)[0],
                                                                  timeout=5)
        rest, grpc_ = lines(path, 2)
        assert rest["model_name"] == "simple" and rest["protocol"] == "v2_http", rest
        assert rest["trace_id"] == "4bf92f3577b34da6a3ce929d0e0e4736"
        assert rest["parent_id"] == "00f067aa0ba902b7" and rest["status"] == 0
        assert grpc_["protocol"] == "v2_grpc" and grpc_["parent_id"] == ""
        assert len(grpc_["trace_id"]) == 32 and grpc_["trace_id"] != rest["trace_id"]
        for t in (rest, grpc_):
            names = [s["name"] for s in t["timestamps"]]
            assert names == ORDER, t
            ns = [s["ns"] for s in t["timestamps"]]
            assert ns == sorted(ns), t
            assert t["batch_size"] == 1


def test_the_rate_and_the_callers_sampled_flag(start_demo):
    with tempfile.TemporaryDirectory() as td:
        path = os.path.join(td, "trace.jsonl")
        d = start_demo("--trace-file", path, "--trace-rate", "1000", "--threads", "1")
        for i in range(5):  # not sampled, and far below the rate: none traced
            requests.post(d.url("/v2/models/simple/infer"), json=simple_body(),
                          headers={"traceparent": TP % 0}, timeout=5)
        r = requests.post(d.url("/v2/models/simple/infer"), json=simple_body(),
                          headers={"traceparent": TP % 1}, timeout=5)
        assert r.status_code == 200
        lines(path, 1)
        time.sleep(0.1)  # no second line comes
        got = [json.loads(l) for l in open(path).read().splitlines()]
        assert len(got) == 1 and got[0]["trace_id"] == "4bf92f3577b34da6a3ce929d0e0e4736", got


def test_a_bad_trace_rate_is_refused(start_demo):
    with pytest.raises(RuntimeError):
        start_demo("--trace-file", "/dev/null", "--trace-rate", "0")
