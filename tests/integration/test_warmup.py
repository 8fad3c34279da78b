"""Triton's model warmup against the demo: `warm` (its warmup takes ~0.8 s) is not ready while
its samples run after a repository load and ready after them; `warm_broken` (its warmup fails)
stays UNAVAILABLE with the reason in the repository index (REST and gRPC) and in the log; the
config shows model_warmup over REST and gRPC."""
import time

import requests

from grpc_stubs import load_stubs, make_channel

T = 10


def ready(demo, model):
    return requests.get(demo.url("/v2/models/%s/ready" % model), timeout=T).status_code == 200


def wait_ready(demo, model, seconds=10):
    end = time.time() + seconds
    while time.time() < end:
        if ready(demo, model):
            return True
        time.sleep(0.02)
    return False


def test_readiness_waits_for_the_warmup(start_demo):
    demo = start_demo()
    assert wait_ready(demo, "warm")  # the startup's warmup
    t0 = time.time()
    r = requests.post(demo.url("/v2/repository/models/warm/load"), timeout=T)
    assert r.status_code == 200, r.text
    seen = []
    while time.time() - t0 < 10:
        seen.append(ready(demo, "warm"))
        if seen[-1]:
            break
        time.sleep(0.02)
    took = time.time() - t0
    assert seen[0] is False, "LOADING while the samples run"
    assert seen[-1] is True, "READY after every sample succeeded"
    assert took >= 0.7  # "cold" sleeps 400 ms, twice, before READY
    # not served meanwhile: a request during the warmup is refused as not ready
    requests.post(demo.url("/v2/repository/models/warm/load"), timeout=T)
    r = requests.post(demo.url("/v2/models/warm/infer"), timeout=T, json={
        "inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [1, 4], "data": [0, 0, 0, 0]}]})
    assert r.status_code == 503, r.text
    assert wait_ready(demo, "warm")
    r = requests.post(demo.url("/v2/models/warm/infer"), timeout=T, json={
        "inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [1, 4], "data": [0, 1, 2, 3]}]})
    assert r.status_code == 200 and r.json()["outputs"][0]["data"] == [0.0, 1.0, 2.0, 3.0]
    index = requests.post(demo.url("/v2/repository/index"), json={}, timeout=T).json()
    (w,) = [e for e in index if e["name"] == "warm"]
    assert w["state"] == "READY" and "reason" not in w


def test_failed_warmup_leaves_it_unavailable_with_the_reason(start_demo):
    demo = start_demo()
    assert not ready(demo, "warm_broken")
    reason = ("model warmup failed: sample 'negative': INPUT0[0] is negative (-1): this model "
              "cannot start")
    end = time.time() + 10
    while time.time() < end:
        index = requests.post(demo.url("/v2/repository/index"), json={}, timeout=T).json()
        (b,) = [e for e in index if e["name"] == "warm_broken"]
        if b["state"] != "LOADING":
            break
        time.sleep(0.02)
    assert b["state"] == "UNAVAILABLE" and b["reason"] == reason
    pb = load_stubs()
    with make_channel(demo) as ch:
        stub = pb.pb_grpc.GRPCInferenceServiceStub(ch)
        idx = stub.RepositoryIndex(pb.pb.RepositoryIndexRequest(), timeout=T)
        (g,) = [m for m in idx.models if m.name == "warm_broken"]
        assert (g.state, g.reason) == ("UNAVAILABLE", reason)
    r = requests.post(demo.url("/v2/models/warm_broken/infer"), timeout=T, json={
        "inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [1, 4], "data": [1, 1, 1, 1]}]})
    assert r.status_code == 503
    end = time.time() + 5
    while reason not in demo.stderr_tail() and time.time() < end:
        time.sleep(0.05)
    assert "ERROR model 'warm_broken' version '1': " + reason in demo.stderr_tail()


def test_config_shows_model_warmup(demo):
    cfg = requests.get(demo.url("/v2/models/warm/config"), timeout=T).json()
    assert cfg["model_warmup"] == [
        {"name": "cold", "batch_size": 1, "count": 2, "inputs": {"INPUT0": {
            "data_type": "TYPE_FP32", "dims": [4], "input_data_file": "INPUT0"}}},
        {"name": "zeros", "batch_size": 4, "count": 1, "inputs": {"INPUT0": {
            "data_type": "TYPE_FP32", "dims": [4], "zero_data": True}}},
        {"name": "noise", "batch_size": 1, "count": 0, "inputs": {"INPUT0": {
            "data_type": "TYPE_FP32", "dims": [4], "random_data": True}}}]
    assert requests.get(demo.url("/v2/models/simple/config"), timeout=T).json()["model_warmup"] == []
    pb = load_stubs()
    with make_channel(demo) as ch:
        stub = pb.pb_grpc.GRPCInferenceServiceStub(ch)
        c = stub.ModelConfig(pb.pb.ModelConfigRequest(name="warm"), timeout=T).config
        assert [(w.name, w.batch_size, w.count) for w in c.model_warmup] == \
            [("cold", 1, 2), ("zeros", 4, 1), ("noise", 1, 0)]
        cold = c.model_warmup[0].inputs["INPUT0"]
        assert (cold.data_type, list(cold.dims)) == (pb.pb.TYPE_FP32, [4])
        assert cold.WhichOneof("input_data_type") == "input_data_file"
        assert c.model_warmup[1].inputs["INPUT0"].WhichOneof("input_data_type") == "zero_data"
        assert c.model_warmup[2].inputs["INPUT0"].random_data
