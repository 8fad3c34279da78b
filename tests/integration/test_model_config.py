"""Triton's model configuration extension: GET /v2/models/{m}[/versions/{v}]/config (JSON) and
gRPC ModelConfig (grpcio, stubs from the project's proto, which has Triton's field numbers),
built from the registration — what perf_analyzer-style tools read."""
import grpc
import pytest
import requests

from grpc_stubs import load_stubs, make_channel

T = 5


def config(demo, path):
    r = requests.get(demo.url(path), timeout=T)
    return r.status_code, r.json()


def test_config_of_a_batched_model(demo):
    code, c = config(demo, "/v2/models/simple/config")
    assert code == 200, c
    assert (c["name"], c["platform"], c["max_batch_size"]) == ("simple", "custom", 8)
    assert [(i["name"], i["data_type"], i["dims"]) for i in c["input"]] == [
        ("INPUT0", "TYPE_INT32", [16]), ("INPUT1", "TYPE_INT32", [16])]
    assert [o["name"] for o in c["output"]] == ["OUTPUT0", "OUTPUT1"]
    assert c["instance_group"] == [{"name": "simple", "kind": "KIND_CPU", "count": 1}]
    assert c["model_transaction_policy"] == {"decoupled": False}
    assert "dynamic_batching" not in c and "sequence_batching" not in c


def test_config_shows_the_scheduler_settings(demo):
    _, c = config(demo, "/v2/models/batched/config")
    assert c["max_batch_size"] == 32
    assert c["dynamic_batching"]["max_queue_delay_microseconds"] == 2000
    _, c = config(demo, "/v2/models/accumulate/config")
    assert c["sequence_batching"]["max_sequence_idle_microseconds"] > 0
    assert "direct" in c["sequence_batching"]
    assert c["instance_group"][0]["count"] == 2
    _, c = config(demo, "/v2/models/simple_string/config")
    assert {i["data_type"] for i in c["input"]} == {"TYPE_STRING"}  # BYTES, in Triton's words
    _, c = config(demo, "/v2/models/multi_version/versions/2/config")
    assert c["name"] == "multi_version"


def test_config_of_unknown_models_is_404(demo):
    code, body = config(demo, "/v2/models/nope/config")
    assert code == 404 and body["error"] == "Request for unknown model: 'nope' is not found"
    code, body = config(demo, "/v2/models/simple/versions/9/config")
    assert code == 404 and body["error"] == "Request for unknown model: 'simple' version 9 is not found"
    ext = requests.get(demo.url("/v2"), timeout=T).json()["extensions"]
    assert "model_configuration" in ext


def test_grpc_model_config_matches_rest(demo):
    pb = load_stubs()
    with make_channel(demo) as ch:
        stub = pb.pb_grpc.GRPCInferenceServiceStub(ch)
        for name in ("simple", "batched", "accumulate", "simple_string"):
            c = stub.ModelConfig(pb.pb.ModelConfigRequest(name=name), timeout=T).config
            _, rest = config(demo, "/v2/models/%s/config" % name)
            assert (c.name, c.platform, c.max_batch_size) == \
                (rest["name"], rest["platform"], rest["max_batch_size"])
            assert [(i.name, pb.pb.DataType.Name(i.data_type), list(i.dims)) for i in c.input] \
                == [(i["name"], i["data_type"], i["dims"]) for i in rest["input"]]
            assert [(o.name, pb.pb.DataType.Name(o.data_type), list(o.dims)) for o in c.output] \
                == [(o["name"], o["data_type"], o["dims"]) for o in rest["output"]]
            (g,) = c.instance_group
            assert g.kind == pb.pb.ModelInstanceGroup.KIND_CPU
            assert g.count == rest["instance_group"][0]["count"]
            assert c.model_transaction_policy.decoupled == \
                rest["model_transaction_policy"]["decoupled"]
            if "dynamic_batching" in rest:
                assert c.WhichOneof("scheduling_choice") == "dynamic_batching"
                assert c.dynamic_batching.max_queue_delay_microseconds == \
                    rest["dynamic_batching"]["max_queue_delay_microseconds"]
            elif "sequence_batching" in rest:
                assert c.WhichOneof("scheduling_choice") == "sequence_batching"
                assert c.sequence_batching.HasField("direct")
            else:
                assert c.WhichOneof("scheduling_choice") is None
        with pytest.raises(grpc.RpcError) as e:
            stub.ModelConfig(pb.pb.ModelConfigRequest(name="nope"), timeout=T)
        assert e.value.code() == grpc.StatusCode.NOT_FOUND
