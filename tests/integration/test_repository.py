"""Triton's model repository extension (docs/protocol/extension_model_repository.md): POST
/v2/repository/index, /v2/repository/models/{m}/load and /unload over HTTP/1.1, and gRPC
RepositoryIndex / RepositoryModelLoad / RepositoryModelUnload (stubs from the project's proto,
which has Triton's field numbers), against the demo, whose zoo is a repository (repo.c):
unload removes a model, load registers it again (after --load-delay-ms), with a config
override of max_batch_size.

Shapes and words as Triton's http_server.cc / grpc_server.cc: success is 200 with an empty body
(an empty message); index entries carry version and state when known and reason when not empty;
an unknown model's load fails "failed to load 'x', failed to poll from model repository" (the
demo answers 404: a client's mistake is never a 500 here); a server without model control
refuses "explicit model load / unload is not allowed"."""
import socket
import threading
import time

import grpc
import pytest
import requests

from grpc_stubs import curl_h2, load_stubs, make_channel, expect_rpc_error
from isvtest import Demo, simple_body, slow_body

T = 10
DELAY_MS = 200  # each load of the module's demo takes this long


@pytest.fixture(scope="module")
def rd():
    d = Demo(extra_args=("--load-delay-ms", str(DELAY_MS)))
    # the zoo's `warm` model is LOADING for its warmup's ~0.8 s after the start: the index is
    # steady (and these tests' comparisons of it hold) once that is over
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and requests.get(
            d.url("/v2/models/warm/ready"), timeout=T).status_code != 200:
        time.sleep(0.05)
    yield d
    assert d.stop(timeout=10.0) == 0, d.stderr_tail()


def post(demo, path, body=None, data=None, **kw):
    return requests.post(demo.url(path), json=body, data=data, timeout=T, **kw)


def index(demo, body=None):
    r = post(demo, "/v2/repository/index", body)
    assert r.status_code == 200, r.text
    return r.json()


def entries(ix, name):
    return [e for e in ix if e["name"] == name]


def load(demo, model, config=None, expect=200):
    body = {"parameters": {"config": config}} if config is not None else {}
    r = post(demo, "/v2/repository/models/%s/load" % model, body)
    assert r.status_code == expect, r.text
    if expect == 200:
        assert r.content == b"" and r.headers["Content-Type"] == "application/json"
    return r


def unload(demo, model, expect=200, **params):
    r = post(demo, "/v2/repository/models/%s/unload" % model, {"parameters": params})
    assert r.status_code == expect, r.text
    if expect == 200:
        assert r.content == b""
    return r


def infer_simple(demo, model="simple", rows=1):
    return post(demo, "/v2/models/%s/infer" % model, simple_body(rows))


def error_of(r, status):
    assert r.status_code == status, (r.status_code, r.text)
    return r.json()["error"]


# ---- HTTP --------------------------------------------------------------------------------------

def test_index_lists_the_registered_models_sorted(rd):
    ix = index(rd)  # no body at all
    assert ix == index(rd, {}) == index(rd, {"ready": False, "other": [1, {"x": 2}]})
    names = [e["name"] for e in ix]
    assert names == sorted(names)
    assert entries(ix, "simple") == [{"name": "simple", "version": "1", "state": "READY"}]
    assert [e["version"] for e in entries(ix, "multi_version")] == ["1", "2", "3"]
    assert entries(ix, "loading") == [{"name": "loading", "version": "1", "state": "LOADING"}]
    assert not any(n.startswith("@") for n in names)  # the hidden model is no model of theirs
    assert "batched" in names and "echo" in names  # not reloadable, still registered: listed
    ext = requests.get(rd.url("/v2"), timeout=T).json()["extensions"]
    assert "model_repository" in ext and "model_repository(unload_dependents)" in ext


def test_unload_then_load_again(rd):
    assert infer_simple(rd).status_code == 200
    unload(rd, "simple", unload_dependents=False)
    assert error_of(infer_simple(rd), 404) == "Request for unknown model: 'simple' is not found"
    assert requests.get(rd.url("/v2/models/simple/ready"), timeout=T).status_code == 404
    ix = index(rd)
    assert entries(ix, "simple") == [{"name": "simple", "state": "UNAVAILABLE",
                                      "reason": "unloaded"}]
    assert entries(index(rd, {"ready": True}), "simple") == []
    unload(rd, "simple")  # unloading what is not loaded succeeds, as Triton
    t0 = time.monotonic()
    load(rd, "simple")
    assert time.monotonic() - t0 >= DELAY_MS / 1000 * 0.9  # the answer waited for the load
    r = infer_simple(rd)
    assert r.status_code == 200, r.text
    assert entries(index(rd), "simple") == [{"name": "simple", "version": "1", "state": "READY"}]
    load(rd, "simple")  # a reload of a loaded model
    assert infer_simple(rd).status_code == 200


