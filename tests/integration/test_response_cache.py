"""Triton's response cache against the demo (its cost_cached model: 200 µs a call, the cache on;
the demo's cache: --response-cache-bytes, 16 MiB by default): a repeated request is a hit —
answered the same without running the model, counted in REST and gRPC statistics and in
/metrics in both styles (promtool-clean) —, a different input is a miss, a streamed request is
never cached, and the model config says response_cache over REST and gRPC."""
import json

import requests

from grpc_stubs import add_input, encode_raw, load_stubs, make_channel
from isvtest import simple_body
from test_metrics_triton import promtool_ok

T = 10


def body(values):
    return {"inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [1, 4], "data": values}]}


def infer(demo, values, **extra):
    b = body(values)
    b.update(extra)
    r = requests.post(demo.url("/v2/models/cost_cached/infer"), json=b, timeout=T)
    assert r.status_code == 200, r.text
    return r.json()["outputs"]


def stats(demo, model="cost_cached"):
    (s,) = requests.get(demo.url("/v2/models/%s/stats" % model), timeout=T).json()["model_stats"]
    return s


def metrics(demo):
    r = requests.get(demo.url("/metrics"), timeout=T)
    assert r.status_code == 200
    return r.text


def metric(text, name, **labels):
    order = sorted(labels, key=lambda k: ("model", "version").index(k) if k in ("model", "version")
                   else 2)  # the order the server writes them in
    want = ",".join('%s="%s"' % (k, labels[k]) for k in order)
    head = "%s{%s} " % (name, want) if labels else name + " "
    for line in text.splitlines():
        if line.startswith(head):
            return float(line[len(head):])
    return None


def test_rest_second_identical_request_is_a_hit(start_demo):
    demo = start_demo()
    first = infer(demo, [1, 2, 3, 4])
    s = stats(demo)
    assert s["execution_count"] == 1
    assert s["inference_stats"]["cache_miss"]["count"] == 1
    assert s["inference_stats"]["cache_hit"]["count"] == 0
    second = infer(demo, [1, 2, 3, 4])
    assert second == first and second[0]["data"] == [1.0, 2.0, 3.0, 4.0]
    s = stats(demo)
    st = s["inference_stats"]
    assert s["execution_count"] == 1, "a hit never reaches the model"
    assert st["cache_hit"]["count"] == 1 and st["cache_hit"]["ns"] > 0
    assert st["success"]["count"] == 2
    assert st["compute_infer"]["count"] == 1  # Triton's: the compute stages exclude hits
    # a hit costs far less than the model's 200 µs (the bench measures; this only orders them)
    assert st["cache_hit"]["ns"] < st["compute_infer"]["ns"]

    infer(demo, [1, 2, 3, 5])  # one element differs: a miss
    infer(demo, [1, 2, 3, 4], parameters={"timeout": 5000000})  # a consumed parameter: a hit
    infer(demo, [1, 2, 3, 4], parameters={"mode": "x"})  # one the model may read: a miss
    st = stats(demo)["inference_stats"]
    assert (st["cache_hit"]["count"], st["cache_miss"]["count"]) == (2, 3)
    assert stats(demo)["execution_count"] == 3

    # the same inputs as binary data: the key is the bytes, not their wire form
    raw = encode_raw("FP32", [1, 2, 3, 4])
    head = ('{"inputs":[{"name":"INPUT0","datatype":"FP32","shape":[1,4],'
            '"parameters":{"binary_data_size":%d}}]}' % len(raw)).encode()
    r = requests.post(demo.url("/v2/models/cost_cached/infer"), data=head + raw, timeout=T,
                      headers={"Inference-Header-Content-Length": str(len(head))})
    assert r.status_code == 200, r.text
    assert stats(demo)["inference_stats"]["cache_hit"]["count"] == 3

    # the model without the cache reports none
    requests.post(demo.url("/v2/models/cost/infer"), json=body([1, 2, 3, 4]), timeout=T)
    st = stats(demo, "cost")["inference_stats"]
    assert st["cache_hit"]["count"] == 0 and st["cache_miss"]["count"] == 0


def test_grpc_hit_in_statistics_and_config(start_demo):
    demo = start_demo()
    pb = load_stubs()
    with make_channel(demo) as ch:
        stub = pb.pb_grpc.GRPCInferenceServiceStub(ch)

        def request(values):
            req = pb.pb.ModelInferRequest(model_name="cost_cached")
            add_input(req, "INPUT0", "FP32", [1, 4], raw=encode_raw("FP32", values))
            return req

        a = stub.ModelInfer(request([5, 6, 7, 8]), timeout=T)
        b = stub.ModelInfer(request([5, 6, 7, 8]), timeout=T)
        assert a.raw_output_contents == b.raw_output_contents
        stub.ModelInfer(request([0, 6, 7, 8]), timeout=T)
        (s,) = stub.ModelStatistics(pb.pb.ModelStatisticsRequest(name="cost_cached"),
                                    timeout=T).model_stats
        assert s.inference_stats.cache_hit.count == 1 and s.inference_stats.cache_hit.ns > 0
        assert s.inference_stats.cache_miss.count == 2
        assert s.execution_count == 2
        rest = stats(demo)["inference_stats"]
        assert rest["cache_hit"] == {"count": 1, "ns": s.inference_stats.cache_hit.ns}

        c = stub.ModelConfig(pb.pb.ModelConfigRequest(name="cost_cached"), timeout=T).config
        assert c.HasField("response_cache") and c.response_cache.enable
        c = stub.ModelConfig(pb.pb.ModelConfigRequest(name="cost"), timeout=T).config
        assert not c.response_cache.enable
    cfg = requests.get(demo.url("/v2/models/cost_cached/config"), timeout=T).json()
    assert cfg["response_cache"] == {"enable": True}
    cfg = requests.get(demo.url("/v2/models/cost/config"), timeout=T).json()
    assert cfg["response_cache"] == {"enable": False}


def test_streamed_requests_are_never_cached(start_demo):
    demo = start_demo()
    pb = load_stubs()
    with make_channel(demo) as ch:
        stub = pb.pb_grpc.GRPCInferenceServiceStub(ch)
        reqs = []
        for _ in range(3):
            req = pb.pb.ModelInferRequest(model_name="cost_cached")
            add_input(req, "INPUT0", "FP32", [1, 4], raw=encode_raw("FP32", [9, 9, 9, 9]))
            reqs.append(req)
        out = list(stub.ModelStreamInfer(iter(reqs), timeout=T))
        assert len(out) == 3 and all(not o.error_message for o in out)
    s = stats(demo)
    assert s["execution_count"] == 3
    st = s["inference_stats"]
    assert st["cache_hit"]["count"] == 0 and st["cache_miss"]["count"] == 0
    # and a failed request is not stored: the same bad request runs (and fails) again
    for _ in range(2):
        r = requests.post(demo.url("/v2/models/cost_cached/infer"), timeout=T, json={
            "inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [4], "data": [1, 2, 3, 4]}]})
        assert r.status_code == 400
    assert stats(demo)["inference_stats"]["cache_hit"]["count"] == 0


def test_metrics_in_both_styles(start_demo):
    demo = start_demo("--metrics-style", "both")
    infer(demo, [1, 1, 1, 1])
    infer(demo, [1, 1, 1, 1])
    infer(demo, [2, 1, 1, 1])
    text = metrics(demo)
    promtool_ok(text)
    m = dict(model="cost_cached", version="1")
    assert metric(text, "isv_cache_requests_total", result="hit", **m) == 1
    assert metric(text, "isv_cache_requests_total", result="miss", **m) == 2
    assert metric(text, "isv_cache_duration_seconds_total", result="hit", **m) > 0
    assert metric(text, "nv_cache_num_hits_per_model", **m) == 1
    assert metric(text, "nv_cache_num_misses_per_model", **m) == 2
    assert metric(text, "nv_cache_hit_duration_per_model", **m) is not None
    assert metric(text, "nv_cache_miss_duration_per_model", **m) is not None
    assert metric(text, "nv_inference_exec_count", **m) == 2
    assert metric(text, "nv_inference_request_success", **m) == 3
    assert metric(text, "nv_cache_num_entries") == 2
    assert metric(text, "nv_cache_num_lookups") == 3
    assert metric(text, "nv_cache_num_hits") == 1
    assert metric(text, "nv_cache_num_misses") == 2
    assert 0 < metric(text, "nv_cache_util") < 1
    assert metric(text, "isv_response_cache_entries") == 2
    assert metric(text, "isv_response_cache_capacity_bytes") == 16 << 20
    # models without the cache have no cache series
    assert metric(text, "nv_cache_num_hits_per_model", model="cost", version="1") is None


def test_bounded_by_bytes_lru_and_off(start_demo):
    demo = start_demo("--response-cache-bytes", "1024")  # a few entries
    for i in range(40):
        infer(demo, [float(i), 0, 0, 0])
    text = metrics(demo)
    assert metric(text, "isv_response_cache_bytes") <= 1024
    assert metric(text, "isv_response_cache_evictions_total") > 0
    entries = metric(text, "isv_response_cache_entries")
    assert 0 < entries < 40
    infer(demo, [39.0, 0, 0, 0])  # the most recent: still there
    infer(demo, [0.0, 0, 0, 0])  # the oldest: evicted long ago
    st = stats(demo)["inference_stats"]
    assert (st["cache_hit"]["count"], st["cache_miss"]["count"]) == (1, 41)

    off = start_demo("--response-cache-bytes", "0")
    infer(off, [1, 2, 3, 4])
    infer(off, [1, 2, 3, 4])
    s = stats(off)
    assert s["execution_count"] == 2
    assert s["inference_stats"]["cache_hit"]["count"] == 0
    assert metric(metrics(off), "isv_response_cache_entries") is None


def load(demo, model, config):
    return requests.post(demo.url("/v2/repository/models/%s/load" % model), timeout=T,
                         json={"parameters": {"config": json.dumps(config)}})


def test_a_load_turns_the_cache_on_and_a_decoupled_model_refuses_it(start_demo):
    demo = start_demo()
    # Triton's way: a load with a config override that enables response_cache
    r = load(demo, "simple", {"response_cache": {"enable": True}})
    assert r.status_code == 200, r.text
    assert requests.get(demo.url("/v2/models/simple/config"), timeout=T).json()[
        "response_cache"] == {"enable": True}
    for _ in range(3):
        assert requests.post(demo.url("/v2/models/simple/infer"), json=simple_body(),
                             timeout=T).status_code == 200
    s = stats(demo, "simple")
    assert s["execution_count"] == 1
    assert (s["inference_stats"]["cache_hit"]["count"],
            s["inference_stats"]["cache_miss"]["count"]) == (2, 1)
    # and off again
    assert load(demo, "simple", {"response_cache": {}}).status_code == 200
    assert requests.get(demo.url("/v2/models/simple/config"), timeout=T).json()[
        "response_cache"] == {"enable": False}

    # a decoupled model never caches: the load that asks for it fails, saying why
    r = load(demo, "stream_echo", {"response_cache": {"enable": True}})
    assert r.status_code == 400
    assert "failed to load 'stream_echo'" in r.json()["error"]
    assert "response cache does not combine with a decoupled model" in r.json()["error"]
    index = requests.post(demo.url("/v2/repository/index"), json={}, timeout=T).json()
    (e,) = [m for m in index if m["name"] == "stream_echo"]
    assert e["state"] == "UNAVAILABLE" and "decoupled" in e["reason"]
    assert load(demo, "stream_echo", {}).status_code == 200  # back without it

    # an override the demo cannot read is refused, naming the field
    for bad in ({"response_cache": {"enable": 1}}, {"response_cache": {"size": True}},
                {"response_cache": True}):
        r = load(demo, "simple", bad)
        assert r.status_code == 400, bad
        assert 'config "response_cache" must be {"enable": true or false}' in r.json()["error"]
