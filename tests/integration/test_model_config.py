"""GET /v2/models/{m}[/versions/{v}]/config: Triton's model configuration JSON built from the
registration (what perf_analyzer-style tools read). REST only for now: gRPC ModelConfig is
not served, so "model_configuration" is not listed among the extensions."""
import requests

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
    assert code == 404 and body["error"] == "unknown model 'nope'"
    code, body = config(demo, "/v2/models/simple/versions/9/config")
    assert code == 404 and "'9'" in body["error"]
    ext = requests.get(demo.url("/v2"), timeout=T).json()["extensions"]
    assert "model_configuration" not in ext