def test_ready_filter(rd):
    unload(rd, "simple_string")
    try:
        ready = index(rd, {"ready": True})
        assert ready and all(e["state"] == "READY" for e in ready)
        names = {e["name"] for e in ready}
        assert "simple_string" not in names and "loading" not in names and "simple" in names
        everything = index(rd, {"ready": False})
        assert len(everything) > len(ready)
    finally:
        load(rd, "simple_string")


def test_config_override(rd):
    cfg = lambda: requests.get(rd.url("/v2/models/simple_int8/config"), timeout=T).json()
    body = lambda rows: {"inputs": [
        {"name": n, "datatype": "INT8", "shape": [rows, 16], "data": [1] * (16 * rows)}
        for n in ("INPUT0", "INPUT1")]}
    assert cfg()["max_batch_size"] == 8
    load(rd, "simple_int8", config='{"name": "simple_int8", "max_batch_size": 4}')
    assert cfg()["max_batch_size"] == 4
    assert post(rd, "/v2/models/simple_int8/infer", body(4)).status_code == 200
    assert post(rd, "/v2/models/simple_int8/infer", body(5)).status_code == 400
    # what the demo cannot honour, named; the model keeps serving as it was
    assert "\"input\"" in error_of(load(rd, "simple_int8", '{"input": []}', expect=400), 400)
    assert "'simple_int8'" in error_of(load(rd, "simple_int8", '{"name": "x"}', expect=400), 400)
    assert "max_batch_size" in error_of(load(rd, "simple_int8", '{"max_batch_size": -1}', 400), 400)
    e = error_of(load(rd, "simple_int8", '{"max_batch_size": 1.5}', 400), 400)
    assert "max_batch_size" in e
    assert cfg()["max_batch_size"] == 4
    load(rd, "simple_int8")  # without an override: the zoo's config again
    assert cfg()["max_batch_size"] == 8
    # JSON escapes in the override are decoded, \uXXXX too (a NUL is refused, never cut)
    load(rd, "simple_int8", config='{"\\u006eame": "simple\\u005fint8", "max_batch_size": 2}')
    assert cfg()["max_batch_size"] == 2
    e = error_of(load(rd, "simple_int8", '{"name": "simple_int8\\u0000x"}', expect=400), 400)
    assert "'simple_int8'" in e
    load(rd, "simple_int8")


def test_request_errors(rd):
    url = "/v2/repository/models/simple/load"
    e = error_of(post(rd, "/v2/repository/models/nope/load", {}), 404)
    assert e == "failed to load 'nope', failed to poll from model repository"
    assert "not valid JSON" in error_of(post(rd, url, data=b'{"parameters": '), 400)
    assert "JSON object" in error_of(post(rd, url, data=b'[1, 2]'), 400)
    assert "\"parameters\" must be a JSON object" in error_of(post(rd, url, {"parameters": 3}), 400)
    e = error_of(post(rd, url, {"parameters": {"config": {"max_batch_size": 4}}}), 400)
    assert "invalid value type for load parameter 'config'" in e
    assert "JSON object" in error_of(post(rd, url, {"parameters": {"config": "[4]"}}), 400)
    assert "not valid JSON" in error_of(post(rd, url, {"parameters": {"config": "{\"a\": }"}}), 400)
    assert "NUL" in error_of(post(rd, url, {"parameters": {"config": "{}\u0000"}}), 400)
    e = error_of(post(rd, url, {"parameters": {"file:1/model.onnx": "AAAA"}}), 501)
    assert "file:1/model.onnx" in e and "not supported" in e
    e = error_of(post(rd, url, {"parameters": {"colour": "blue"}}), 400)
    assert e == "unrecognized load parameter 'colour'."
    e = error_of(post(rd, "/v2/repository/models/simple/unload",
                      {"parameters": {"unload_dependents": "yes"}}), 400)
    assert e.startswith("Unable to parse 'unload_dependents'")
    assert "'ready'" in error_of(post(rd, "/v2/repository/index", {"ready": 1}), 400)
    assert error_of(post(rd, "/v2/repository/models/%00x/load", {}), 400)
    e = error_of(post(rd, "/v2/repository/other/models/simple/load", {}), 501)
    assert e == "'repository_name' specification is not supported"
    assert requests.get(rd.url("/v2/repository/index"), timeout=T).status_code == 405
    # models the demo's repository could not load again are not unloaded
    assert "not in the demo's repository" in error_of(
        post(rd, "/v2/repository/models/batched/unload", {}), 400)
    assert "not from the demo's repository" in error_of(
        post(rd, "/v2/repository/models/batched/load", {}), 400)
    assert entries(index(rd), "batched")[0]["state"] == "READY"
    assert infer_simple(rd).status_code == 200  # nothing above touched simple


