"""TensorFlow Serving's REST API against the demo (PROTOCOLS.md §3): model status and metadata,
:predict in the row ("instances") and columnar ("inputs") formats, with /versions/N and
/labels/L, TF Serving's error texts, over HTTP/1.1 (requests) and h2c (curl). :classify and
:regress answer 501 until they are built."""
import json
import math
import shutil
import subprocess

import pytest

from isvtest import assert_error, free_port, get, ok_json, post_json, show

SIMPLE_A = list(range(16))
SIMPLE_B = [1] * 16


def test_status_lists_every_version_or_the_one_named(demo):
    body = ok_json(get(demo, "/v1/models/multi_version"))
    got = [(s["version"], s["state"]) for s in body["model_version_status"]]
    assert got == [("1", "AVAILABLE"), ("2", "AVAILABLE"), ("3", "AVAILABLE")], body
    for s in body["model_version_status"]:
        assert s["status"] == {"error_code": "OK", "error_message": ""}, body
    one = ok_json(get(demo, "/v1/models/multi_version/versions/2"))
    assert [s["version"] for s in one["model_version_status"]] == ["2"], one
    by_label = ok_json(get(demo, "/v1/models/multi_version/labels/stable"))
    assert [s["version"] for s in by_label["model_version_status"]] == ["2"], by_label
    # the registry's states: the demo's "loading" model is registered LOADING
    loading = ok_json(get(demo, "/v1/models/loading"))
    assert [s["state"] for s in loading["model_version_status"]] == ["LOADING"], loading


def test_metadata_describes_serving_default(demo):
    body = ok_json(get(demo, "/v1/models/simple/metadata"))
    assert body["model_spec"] == {"name": "simple", "signature_name": "", "version": "1"}, body
    sig = body["metadata"]["signature_def"]["signature_def"]["serving_default"]
    assert sig["method_name"] == "tensorflow/serving/predict", sig
    a = sig["inputs"]["INPUT0"]
    assert a["dtype"] == "DT_INT32" and a["name"] == "INPUT0", a
    # the batch dimension first (simple batches), sizes as strings
    assert a["tensor_shape"] == {"dim": [{"size": "-1", "name": ""}, {"size": "16", "name": ""}],
                                 "unknown_rank": False}, a
    assert set(sig["outputs"]) == {"OUTPUT0", "OUTPUT1"}, sig


def test_predict_row_format_with_named_instances(demo):
    inst = [{"INPUT0": SIMPLE_A, "INPUT1": SIMPLE_B},
            {"INPUT0": [2 * x for x in SIMPLE_A], "INPUT1": SIMPLE_B}]
    r = post_json(demo, "/v1/models/simple:predict", {"instances": inst})
    preds = ok_json(r)["predictions"]
    assert len(preds) == 2, show(r)
    assert preds[0]["OUTPUT0"] == [a + 1 for a in SIMPLE_A], show(r)
    assert preds[1]["OUTPUT1"] == [2 * a - 1 for a in SIMPLE_A], show(r)


def test_predict_columnar_format_and_a_version(demo):
    body = {"signature_name": "serving_default",
            "inputs": {"INPUT0": [SIMPLE_A], "INPUT1": [SIMPLE_B]}}
    r = post_json(demo, "/v1/models/simple/versions/1:predict", body)
    outs = ok_json(r)["outputs"]
    assert outs["OUTPUT0"] == [[a + 1 for a in SIMPLE_A]], show(r)
    assert outs["OUTPUT1"] == [[a - 1 for a in SIMPLE_A]], show(r)


def test_predict_one_input_bare_values_nan_and_infinity(demo):
    # identity_fp32 takes a rank-2 tensor: each instance is a list
    r = post_json(demo, "/v1/models/identity_fp32:predict",
                  '{"instances": [[1.5, NaN], [-Infinity, 0.25]]}')
    preds = ok_json(r)["predictions"]
    assert preds[0][0] == 1.5 and math.isnan(preds[0][1]), show(r)
    assert preds[1] == [-math.inf, 0.25], show(r)


