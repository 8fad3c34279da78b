"""Ensembles (Triton's platform "ensemble", ensemble_scheduling) and models calling models
(business logic scripting) against the demo, over V2 REST (requests, curl) and gRPC (grpcio),
TF Serving REST, Vertex and grps:
the demo's simple_ensemble (Triton's simple behind a preprocessing chain), fan_ensemble
(fan-out/fan-in), failing_ensemble (a step's error named), slow_fan_ensemble (a deadline and a
client's cancel reaching every step) and bls_simple (a backend inferring other models)."""
import struct
import subprocess
import time

import grpc
import pytest
import requests

from grpc_stubs import (add_input, decode_raw, encode_raw, expect_rpc_error, load_stubs,
                        make_channel, outputs_of)

T = 10
A = list(range(16))
B = [i * 3 - 20 for i in range(16)]


def infer(demo, model, inputs, **kw):
    body = {"inputs": [{"name": n, "datatype": dt, "shape": shape, "data": data}
                       for n, dt, shape, data in inputs]}
    body.update(kw)
    r = requests.post(demo.url("/v2/models/%s/infer" % model), json=body, timeout=T)
    return r.status_code, r.json()


def out(body, name):
    (o,) = [o for o in body["outputs"] if o["name"] == name]
    return o


def stats(demo, model):
    r = requests.get(demo.url("/v2/models/%s/stats" % model), timeout=T)
    assert r.status_code == 200, r.text
    return r.json()["model_stats"][0]["inference_stats"]


def test_simple_wrapped_in_a_preprocessing_ensemble_over_rest(demo):
    before = {m: stats(demo, m)["success"]["count"]
              for m in ("simple_ensemble", "cast_fp32", "scale", "round_int32", "simple")}
    code, body = infer(demo, "simple_ensemble", [("INPUT0", "INT32", [2, 16], A + A),
                                                 ("INPUT1", "INT32", [2, 16], B + B)])
    assert code == 200, body
    assert body["model_name"] == "simple_ensemble"
    o0, o1 = out(body, "OUTPUT0"), out(body, "OUTPUT1")
    assert (o0["datatype"], o0["shape"]) == ("INT32", [2, 16])
    assert o0["data"] == [2 * a + b for a, b in zip(A, B)] * 2
    assert o1["data"] == [2 * a - b for a, b in zip(A, B)] * 2
    # statistics: the ensemble and each of its four steps counted the request
    for m, n in before.items():
        assert stats(demo, m)["success"]["count"] == n + 1, m


def test_only_the_requested_output_is_answered(demo):
    code, body = infer(demo, "simple_ensemble", [("INPUT0", "INT32", [1, 16], A),
                                                 ("INPUT1", "INT32", [1, 16], B)],
                       outputs=[{"name": "OUTPUT1"}])
    assert code == 200, body
    assert [o["name"] for o in body["outputs"]] == ["OUTPUT1"]


def test_fan_out_fan_in_over_rest(demo):
    x = [i / 2 for i in range(16)]
    code, body = infer(demo, "fan_ensemble", [("INPUT", "FP32", [1, 16], x)])
    assert code == 200, body
    assert out(body, "OUTPUT")["data"] == pytest.approx([2 * v + v * v for v in x])


@pytest.mark.parametrize("path,body,key", [
    ("/v1/models/fan_ensemble:predict", {"instances": [list(range(16))]}, "predictions"),
    ("/v1/projects/p/models/fan_ensemble:predict", {"instances": [list(range(16))]},
     "predictions"),
])
def test_an_ensemble_is_served_by_tf_serving_and_vertex_too(demo, path, body, key):
    r = requests.post(demo.url(path), json=body, timeout=T)
    assert r.status_code == 200, r.text
    assert r.json()[key] == [[2.0 * v + v * v for v in range(16)]]


def test_an_ensemble_over_grps(demo):
    r = requests.post(demo.url("/grps/v1/infer/predict"), timeout=T, json={
        "model": "fan_ensemble",
        "gtensors": {"tensors": [{"name": "INPUT", "shape": [1, 16], "dtype": "DT_FLOAT32",
                                  "flat_float32": list(range(16))}]}})
    assert r.status_code == 200, r.text
    (t,) = r.json()["gtensors"]["tensors"]
    assert t["flat_float32"] == [2.0 * v + v * v for v in range(16)]


def test_a_failing_step_is_named_over_rest(demo):
    code, body = infer(demo, "failing_ensemble", [("INPUT0", "INT32", [3], [1, 2, 3])])
    assert code == 500, body
    assert "ensemble 'failing_ensemble' step 1 of 2 (model 'failing')" in body["error"], body


def test_a_bad_input_is_the_clients_400_before_any_step(demo):
    code, body = infer(demo, "simple_ensemble", [("INPUT0", "INT32", [1, 16], A)])
    assert code == 400 and "INPUT1" in body["error"], body


