"""Triton's statistics extension over REST (requests) and gRPC (grpcio, stubs from the
project's proto): GET /v2/models[/{m}[/versions/{v}]]/stats and ModelStatistics, in Triton's
shapes, from the scheduler's own numbers; both protocols report the same figures."""
import time

import grpc
import pytest
import requests

from grpc_stubs import load_stubs, make_channel, simple_request
from isvtest import simple_body

T = 5


def test_rest_statistics_count_what_ran(start_demo):
    demo = start_demo()
    before_ms = time.time() * 1000
    for _ in range(3):
        assert requests.post(demo.url("/v2/models/simple/infer"), json=simple_body(),
                             timeout=T).status_code == 200
    after_ms = time.time() * 1000
    bad = requests.post(demo.url("/v2/models/failing/infer"), timeout=T,
                        json={"inputs": [{"name": "INPUT0", "shape": [1], "datatype": "INT32",
                                          "data": [1]}]})
    assert bad.status_code >= 400
    r = requests.get(demo.url("/v2/models/simple/stats"), timeout=T)
    assert r.status_code == 200, r.text
    (s,) = r.json()["model_stats"]
    assert (s["name"], s["version"]) == ("simple", "1")
    assert s["inference_count"] == 3 and s["execution_count"] == 3
    st = s["inference_stats"]
    assert st["success"]["count"] == 3 and st["success"]["ns"] > 0
    assert st["fail"]["count"] == 0
    assert st["queue"]["count"] == 3 and st["compute_infer"]["count"] == 3
    assert st["success"]["ns"] >= st["compute_infer"]["ns"]
    # ms since the epoch, when the last request finished (within the clock's 1 ms steps)
    assert before_ms - 2 <= s["last_inference"] <= after_ms + 2, (before_ms, s, after_ms)
    assert s["batch_stats"] and s["batch_stats"][0]["batch_size"] == 1
    assert s["batch_stats"][0]["compute_infer"]["count"] == 3

    (f,) = requests.get(demo.url("/v2/models/failing/versions/1/stats"), timeout=T) \
        .json()["model_stats"]
    assert f["inference_stats"]["fail"]["count"] == 1
    assert f["inference_stats"]["success"]["count"] == 0

    every = requests.get(demo.url("/v2/models/stats"), timeout=T).json()["model_stats"]
    names = {(m["name"], m["version"]) for m in every}
    assert ("simple", "1") in names and ("multi_version", "3") in names
    versions = requests.get(demo.url("/v2/models/multi_version/stats"), timeout=T).json()
    assert sorted(m["version"] for m in versions["model_stats"]) == ["1", "2", "3"]

    r = requests.get(demo.url("/v2/models/nope/stats"), timeout=T)
    assert r.status_code == 404 and r.json()["error"] == "Request for unknown model: 'nope' is not found"
    r = requests.get(demo.url("/v2/models/simple/versions/9/stats"), timeout=T)
    assert r.status_code == 404 and "'simple' version 9 is not found" in r.json()["error"]


def test_grpc_model_statistics_match_rest(start_demo):
    demo = start_demo()
    pb = load_stubs()
    with make_channel(demo) as ch:
        stub = pb.pb_grpc.GRPCInferenceServiceStub(ch)
        for _ in range(2):
            stub.ModelInfer(simple_request(pb.pb)[0], timeout=T)
        r = stub.ModelStatistics(pb.pb.ModelStatisticsRequest(name="simple"), timeout=T)
        (s,) = r.model_stats
        assert (s.name, s.version) == ("simple", "1")
        assert s.inference_count == 2 and s.execution_count == 2
        assert s.inference_stats.success.count == 2 and s.inference_stats.success.ns > 0
        assert [b.batch_size for b in s.batch_stats] == [1]
        rest = requests.get(demo.url("/v2/models/simple/stats"), timeout=T).json()
        rs = rest["model_stats"][0]
        assert rs["inference_stats"]["success"]["ns"] == s.inference_stats.success.ns
        assert rs["last_inference"] == s.last_inference
        every = stub.ModelStatistics(pb.pb.ModelStatisticsRequest(), timeout=T)
        assert len(every.model_stats) == len(
            requests.get(demo.url("/v2/models/stats"), timeout=T).json()["model_stats"])
        with pytest.raises(grpc.RpcError) as e:
            stub.ModelStatistics(pb.pb.ModelStatisticsRequest(name="nope"), timeout=T)
        assert e.value.code() == grpc.StatusCode.NOT_FOUND
        assert e.value.details() == "Request for unknown model: 'nope' is not found"