def test_predict_bytes_with_b64(demo):
    r = post_json(demo, "/v1/models/identity_bytes:predict",
                  {"instances": [[{"b64": "AP8="}, "text"]]})
    preds = ok_json(r)["predictions"]
    # not UTF-8: written back as {"b64": ...}; text stays a string
    assert preds == [[{"b64": "AP8="}, "text"]], show(r)


def test_predict_by_label(demo):
    # multi_version: OUTPUT0 = INPUT0 + version, INT32 [-1]; "stable" is version 2
    r = post_json(demo, "/v1/models/multi_version/labels/stable:predict",
                  {"instances": [10, 20]})
    assert ok_json(r)["predictions"] == [12, 22], show(r)
    r = post_json(demo, "/v1/models/multi_version/versions/3:predict", {"inputs": [10]})
    assert ok_json(r)["outputs"] == [13], show(r)
    r = post_json(demo, "/v1/models/multi_version:predict", {"inputs": [10]})
    assert ok_json(r)["outputs"] == [13], show(r)  # the latest version, as TF Serving's Latest
    assert_error(post_json(demo, "/v1/models/multi_version/labels/nope:predict",
                           {"instances": [[1.0]]}), 400, "Unrecognized servable version label: nope")


def test_servable_not_found_texts(demo):
    assert_error(post_json(demo, "/v1/models/nope:predict", {"instances": [1]}), 404,
                 "Servable not found for request: Latest(nope)")
    assert_error(get(demo, "/v1/models/simple/versions/42"), 404,
                 "Servable not found for request: Specific(simple, 42)")
    # percent-decoded model names
    assert_error(get(demo, "/v1/models/no%20such"), 404, "Latest(no such)")


def test_malformed_paths(demo):
    assert_error(post_json(demo, "/v1/models/simple:frobnicate", {}), 400,
                 "Malformed request: POST /v1/models/simple:frobnicate")
    assert_error(get(demo, "/v1/models/simple/versions/abc"), 400, "Malformed request: GET")
    assert_error(get(demo, "/v1/whatever"), 400, "Malformed request: GET /v1/whatever")


@pytest.mark.parametrize("body,needle", [
    ("{\"instances\": [[1, 2], [3]]}", "instances[1]: ragged"),
    ("{}", "Missing 'inputs' or 'instances' key"),  # TF Serving's own text
    ("{\"instances\": [1], \"inputs\": [1]}", "both"),
    ("{\"instances\": [[1]], \"signature_name\": \"other\"}",
     "Serving signature name: \"other\" not found"),
    ("not json", "body"),
    ("{\"instances\": [[\"a\"]]}", "instances[0]"),
])
def test_bad_bodies_are_400_naming_the_problem(demo, body, needle):
    assert_error(post_json(demo, "/v1/models/identity_fp32:predict", body), 400, needle)


def test_missing_and_unknown_inputs(demo):
    assert_error(post_json(demo, "/v1/models/simple:predict",
                           {"instances": [{"INPUT0": SIMPLE_A}]}), 400,
                 "instances[0]: input 'INPUT1': missing")
    assert_error(post_json(demo, "/v1/models/simple:predict",
                           {"instances": [{"INPUT0": SIMPLE_A, "INPUT1": SIMPLE_B, "X": 1}]}),
                 400, "input 'X': the model has no input")


def test_classify_labels_from_the_model(demo):
    # classifier: softmax over iris measurements, its labels registered with the model
    r = post_json(demo, "/v1/models/classifier:classify",
                  {"examples": [{"INPUT0": [5.1, 3.5, 1.4, 0.2]}, {"INPUT0": [6.7, 3.0, 5.2, 2.3]}]})
    results = ok_json(r)["results"]
    assert [[c[0] for c in ex] for ex in results] == [["setosa", "versicolor", "virginica"]] * 2
    best = [max(ex, key=lambda c: c[1])[0] for ex in results]
    assert best == ["setosa", "virginica"], show(r)
    assert abs(sum(c[1] for c in results[0]) - 1.0) < 1e-5, show(r)