def test_config_shows_platform_and_steps_over_rest_and_grpc(demo):
    c = requests.get(demo.url("/v2/models/fan_ensemble/config"), timeout=T).json()
    assert c["platform"] == "ensemble"
    assert "instance_group" not in c
    steps = c["ensemble_scheduling"]["step"]
    assert [s["model_name"] for s in steps] == ["add_fp32", "scale", "square"]
    assert steps[0] == {"model_name": "add_fp32", "model_version": -1,
                        "input_map": {"A": "doubled", "B": "squared"},
                        "output_map": {"SUM": "OUTPUT"}}
    meta = requests.get(demo.url("/v2/models/fan_ensemble"), timeout=T).json()
    assert meta["platform"] == "ensemble"
    pb = load_stubs()
    with make_channel(demo) as ch:
        stub = pb.pb_grpc.GRPCInferenceServiceStub(ch)
        g = stub.ModelConfig(pb.pb.ModelConfigRequest(name="fan_ensemble"), timeout=T).config
    assert g.platform == "ensemble"
    assert g.WhichOneof("scheduling_choice") == "ensemble_scheduling"
    assert len(g.instance_group) == 0
    assert [(s.model_name, s.model_version, dict(s.input_map), dict(s.output_map))
            for s in g.ensemble_scheduling.step] == \
        [(s["model_name"], s["model_version"], s["input_map"], s["output_map"]) for s in steps]


def test_ensembles_over_grpc(demo):
    pb = load_stubs()
    req = pb.pb.ModelInferRequest(model_name="simple_ensemble")
    add_input(req, "INPUT0", "INT32", [1, 16], raw=encode_raw("INT32", A))
    add_input(req, "INPUT1", "INT32", [1, 16], raw=encode_raw("INT32", B))
    with make_channel(demo) as ch:
        stub = pb.pb_grpc.GRPCInferenceServiceStub(ch)
        res = outputs_of(stub.ModelInfer(req, timeout=T))
        assert decode_raw("INT32", res["OUTPUT0"][2]) == [2 * a + b for a, b in zip(A, B)]
        bad = pb.pb.ModelInferRequest(model_name="failing_ensemble")
        add_input(bad, "INPUT0", "INT32", [1], raw=encode_raw("INT32", [1]))
        expect_rpc_error(stub.ModelInfer, grpc.StatusCode.INTERNAL,
                         "step 1 of 2 (model 'failing')", request=bad, timeout=T)


def test_a_deadline_reaches_every_running_step_over_grpc(demo):
    """grpc-timeout 300 ms on two steps of 5 s each: DEADLINE_EXCEEDED at once, and both steps
    ended early (slow counts them as failures, not 5 s successes)."""
    pb = load_stubs()
    fail_before = stats(demo, "slow")["fail"]["count"]
    req = pb.pb.ModelInferRequest(model_name="slow_fan_ensemble")
    add_input(req, "INPUT0", "INT32", [1], raw=encode_raw("INT32", [5000]))
    with make_channel(demo) as ch:
        stub = pb.pb_grpc.GRPCInferenceServiceStub(ch)
        t0 = time.monotonic()
        expect_rpc_error(stub.ModelInfer, grpc.StatusCode.DEADLINE_EXCEEDED, request=req,
                         timeout=0.3)
    deadline = time.monotonic() + 3
    while stats(demo, "slow")["fail"]["count"] < fail_before + 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert stats(demo, "slow")["fail"]["count"] == fail_before + 2
    assert time.monotonic() - t0 < 3


def test_a_client_leaving_cancels_every_running_step_over_rest(demo):
    """curl gives up after 0.3 s on two 5 s steps: both are cancelled when the client goes."""
    fail_before = stats(demo, "slow")["fail"]["count"]
    body = '{"inputs":[{"name":"INPUT0","datatype":"INT32","shape":[1],"data":[5000]}]}'
    p = subprocess.run(["curl", "-s", "-m", "0.3", "-o", "/dev/null", "-w", "%{http_code}",
                        "-X", "POST", "-d", body,
                        demo.url("/v2/models/slow_fan_ensemble/infer")],
                       capture_output=True, text=True, timeout=T)
    assert p.returncode == 28, p  # curl's "operation timed out"
    deadline = time.monotonic() + 3
    while stats(demo, "slow")["fail"]["count"] < fail_before + 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert stats(demo, "slow")["fail"]["count"] == fail_before + 2


def test_a_backend_calling_models_over_rest_and_grpc(demo):
    code, body = infer(demo, "bls_simple", [("INPUT0", "INT32", [1, 16], A),
                                            ("INPUT1", "INT32", [1, 16], B)])
    assert code == 200, body
    assert out(body, "SUM")["data"] == [a + b for a, b in zip(A, B)]
    assert out(body, "SUM_FP32")["data"] == [float(a + b) for a, b in zip(A, B)]
    pb = load_stubs()
    req = pb.pb.ModelInferRequest(model_name="bls_simple")
    add_input(req, "INPUT0", "INT32", [1, 16], raw=encode_raw("INT32", A))
    add_input(req, "INPUT1", "INT32", [1, 16], raw=encode_raw("INT32", B))
    with make_channel(demo) as ch:
        stub = pb.pb_grpc.GRPCInferenceServiceStub(ch)
        res = outputs_of(stub.ModelInfer(req, timeout=T))
    assert res["SUM_FP32"][0] == "FP32"
    assert list(struct.unpack("<16f", res["SUM_FP32"][2])) == [float(a + b) for a, b in zip(A, B)]


def test_many_backends_calling_models_at_once(demo):
    """More bls_simple requests at once than the demo has worker threads, each blocking its
    worker in two nested calls: all answered (a nested POOL model runs on the waiting thread,
    and waiting workers do not count as workers)."""
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(32) as ex:
        results = list(ex.map(lambda i: infer(demo, "bls_simple", [
            ("INPUT0", "INT32", [1, 16], [i] * 16), ("INPUT1", "INT32", [1, 16], B)]),
            range(64)))
    for i, (code, body) in enumerate(results):
        assert code == 200, body
        assert out(body, "SUM")["data"] == [i + b for b in B]
