"""Triton's trace extension (GET/POST /v2/trace/setting and /v2/models/{m}/trace/setting, gRPC
TraceSetting): the settings read and changed over both, shared by REST and gRPC, applied whole
or refused naming the problem; a model's settings override the global ones and fall back to
them when cleared with null; and they drive what the demo (the host) traces: the level, the
rate, the count, and the trace_file / log_frequency it writes (Triton's indexed JSON files)."""
import json
import os
import tempfile
import time

import grpc
import pytest
import requests

from grpc_stubs import load_stubs, make_channel
from isvtest import simple_body, tensor

DEFAULTS = {"trace_level": ["OFF"], "trace_rate": "1000", "trace_count": "-1",
            "log_frequency": "0", "trace_file": ""}
T = 5


@pytest.fixture
def tdemo(start_demo):
    return start_demo("--threads", "1")


def setting(d, body=None, model=None):
    path = "/v2/models/%s/trace/setting" % model if model else "/v2/trace/setting"
    if body is None:
        return requests.get(d.url(path), timeout=T)
    return requests.post(d.url(path), json=body, timeout=T)


def ok(r):
    assert r.status_code == 200, r.text
    return r.json()


def infer_simple(d, n=1):
    for _ in range(n):
        assert requests.post(d.url("/v2/models/simple/infer"), json=simple_body(),
                             timeout=T).status_code == 200


def infer_identity(d, n=1):
    for _ in range(n):
        r = requests.post(d.url("/v2/models/identity_int32/infer"),
                          json={"inputs": [tensor("INPUT0", "INT32", [1, 1], [7])]}, timeout=T)
        assert r.status_code == 200, r.text


def traces(path, n, timeout=5.0):
    """The JSON lines of path once there are n of them (and no more after a moment)."""
    end = time.monotonic() + timeout
    got = []
    while time.monotonic() < end:
        got = [json.loads(l) for l in open(path).read().splitlines()] if os.path.exists(path) else []
        if len(got) >= n:
            break
        time.sleep(0.02)
    time.sleep(0.1)
    got = [json.loads(l) for l in open(path).read().splitlines()] if os.path.exists(path) else []
    assert len(got) == n, got
    return got


def test_rest_defaults_and_a_global_change(tdemo):
    assert ok(setting(tdemo)) == DEFAULTS
    assert "trace" in ok(requests.get(tdemo.url("/v2"), timeout=T))["extensions"]
    with tempfile.TemporaryDirectory() as td:
        path = os.path.join(td, "trace.json")
        infer_simple(tdemo, 3)  # level OFF: nothing traced, no file
        got = ok(setting(tdemo, {"trace_level": ["TIMESTAMPS"], "trace_rate": "1",
                                 "trace_file": path}))
        assert got == dict(DEFAULTS, trace_level=["TIMESTAMPS"], trace_rate="1", trace_file=path)
        assert ok(setting(tdemo)) == got
        infer_simple(tdemo, 2)
        t = traces(path, 2)
        assert t[0]["model_name"] == "simple" and t[0]["model_version"] == "1"
        assert [s["name"] for s in t[0]["timestamps"]][0] == "REQUEST_START"
        # the rate: 1 in 3 (a new rate counts from its first request)
        ok(setting(tdemo, {"trace_rate": 3}))
        infer_simple(tdemo, 6)
        traces(path, 4)
        # the count: two more, then none; it counts down where it is reported
        ok(setting(tdemo, {"trace_rate": "1", "trace_count": "2"}))
        infer_simple(tdemo, 4)
        traces(path, 6)
        assert ok(setting(tdemo))["trace_count"] == "0"
        # null: a global setting returns to what the server started with
        got = ok(setting(tdemo, {"trace_count": None, "trace_level": None}))
        assert got["trace_count"] == "-1" and got["trace_level"] == ["OFF"], got


def test_model_settings_override_and_fall_back(tdemo):
    with tempfile.TemporaryDirectory() as td:
        glob, own = os.path.join(td, "global.json"), os.path.join(td, "simple.json")
        ok(setting(tdemo, {"trace_level": ["TIMESTAMPS"], "trace_rate": "1", "trace_file": glob}))
        got = ok(setting(tdemo, {"trace_file": own}, model="simple"))
        # the model's own file; everything else still the global settings
        assert got == dict(DEFAULTS, trace_level=["TIMESTAMPS"], trace_rate="1", trace_file=own)
        assert ok(setting(tdemo))["trace_file"] == glob  # the global ones unchanged
        infer_simple(tdemo, 2)
        infer_identity(tdemo, 1)
        assert {t["model_name"] for t in traces(own, 2)} == {"simple"}
        assert [t["model_name"] for t in traces(glob, 1)] == ["identity_int32"]
        # the model off, the others on
        ok(setting(tdemo, {"trace_level": ["OFF"]}, model="simple"))
        infer_simple(tdemo, 2)
        infer_identity(tdemo, 1)
        traces(own, 2)
        traces(glob, 2)
        # a global change reaches the model where it has no setting of its own
        ok(setting(tdemo, {"trace_rate": "5"}))
        assert ok(setting(tdemo, model="simple"))["trace_rate"] == "5"
        # cleared with null: the global settings again (level on, the global file)
        got = ok(setting(tdemo, {"trace_level": None, "trace_file": None}, model="simple"))
        assert got == ok(setting(tdemo)), got
        ok(setting(tdemo, {"trace_rate": "1"}))
        infer_simple(tdemo, 1)
        assert traces(glob, 3)[-1]["model_name"] == "simple"