def test_regress_with_a_context(demo):
    # identity_fp32 as a regressor: one value per example, the context filling what is missing
    r = post_json(demo, "/v1/models/identity_fp32:regress",
                  {"context": {"INPUT0": [7.5]}, "examples": [{}, {"INPUT0": [-1.0]}]})
    assert ok_json(r)["results"] == [7.5, -1.0], show(r)


def test_classify_and_regress_refusals(demo):
    assert_error(post_json(demo, "/v1/models/classifier:classify", {"instances": [[1, 2, 3, 4]]}),
                 400, "no \"examples\"")
    assert_error(post_json(demo, "/v1/models/identity_fp32:regress", {"examples": [{}]}), 400,
                 "examples[0]: feature 'INPUT0': missing")
    # simple has two outputs and no "scores": not a classifier
    assert_error(post_json(demo, "/v1/models/simple:classify",
                           {"examples": [{"INPUT0": SIMPLE_A, "INPUT1": SIMPLE_B}]}), 400,
                 "classify needs a \"scores\" output")


def test_a_large_row_body_is_decoded_whole(demo):
    # ~1.3 MB of JSON: decoded (and answered) on the server's worker pool
    rows = [[float(i), float(-i)] for i in range(60000)]
    r = post_json(demo, "/v1/models/identity_fp32:predict", {"instances": rows})
    preds = ok_json(r)["predictions"]
    assert preds == rows


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl not installed")
def test_predict_over_h2c(demo):
    out = subprocess.run(
        ["curl", "-s", "--http2-prior-knowledge", "-X", "POST", "-H", "Content-Type: application/json",
         "--data-binary", json.dumps({"inputs": [[1.0, 2.0]]}),
         demo.url("/v1/models/identity_fp32:predict"), "-w", "\n%{http_code} %{http_version}"],
        capture_output=True, text=True, timeout=20)
    body, status = out.stdout.rsplit("\n", 1)
    assert status == "200 2", out.stdout + out.stderr
    assert json.loads(body) == {"outputs": [[1.0, 2.0]]}


# ------------------------------------------------------------------------------------------
# AI Platform / Vertex AI online prediction (PROTOCOLS.md §4): the row format, plus parameters
# ------------------------------------------------------------------------------------------
def test_ai_platform_predict_with_a_version(demo):
    r = post_json(demo, "/v1/projects/p1/models/multi_version/versions/2:predict",
                  {"instances": [10, 20], "parameters": {"top_k": 1}})
    body = ok_json(r)
    assert body["predictions"] == [12, 22], show(r)
    assert body["deployedModelId"] == "2", show(r)


def test_vertex_endpoint_names_the_model(demo):
    inst = [{"INPUT0": SIMPLE_A, "INPUT1": SIMPLE_B}]
    r = post_json(demo, "/v1/projects/p/locations/us-central1/endpoints/simple:predict",
                  {"instances": inst, "extra_key": {"kept": True}})
    body = ok_json(r)
    assert body["predictions"][0]["OUTPUT0"] == [a + 1 for a in SIMPLE_A], show(r)
    assert body["deployedModelId"] == "1", show(r)