def test_unload_while_a_request_runs(rd):
    done = {}

    def run():
        done["r"] = post(rd, "/v2/models/slow/infer", slow_body(rd, 1500))

    t = threading.Thread(target=run)
    t.start()
    time.sleep(0.3)  # it runs now, on a worker thread
    t0 = time.monotonic()
    unload(rd, "slow")
    assert time.monotonic() - t0 < 1.0  # the unload does not wait for it
    e = error_of(post(rd, "/v2/models/slow/infer", slow_body_static(1)), 404)
    assert "'slow'" in e
    t.join(T)
    r = done["r"]
    assert r.status_code == 200, r.text  # the running request finished on the model it had
    assert r.json()["outputs"][0]["data"] == [1500]
    load(rd, "slow")
    assert post(rd, "/v2/models/slow/infer", slow_body_static(5)).status_code == 200


def slow_body_static(ms):
    return {"inputs": [{"name": "INPUT0", "datatype": "INT32", "shape": [1], "data": [ms]}]}


def test_client_gone_during_a_load(rd):
    unload(rd, "identity_fp32")
    body = b"{}"
    req = (b"POST /v2/repository/models/identity_fp32/load HTTP/1.1\r\nHost: x\r\n"
           b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body)) + body
    for _ in range(3):  # the client leaves while the host is still loading
        s = socket.create_connection((rd.host, rd.port), timeout=T)
        s.sendall(req)
        s.close()
    time.sleep(3 * DELAY_MS / 1000 + 0.5)  # one at a time: three loads
    assert rd.alive()
    assert entries(index(rd), "identity_fp32")[0]["state"] == "READY"


