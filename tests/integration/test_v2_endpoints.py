"""Every KServe V2 REST endpoint (PROTOCOLS.md §1) against the demo's model zoo."""
import pytest

from isvtest import (assert_error, get, infer, ok_json, outputs_by_name, show, simple_body,
                     post_json, tensor)


# --- health -------------------------------------------------------------------------------
def test_health_live(demo):
    r = get(demo, "/v2/health/live")
    assert ok_json(r) == {"live": True}, show(r)
    assert "application/json" in r.headers.get("Content-Type", ""), show(r)


def test_health_ready(demo):
    # Server ready = online (default); the LOADING model does not make the server unready.
    r = get(demo, "/v2/health/ready")
    assert ok_json(r) == {"ready": True}, show(r)


# --- server metadata ----------------------------------------------------------------------
def test_server_metadata(demo):
    r = get(demo, "/v2")
    body = ok_json(r)
    assert isinstance(body.get("name"), str) and body["name"], show(r)
    assert isinstance(body.get("version"), str) and body["version"], show(r)
    ext = body.get("extensions")
    assert isinstance(ext, list), show(r)
    assert all(isinstance(e, str) for e in ext), show(r)
    # The classification extension is implemented (seed 004), so it is advertised.
    assert "classification" in ext, show(r)


# --- model metadata -----------------------------------------------------------------------
def _io(lst):
    return {t["name"]: t for t in lst}


@pytest.mark.parametrize("path", ["/v2/models/simple", "/v2/models/simple/versions/1"])
def test_model_metadata_simple(demo, path):
    r = get(demo, path)
    body = ok_json(r)
    assert body["name"] == "simple", show(r)
    assert isinstance(body["versions"], list) and "1" in body["versions"], show(r)
    assert isinstance(body["platform"], str) and body["platform"], show(r)
    ins, outs = _io(body["inputs"]), _io(body["outputs"])
    assert set(ins) == {"INPUT0", "INPUT1"}, show(r)
    assert set(outs) == {"OUTPUT0", "OUTPUT1"}, show(r)
    for t in list(ins.values()) + list(outs.values()):
        assert t["datatype"] == "INT32", show(r)
        assert t["shape"] == [-1, 16], show(r)


def test_model_metadata_multi_version_lists_versions(demo):
    r = get(demo, "/v2/models/multi_version")
    body = ok_json(r)
    assert body["name"] == "multi_version", show(r)
    assert sorted(body["versions"]) == ["1", "2", "3"], show(r)
    assert _io(body["inputs"])["INPUT0"]["datatype"] == "INT32", show(r)
    assert _io(body["inputs"])["INPUT0"]["shape"] == [-1], show(r)


def test_model_metadata_other_models(demo):
    cases = {
        "simple_string": ("BYTES", [-1, 16]),
        "classifier": ("FP32", [-1, 4]),
        "identity_fp16": ("FP16", [-1, -1]),
        "identity_bytes": ("BYTES", [-1, -1]),
    }
    for model, (dt, shape) in cases.items():
        r = get(demo, "/v2/models/" + model)
        body = ok_json(r)
        assert body["name"] == model, show(r)
        inp = _io(body["inputs"])["INPUT0"]
        assert inp["datatype"] == dt and inp["shape"] == shape, show(r)
    r = get(demo, "/v2/models/half_plus_three")
    body = ok_json(r)
    assert body["versions"] == ["123"], show(r)
    assert _io(body["inputs"])["x"]["datatype"] == "FP32", show(r)
    assert _io(body["outputs"])["y"]["datatype"] == "FP32", show(r)
    cls = ok_json(get(demo, "/v2/models/classifier"))
    assert _io(cls["outputs"])["OUTPUT0"]["shape"] == [-1, 3], cls


# --- model ready --------------------------------------------------------------------------
@pytest.mark.parametrize("path", ["/v2/models/simple/ready", "/v2/models/simple/versions/1/ready",
                                  "/v2/models/multi_version/versions/2/ready"])
def test_model_ready(demo, path):
    r = get(demo, path)
    assert ok_json(r) == {"ready": True}, show(r)


@pytest.mark.parametrize("path", ["/v2/models/loading/ready", "/v2/models/loading/versions/1/ready"])
def test_model_not_ready_loading(demo, path):
    r = get(demo, path)
    assert r.status_code == 503, show(r)
    assert ok_json(r, 503) == {"ready": False}, show(r)


def test_loading_does_not_make_server_unready(demo):
    # Default (non-strict) readiness: a LOADING model makes only that model not ready.
    assert ok_json(get(demo, "/v2/health/ready")) == {"ready": True}


# --- infer with and without a version -----------------------------------------------------
@pytest.mark.parametrize("version", [None, "1"])
def test_infer_simple_with_and_without_version(demo, version):
    r = post_json(demo, "/v2/models/simple%s/infer" % ("" if version is None else "/versions/" + version),
                  simple_body())
    body = ok_json(r)
    assert body["model_name"] == "simple", show(r)
    assert body["model_version"] == "1", show(r)
    outs = outputs_by_name(body)
    assert outs["OUTPUT0"]["data"] == [i + 1 for i in range(16)], show(r)


@pytest.mark.parametrize("version,add", [(None, 3), ("1", 1), ("2", 2), ("3", 3)])
def test_infer_multi_version(demo, version, add):
    r = infer(demo, "multi_version", [tensor("INPUT0", "INT32", [4], [10, 20, -5, 0])],
              version=version)
    body = ok_json(r)
    assert body["model_name"] == "multi_version", show(r)
    assert body["model_version"] == str(add), show(r)
    out = outputs_by_name(body)["OUTPUT0"]
    assert out["data"] == [10 + add, 20 + add, -5 + add, add], show(r)
    assert out["shape"] == [4] and out["datatype"] == "INT32", show(r)


@pytest.mark.parametrize("label", ["stable", "canary"])
def test_labels_not_reachable_from_v2_paths(demo, label):
    # Labels are a TF Serving notion; on a V2 path "stable" is just an unknown version.
    r = infer(demo, "multi_version", [tensor("INPUT0", "INT32", [1], [1])], version=label)
    assert_error(r, 404, label)


def test_half_plus_three(demo):
    r = infer(demo, "half_plus_three", [tensor("x", "FP32", [3], [1.0, 2.0, 5.0])])
    body = ok_json(r)
    assert body["model_version"] == "123", show(r)
    y = outputs_by_name(body)["y"]
    assert y["data"] == [3.5, 4.0, 5.5] and y["datatype"] == "FP32" and y["shape"] == [3], show(r)
    r = infer(demo, "half_plus_three", [tensor("x", "FP32", [1], [2.0])], version="123")
    assert outputs_by_name(ok_json(r))["y"]["data"] == [4.0], show(r)


def test_strict_readiness(start_demo):
    # Triton's strict readiness: the LOADING model makes the whole server not ready.
    d = start_demo("--strict-readiness")
    r = get(d, "/v2/health/ready")
    assert r.status_code == 503, show(r)
    assert ok_json(r, 503) == {"ready": False}, show(r)
    assert ok_json(get(d, "/v2/health/live")) == {"live": True}
    assert ok_json(get(d, "/v2/models/simple/ready")) == {"ready": True}