def test_vertex_endpoint_mapped_by_the_host(start_demo):
    """isv_server_set_vertex_endpoint: Vertex's numeric endpoint id runs the model (and version)
    the host mapped it to; an id not mapped still names a model; the authorizer judges the
    mapped model, never the id."""
    d = start_demo("--vertex-endpoint", "1234567890123456789=multi_version:2",
                   "--vertex-endpoint", "4321=multi_version")
    base = "/v1/projects/p/locations/us-central1/endpoints/"
    body = ok_json(post_json(d, base + "1234567890123456789:predict", {"instances": [10]}))
    assert body == {"predictions": [12], "deployedModelId": "2"}, body
    body = ok_json(post_json(d, base + "4321:predict", {"instances": [10]}))
    assert body == {"predictions": [13], "deployedModelId": "3"}, body  # the default version
    body = ok_json(post_json(d, base + "simple:predict",
                             {"instances": [{"INPUT0": SIMPLE_A, "INPUT1": SIMPLE_B}]}))
    assert body["deployedModelId"] == "1"
    assert_error(post_json(d, base + "999:predict", {"instances": [1]}), 404,
                 "Request for unknown model: '999' is not found")
    # the model stage sees the model: forbidding it refuses the endpoint mapped to it
    f = start_demo("--vertex-endpoint", "77=multi_version", "--forbid-model", "multi_version")
    r = post_json(f, base + "77:predict", {"instances": [1]})
    assert r.status_code == 403 and "multi_version" in r.text, show(r)
    # a bad mapping is refused when the demo starts (the library's ISV_EINVAL, said)
    import subprocess
    from isvtest import demo_path
    p = subprocess.run([demo_path(), "--listen", "127.0.0.1:0", "--vertex-endpoint",
                        "no/slash=simple"], capture_output=True, text=True, timeout=20)
    assert p.returncode != 0 and "the id must be" in p.stderr, p.stderr


def test_vertex_errors(demo):
    assert_error(post_json(demo, "/v1/projects/p/models/nope:predict", {"instances": [1]}), 404,
                 "Request for unknown model: 'nope' is not found")
    assert_error(post_json(demo, "/v1/projects/p/locations/l/endpoints/simple:predict",
                           {"inputs": {"INPUT0": [SIMPLE_A]}}), 400, "takes \"instances\"")
    # one bad instance: no predictions at all, the error names it
    r = post_json(demo, "/v1/projects/p/models/simple:predict",
                  {"instances": [{"INPUT0": SIMPLE_A, "INPUT1": SIMPLE_B},
                                 {"INPUT0": SIMPLE_A[:3], "INPUT1": SIMPLE_B}]})
    msg = assert_error(r, 400, "instances[1]")
    assert "predictions" not in r.text, msg


def test_the_seed_walkthrough(demo):
    """TF Serving's REST API document (seeds/000), its curl lines word for word."""
    r = post_json(demo, "/v1/models/saved_model_half_plus_three:predict",
                  {"instances": [1.0, 2.0, 5.0]})
    assert ok_json(r) == {"predictions": [3.5, 4.0, 5.5]}, show(r)
    r = post_json(demo, "/v1/models/saved_model_half_plus_three:regress",
                  {"signature_name": "tensorflow/serving/regress",
                   "examples": [{"x": 1.0}, {"x": 2.0}]})
    assert ok_json(r) == {"results": [3.5, 4.0]}, show(r)
    st = ok_json(get(demo, "/v1/models/saved_model_half_plus_three"))
    assert st["model_version_status"][0]["version"] == "123", st
    assert_error(post_json(demo, "/v1/models/half:predict", {"instances": [1.0]}), 404,
                 "Servable not found for request: Latest(half)")