def test_log_frequency_writes_tritons_indexed_files(tdemo):
    with tempfile.TemporaryDirectory() as td:
        path = os.path.join(td, "trace.json")
        ok(setting(tdemo, {"trace_level": ["TIMESTAMPS"], "trace_rate": "1", "trace_file": path,
                           "log_frequency": "2", "trace_count": "5"}))
        infer_simple(tdemo, 6)
        end = time.monotonic() + T
        names = ["%s.%d" % (path, i) for i in range(3)]
        while time.monotonic() < end and not all(os.path.exists(n) for n in names):
            time.sleep(0.02)
        files = [json.load(open(n)) for n in names]  # each a JSON array, as Triton writes
        # two, two, and the fifth alone when the count ran out
        assert [len(f) for f in files] == [2, 2, 1], files
        ids = [t["id"] for f in files for t in f]
        assert ids == sorted(ids) and len(set(ids)) == 5
        assert all(t["model_name"] == "simple" and t["timestamps"] for f in files for t in f)
        assert not os.path.exists(path + ".3")


def test_bad_settings_are_refused_whole(tdemo):
    for body, status, says in (
            ({"trace_rate": "2", "trace_mode": "triton"}, 400, "unknown trace setting 'trace_mode'"),
            ({"trace_level": ["TENSORS"]}, 501, "'TENSORS' is unimplemented"),
            ({"trace_level": ["LOUD"]}, 400, "unknown trace level 'LOUD'"),
            ({"trace_rate": "0"}, 400, "'trace_rate' must be an integer from 1"),
            ({"trace_count": "-5"}, 400, "'trace_count' must be -1"),
            ({"log_frequency": "often"}, 400, "'log_frequency' must be an integer"),
            ({"trace_file": 3}, 400, "'trace_file' must be a string"),
            ({"trace_level": 1}, 400, "'trace_level' must be a string or an array"),
            ([], 400, "must be a JSON object")):
        r = setting(tdemo, body)
        assert r.status_code == status and says in r.json()["error"], (body, r.text)
    assert ok(setting(tdemo)) == DEFAULTS  # trace_rate did not change with the unknown one
    r = setting(tdemo, {"trace_rate": "2"}, model="no_such_model")
    assert r.status_code == 404 and "no_such_model" in r.json()["error"], r.text
    r = requests.post(tdemo.url("/v2/trace/setting"), data=b"{\"trace_rate\":", timeout=T)
    assert r.status_code == 400 and "malformed trace settings" in r.json()["error"], r.text


def grpc_call(ch, pb):
    return ch.unary_unary("/inference.GRPCInferenceService/TraceSetting",
                          request_serializer=pb.TraceSettingRequest.SerializeToString,
                          response_deserializer=pb.TraceSettingResponse.FromString)


def as_dict(resp):
    return {k: list(v.value) for k, v in resp.settings.items()}


def test_grpc_trace_setting_shares_the_settings(tdemo):
    pb = load_stubs().pb
    with tempfile.TemporaryDirectory() as td, make_channel(tdemo) as ch:
        call = grpc_call(ch, pb)
        got = as_dict(call(pb.TraceSettingRequest(), timeout=T))
        assert got == {k: v if isinstance(v, list) else [v] for k, v in DEFAULTS.items()}
        path = os.path.join(td, "g.json")
        req = pb.TraceSettingRequest()
        req.settings["trace_level"].value.extend(["TIMESTAMPS"])
        req.settings["trace_rate"].value.append("1")
        req.settings["trace_file"].value.append(path)
        got = as_dict(call(req, timeout=T))
        assert got["trace_level"] == ["TIMESTAMPS"] and got["trace_file"] == [path]
        assert ok(setting(tdemo))["trace_file"] == path  # REST sees the same settings
        # a model's own count; cleared (a SettingValue without values): the global one again
        req = pb.TraceSettingRequest(model_name="simple")
        req.settings["trace_count"].value.append("1")
        assert as_dict(call(req, timeout=T))["trace_count"] == ["1"]
        assert ok(setting(tdemo, model="simple"))["trace_count"] == "1"
        infer_simple(tdemo, 3)
        traces(path, 1)
        req = pb.TraceSettingRequest(model_name="simple")
        req.settings["trace_count"].CopyFrom(pb.TraceSettingRequest.SettingValue())
        assert as_dict(call(req, timeout=T))["trace_count"] == ["-1"]
        def req_of(model="", **settings):
            r = pb.TraceSettingRequest(model_name=model)
            for k, v in settings.items():
                r.settings[k].value.extend(v)
            return r
        for req, code, says in (
                (req_of("nope", trace_rate=["1"]), grpc.StatusCode.NOT_FOUND, "nope"),
                (req_of(trace_rate=["1", "2"]), grpc.StatusCode.INVALID_ARGUMENT,
                 "exactly one value"),
                (req_of(trace_level=["TENSORS"]), grpc.StatusCode.UNIMPLEMENTED, "TENSORS"),
                (req_of(colour=["red"]), grpc.StatusCode.INVALID_ARGUMENT,
                 "unknown trace setting 'colour'")):
            with pytest.raises(grpc.RpcError) as e:
                call(req, timeout=T)
            assert e.value.code() == code and says in e.value.details(), e.value.details()


def test_without_a_trace_hook_the_extension_says_so(start_demo):
    d = start_demo("--no-tracing", "--threads", "1")
    assert "trace" not in ok(requests.get(d.url("/v2"), timeout=T))["extensions"]
    r = setting(d)
    assert r.status_code == 501 and "no trace hook" in r.json()["error"], r.text
    pb = load_stubs().pb
    with make_channel(d) as ch:
        with pytest.raises(grpc.RpcError) as e:
            grpc_call(ch, pb)(pb.TraceSettingRequest(), timeout=T)
        assert e.value.code() == grpc.StatusCode.UNIMPLEMENTED