def test_operations_run_one_at_a_time(start_demo):
    # one loop: operations queue one at a time per server (each loop of --threads has its own
    # repository callbacks; the demo's serialise the registration itself)
    rd = start_demo("--load-delay-ms", str(DELAY_MS), "--threads", "1")
    unload(rd, "identity_int16")
    res = []

    def op(path):
        t0 = time.monotonic()
        r = post(rd, path, {})
        res.append((r.status_code, time.monotonic() - t0))

    ts = [threading.Thread(target=op, args=("/v2/repository/models/identity_int16/load",))
          for _ in range(3)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(T)
    assert [c for c, _ in res] == [200, 200, 200]
    assert max(d for _, d in res) >= 3 * DELAY_MS / 1000 * 0.9  # the last waited for two more


def test_over_h2c(rd):
    """REST over HTTP/2 (prior knowledge) takes the same path: the answer waits for the load."""
    r = curl_h2(rd, "/v2/repository/models/identity_uint8/unload", data=b"{}")
    assert (r.status, r.body, r.http_version) == (200, b"", "2")
    r = curl_h2(rd, "/v2/repository/models/identity_uint8/load",
                data=b'{"parameters": {"config": "{\\"max_batch_size\\": 3}"}}')
    assert (r.status, r.body) == (200, b""), r.body
    assert r.elapsed >= DELAY_MS / 1000 * 0.9
    c = requests.get(rd.url("/v2/models/identity_uint8/config"), timeout=T).json()
    assert c["max_batch_size"] == 3
    load(rd, "identity_uint8")


# ---- gRPC --------------------------------------------------------------------------------------

def test_grpc_index_unload_load(rd):
    pb = load_stubs()
    with make_channel(rd) as ch:
        stub = pb.pb_grpc.GRPCInferenceServiceStub(ch)
        ix = stub.RepositoryIndex(pb.pb.RepositoryIndexRequest(), timeout=T).models
        rest = index(rd)
        assert [(m.name, m.version, m.state, m.reason) for m in ix] == \
            [(e["name"], e.get("version", ""), e.get("state", ""), e.get("reason", ""))
             for e in rest]
        md = stub.ServerMetadata(pb.pb.ServerMetadataRequest(), timeout=T)
        assert "model_repository" in md.extensions

        resp = stub.RepositoryModelUnload(pb.pb.RepositoryModelUnloadRequest(
            model_name="classifier",
            parameters={"unload_dependents": pb.pb.ModelRepositoryParameter(bool_param=True)}),
            timeout=T)
        assert resp.ByteSize() == 0
        expect_rpc_error(stub.ModelMetadata, grpc.StatusCode.NOT_FOUND, "'classifier'",
                         request=pb.pb.ModelMetadataRequest(name="classifier"), timeout=T)
        ix = stub.RepositoryIndex(pb.pb.RepositoryIndexRequest(), timeout=T).models
        [c] = [m for m in ix if m.name == "classifier"]
        assert (c.version, c.state, c.reason) == ("", "UNAVAILABLE", "unloaded")
        ready = stub.RepositoryIndex(pb.pb.RepositoryIndexRequest(ready=True), timeout=T).models
        assert ready and all(m.state == "READY" for m in ready)
        assert "classifier" not in {m.name for m in ready}

        cfg = pb.pb.ModelRepositoryParameter(string_param='{"max_batch_size": 2}')
        resp = stub.RepositoryModelLoad(pb.pb.RepositoryModelLoadRequest(
            model_name="classifier", parameters={"config": cfg}), timeout=T)
        assert resp.ByteSize() == 0
        conf = stub.ModelConfig(pb.pb.ModelConfigRequest(name="classifier"), timeout=T).config
        assert conf.max_batch_size == 2
        stub.RepositoryModelLoad(pb.pb.RepositoryModelLoadRequest(model_name="classifier"),
                                 timeout=T)
        conf = stub.ModelConfig(pb.pb.ModelConfigRequest(name="classifier"), timeout=T).config
        assert conf.max_batch_size == 8


def test_grpc_errors(rd):
    pb = load_stubs()
    P = pb.pb.ModelRepositoryParameter
    with make_channel(rd) as ch:
        stub = pb.pb_grpc.GRPCInferenceServiceStub(ch)
        Load = pb.pb.RepositoryModelLoadRequest
        expect_rpc_error(stub.RepositoryModelLoad, grpc.StatusCode.NOT_FOUND,
                         "failed to load 'nope', failed to poll from model repository",
                         request=Load(model_name="nope"), timeout=T)
        expect_rpc_error(stub.RepositoryModelLoad, grpc.StatusCode.INVALID_ARGUMENT,
                         "invalid value type for load parameter 'config', expected string_param.",
                         request=Load(model_name="simple",
                                      parameters={"config": P(bool_param=True)}), timeout=T)
        expect_rpc_error(stub.RepositoryModelLoad, grpc.StatusCode.INVALID_ARGUMENT,
                         "JSON object", request=Load(model_name="simple",
                                                     parameters={"config": P(string_param="7")}),
                         timeout=T)
        expect_rpc_error(stub.RepositoryModelLoad, grpc.StatusCode.UNIMPLEMENTED,
                         "not supported", request=Load(
                             model_name="simple", parameters={"file:1/m": P(bytes_param=b"x")}),
                         timeout=T)
        expect_rpc_error(stub.RepositoryModelLoad, grpc.StatusCode.INVALID_ARGUMENT,
                         "unrecognized load parameter 'x'.",
                         request=Load(model_name="simple", parameters={"x": P(int64_param=1)}),
                         timeout=T)
        expect_rpc_error(stub.RepositoryModelLoad, grpc.StatusCode.INVALID_ARGUMENT,
                         "names no model", request=Load(), timeout=T)
        expect_rpc_error(stub.RepositoryModelLoad, grpc.StatusCode.UNIMPLEMENTED,
                         "'repository_name' specification is not supported",
                         request=Load(repository_name="r", model_name="simple"), timeout=T)
        expect_rpc_error(stub.RepositoryIndex, grpc.StatusCode.UNIMPLEMENTED,
                         "'repository_name'",
                         request=pb.pb.RepositoryIndexRequest(repository_name="r"), timeout=T)
        expect_rpc_error(stub.RepositoryModelUnload, grpc.StatusCode.INVALID_ARGUMENT,
                         "expected bool_param", request=pb.pb.RepositoryModelUnloadRequest(
                             model_name="simple",
                             parameters={"unload_dependents": P(string_param="true")}),
                         timeout=T)
        # a message that is not one: refused, nothing crashes
        raw = ch.unary_unary("/inference.GRPCInferenceService/RepositoryModelLoad",
                             request_serializer=lambda b: b, response_deserializer=lambda b: b)
        for bad in (b"\x12\x05ab", b"\x1a\x03\x0a\x05x", b"\x10\x01", b"\x0b"):
            expect_rpc_error(raw, grpc.StatusCode.INVALID_ARGUMENT, "malformed",
                             request=bad, timeout=T)
        # a deadline shorter than the load: DEADLINE_EXCEEDED, and the load still happens
        stub.RepositoryModelUnload(pb.pb.RepositoryModelUnloadRequest(model_name="identity_int8"),
                                   timeout=T)
        expect_rpc_error(stub.RepositoryModelLoad, grpc.StatusCode.DEADLINE_EXCEEDED,
                         request=Load(model_name="identity_int8"), timeout=DELAY_MS / 4000)
        time.sleep(DELAY_MS / 1000 + 0.3)
        [e] = entries(index(rd), "identity_int8")
        assert e["state"] == "READY"
    assert infer_simple(rd).status_code == 200


# ---- a server without repository callbacks ----------------------------------------------------

def test_without_callbacks(start_demo):
    d = start_demo("--no-repository")
    ext = requests.get(d.url("/v2"), timeout=T).json()["extensions"]
    assert not any(x.startswith("model_repository") for x in ext)
    assert entries(index(d), "simple") == [{"name": "simple", "version": "1", "state": "READY"}]
    for op in ("load", "unload"):
        r = post(d, "/v2/repository/models/simple/%s" % op, {})
        e = error_of(r, 503)
        assert e.startswith("explicit model load / unload is not allowed"), e
    assert infer_simple(d).status_code == 200
    pb = load_stubs()
    with make_channel(d) as ch:
        stub = pb.pb_grpc.GRPCInferenceServiceStub(ch)
        md = stub.ServerMetadata(pb.pb.ServerMetadataRequest(), timeout=T)
        assert "model_repository" not in md.extensions
        ix = stub.RepositoryIndex(pb.pb.RepositoryIndexRequest(ready=True), timeout=T).models
        assert "simple" in {m.name for m in ix}
        expect_rpc_error(stub.RepositoryModelLoad, grpc.StatusCode.UNAVAILABLE,
                         "explicit model load / unload is not allowed",
                         request=pb.pb.RepositoryModelLoadRequest(model_name="simple"), timeout=T)
        expect_rpc_error(stub.RepositoryModelUnload, grpc.StatusCode.UNAVAILABLE,
                         "explicit model load / unload is not allowed",
                         request=pb.pb.RepositoryModelUnloadRequest(model_name="simple"),
                         timeout=T)


# ---- the server closes while a load is under way ------------------------------------------------

@pytest.mark.parametrize("drain_ms,delay_ms", [(10000, 1500), (300, 4000)])
def test_close_during_a_load(start_demo, drain_ms, delay_ms):
    """SIGTERM while the host is loading: with time to drain, the load completes (refused: the
    server is closing) and the client hears it; past the drain deadline the operation is
    abandoned, the host completes it after the close, and the demo still exits 0 (no leak, no
    use after free: the ASan build runs this too)."""
    d = start_demo("--load-delay-ms", str(delay_ms), "--drain-timeout-ms", str(drain_ms))
    unload(d, "simple")
    res = {}

    def run():
        try:
            res["r"] = post(d, "/v2/repository/models/simple/load", {})
        except requests.RequestException as e:
            res["e"] = e

    t = threading.Thread(target=run)
    t.start()
    time.sleep(0.3)
    rc = d.stop(timeout=10.0)
    t.join(T)
    assert rc == 0, d.stderr_tail()
    if drain_ms > delay_ms:
        r = res.get("r")
        assert r is not None and r.status_code == 503, res
        assert "shutting down" in r.json()["error"] or "closing" in r.json()["error"]