def test_multi_input_rows_columns_and_bytes_outputs(demo):
    """tf_multi (the seed's multi-input examples): three inputs of three ranks and types, a
    {"b64"} input, and an output named *_bytes written as {"b64"} whatever its bytes."""
    inst = [{"tag": "foo", "signal": [1, 2, 3, 4, 5], "sensor": [[1, 2], [3, 4]]},
            {"tag": {"b64": "AP8="}, "signal": [1, 1, 1, 1, 1.5], "sensor": [[5, 6], [7, 8]]}]
    r = post_json(demo, "/v1/models/tf_multi:predict", {"instances": inst})
    assert ok_json(r)["predictions"] == [
        {"tag_len": 3, "signal_sum": 15.0, "sensor_bytes": {"b64": "Zm9v"}},
        {"tag_len": 2, "signal_sum": 5.5, "sensor_bytes": {"b64": "AP8="}}], show(r)
    cols = {"tag": ["x", "yz"], "signal": [[1, 2, 3, 4, 5], [0, 0, 0, 0, 1]],
            "sensor": [[[1, 2], [3, 4]], [[5, 6], [7, 8]]]}
    r = post_json(demo, "/v1/models/tf_multi:predict", {"inputs": cols})
    assert ok_json(r)["outputs"] == {"tag_len": [1, 2], "signal_sum": [15.0, 1.0],
                                     "sensor_bytes": [{"b64": "eA=="}, {"b64": "eXo="}]}, show(r)
    # an instance whose sensor is not [2, 2]: the model's declared shape says so
    bad = [dict(inst[0], sensor=[[1, 2, 3], [4, 5, 6]])]
    assert_error(post_json(demo, "/v1/models/tf_multi:predict", {"instances": bad}), 400,
                 "sensor")


def test_named_signatures(demo):
    """half_plus_three registers serving_default, tensorflow/serving/regress (y as "outputs")
    and tensorflow/serving/classify (y as "scores"): metadata lists them, a body chooses one, and
    classify and regress need a signature of their method."""
    sigs = ok_json(get(demo, "/v1/models/half_plus_three/metadata"))["metadata"]["signature_def"][
        "signature_def"]
    assert set(sigs) == {"serving_default", "tensorflow/serving/regress",
                         "tensorflow/serving/classify"}, sigs
    reg = sigs["tensorflow/serving/regress"]
    assert reg["method_name"] == "tensorflow/serving/regress", reg
    assert reg["outputs"]["outputs"]["name"] == "y", reg  # alias -> the tensor
    r = post_json(demo, "/v1/models/half_plus_three:classify",
                  {"signature_name": "tensorflow/serving/classify", "examples": [{"x": 4.0}]})
    assert ok_json(r) == {"results": [[["0", 5.0]]]}, show(r)
    assert_error(post_json(demo, "/v1/models/half_plus_three:classify",
                           {"signature_name": "tensorflow/serving/regress",
                            "examples": [{"x": 4.0}]}), 400,
                 "Expected classification signature method_name to be tensorflow/serving/classify")
    # predict through the regress signature: the output under its alias
    r = post_json(demo, "/v1/models/half_plus_three:predict",
                  {"signature_name": "tensorflow/serving/regress", "inputs": {"x": [2.0]}})
    assert ok_json(r) == {"outputs": [4.0]}, show(r)
    assert_error(post_json(demo, "/v1/models/half_plus_three:predict",
                           {"signature_name": "other", "instances": [1.0]}), 400,
                 "Serving signature name: \"other\" not found in signature def")


def test_vertex_custom_container_contract(start_demo):
    """AIP_HTTP_PORT, AIP_PREDICT_ROUTE and AIP_HEALTH_ROUTE: the same binary as a Vertex AI
    container — the model (--vertex-model) answers at the predict route, health at its own."""
    import requests
    port = free_port()
    d = start_demo("--vertex-model", "multi_version",
                   env={"AIP_HTTP_PORT": str(port),
                        "AIP_PREDICT_ROUTE": "/v1/endpoints/123/deployedModels/456:predict",
                        "AIP_HEALTH_ROUTE": "/ping"})
    base = "http://127.0.0.1:%d" % port
    r = requests.get(base + "/ping", timeout=5)
    assert r.status_code == 200, show(r)
    r = requests.post(base + "/v1/endpoints/123/deployedModels/456:predict",
                      json={"instances": [1, 2], "parameters": {"x": 1}}, timeout=5)
    assert ok_json(r) == {"predictions": [4, 5], "deployedModelId": "3"}, show(r)
    # the other protocols are still served on that port
    assert get(d, "/v2/health/live").status_code == 200
