"""The edge's order and the model it judges (issue #34, findings 1, 2 and 7): the authorizer is
asked about the model that runs — after every resolution rule, with protobuf's last-occurrence
rule read by the decoder itself, for every message of a stream — and who the caller is before
a byte of the body is inflated; the per-client limit counts each request of a stream.

Each test is an attack that got through before: a forbidden model (the demo's --forbid-model)
named so that the old gate saw another model, or no model at all."""
import gzip
import json
import queue
import threading

import grpc
import pytest
import requests

from grpc_stubs import (SERVICE, expect_rpc_error, load_stubs, make_channel, raw_method,
                        simple_request, slow_request)
from isvtest import TIMEOUT, assert_error, ok_json, simple_body

TOKEN = "edge-token-123"
BEARER = {"Authorization": "Bearer " + TOKEN}


def pb_string(field, s):
    """One length-delimited protobuf field: a string."""
    b = s.encode()
    assert len(b) < 128
    return bytes([field << 3 | 2, len(b)]) + b


@pytest.fixture
def forbid_simple(start_demo):
    return start_demo("--forbid-model", "simple", "--threads", "1")


def grpc_raw(d, method, payload):
    ch = make_channel(d)
    try:
        return raw_method(ch, SERVICE + method)(payload, timeout=TIMEOUT)
    finally:
        ch.close()


# ---- 1. one reader of a name: the decoder's, last occurrence wins --------------------------------
def test_model_infer_with_the_name_twice_is_judged_on_the_last(forbid_simple):
    pb = load_stubs().pb
    req, _, _ = simple_request(pb, model="simple")
    # an allowed name first, then the forbidden one (the message's own field 1): protobuf's rule
    # says the last occurrence is the name — the old gate read the first
    payload = pb_string(1, "simple_identity") + req.SerializeToString()
    expect_rpc_error(lambda: grpc_raw(forbid_simple, "ModelInfer", payload),
                     grpc.StatusCode.PERMISSION_DENIED, "simple")
    # and the other way round, the allowed model is the one resolved (and validated: simple's
    # inputs are not simple_identity's)
    req2, _, _ = simple_request(pb, model="simple")
    payload = req2.SerializeToString() + pb_string(1, "simple_identity")
    expect_rpc_error(lambda: grpc_raw(forbid_simple, "ModelInfer", payload),
                     grpc.StatusCode.INVALID_ARGUMENT, "simple_identity")


@pytest.mark.parametrize("method", ["ModelMetadata", "ModelConfig", "ModelReady",
                                    "ModelStatistics"])
def test_answers_about_a_model_judge_the_name_the_answer_uses(forbid_simple, method):
    payload = pb_string(1, "simple_identity") + pb_string(1, "simple")
    expect_rpc_error(lambda: grpc_raw(forbid_simple, method, payload),
                     grpc.StatusCode.PERMISSION_DENIED)
    grpc_raw(forbid_simple, method, pb_string(1, "simple") + pb_string(1, "simple_identity"))


def test_repository_unload_of_a_forbidden_model_is_refused(forbid_simple):
    d = forbid_simple
    payload = pb_string(2, "simple_identity") + pb_string(2, "simple")  # model_name is field 2
    expect_rpc_error(lambda: grpc_raw(d, "RepositoryModelUnload", payload),
                     grpc.StatusCode.PERMISSION_DENIED)
    r = requests.post(d.url("/v2/repository/models/simple/unload"), timeout=TIMEOUT)
    assert_error(r, 403, "")
    # still there and still refused: nothing was unloaded
    r = requests.get(d.url("/v2/models/simple_identity/ready"), timeout=TIMEOUT)
    assert r.status_code == 200
    pb = load_stubs().pb
    ready = pb.ModelReadyResponse.FromString(
        grpc_raw(d, "ModelReady", pb_string(1, "simple_identity")))
    assert ready.ready


def test_every_message_of_a_stream_is_judged(forbid_simple):
    s = load_stubs()
    pb = s.pb
    ch = make_channel(forbid_simple)
    try:
        stub = s.pb_grpc.GRPCInferenceServiceStub(ch)
        reqs = [simple_request(pb, model=m, req_id=str(i))[0]
                for i, m in enumerate(["simple_identity", "simple", "simple_identity",
                                       "simple"])]
        out = list(stub.ModelStreamInfer(iter(reqs), timeout=TIMEOUT))
    finally:
        ch.close()
    assert len(out) == 4
    refused = [o.error_message for o in out if "not for this client" in o.error_message]
    assert len(refused) == 2 and all("'simple'" in m for m in refused), out
    # the allowed model was resolved for the others (its validation speaks of it)
    others = [o.error_message for o in out if "not for this client" not in o.error_message]
    assert len(others) == 2 and all("simple_identity" in m for m in others), out
    assert all(o.infer_response.model_name != "simple" for o in out)


# ---- 1. every resolution rule before the model is judged -----------------------------------------
@pytest.fixture
def forbid_echo(start_demo):
    return start_demo("--forbid-model", "echo", "--threads", "1")


@pytest.mark.parametrize("body,query", [({"str_data": "x"}, ""),             # the default model
                                        ({"model": "echo-1.0.0", "str_data": "x"}, ""),
                                        ({"str_data": "x"}, "?model=echo"),
                                        ({"str_data": "x"}, "?model=echo-1.0.0")])
def test_grps_rest_judges_the_resolved_model(forbid_echo, body, query):
    r = requests.post(forbid_echo.url("/grps/v1/infer/predict" + query), json=body,
                      timeout=TIMEOUT)
    assert r.status_code == 403, r.text
    assert r.json()["status"]["code"] == 403


def test_grps_rest_metadata_judges_the_resolved_model(forbid_echo):
    r = requests.post(forbid_echo.url("/grps/v1/metadata/model"),
                      json={"str_data": "echo-1.0.0"}, timeout=TIMEOUT)
    assert r.status_code == 403, r.text
    r = requests.post(forbid_echo.url("/grps/v1/metadata/model"),
                      json={"str_data": "echo_native"}, timeout=TIMEOUT)
    assert r.status_code == 200, r.text


@pytest.mark.parametrize("method", ["Predict", "ModelMetadata"])
def test_grps_grpc_name_version_is_resolved_before_it_is_judged(forbid_echo, method):
    s = load_stubs()
    msg = (s.grps_pb.GrpsMessage(model="echo-1.0.0", str_data="x") if method == "Predict"
           else s.grps_pb.GrpsMessage(str_data="echo-1.0.0"))
    ch = make_channel(forbid_echo)
    try:
        stub = s.grps_grpc.GrpsServiceStub(ch)
        resp = getattr(stub, method)(msg, timeout=TIMEOUT)
    finally:
        ch.close()
    assert resp.status.code == 403, resp


def test_vertex_endpoint_is_judged_as_its_model(start_demo):
    d = start_demo("--forbid-model", "half_plus_three", "--threads", "1")
    r = requests.post(d.url("/v1/projects/p/locations/l/endpoints/half_plus_three:predict"),
                      json={"instances": [1.0]}, timeout=TIMEOUT)
    assert r.status_code == 403, r.text
    r = requests.post(d.url("/v1/models/half_plus_three/labels/stable:predict"),
                      json={"instances": [1.0]}, timeout=TIMEOUT)
    assert r.status_code in (400, 403), r.text  # an unknown label is 400; never 200


# ---- 2. who before any work ---------------------------------------------------------------------
def test_a_gzip_bomb_without_a_token_is_refused_before_it_is_inflated(start_demo, tmp_path):
    tok = tmp_path / "token"
    tok.write_text(TOKEN)
    d = start_demo("--bearer-token", str(tok), "--threads", "1")
    bomb = gzip.compress(b"\0" * (70 << 20), 9)  # ~70 KB that inflates past the 64 MiB limit
    r = requests.post(d.url("/v2/models/simple/infer"), data=bomb, timeout=TIMEOUT,
                      headers={"Content-Encoding": "gzip", "Content-Type": "application/json"})
    assert_error(r, 401, "bearer token")
    r = requests.post(d.url("/v2/models/simple/infer"), data=bomb, timeout=TIMEOUT,
                      headers={"Content-Encoding": "gzip", "Content-Type": "application/json",
                               **BEARER})
    assert r.status_code == 413, r.text  # the token's holder gets the body's own answer
    body = gzip.compress(json.dumps(simple_body()).encode())
    r = requests.post(d.url("/v2/models/simple/infer"), data=body, timeout=TIMEOUT,
                      headers={"Content-Encoding": "gzip", **BEARER})
    assert ok_json(r)["model_name"] == "simple"


def test_a_grpc_stream_without_a_token_is_refused_at_its_headers(start_demo, tmp_path):
    tok = tmp_path / "token"
    tok.write_text(TOKEN)
    d = start_demo("--bearer-token", str(tok), "--threads", "1")
    s = load_stubs()
    pb = s.pb
    ch = make_channel(d)
    try:
        stub = s.pb_grpc.GRPCInferenceServiceStub(ch)
        reqs = [simple_request(pb)[0] for _ in range(3)]
        expect_rpc_error(lambda: list(stub.ModelStreamInfer(iter(reqs), timeout=TIMEOUT,
                                                            compression=grpc.Compression.Gzip)),
                         grpc.StatusCode.UNAUTHENTICATED)
        out = list(stub.ModelStreamInfer(iter(reqs), timeout=TIMEOUT, metadata=(
            ("authorization", "Bearer " + TOKEN),), compression=grpc.Compression.Gzip))
        assert len(out) == 3 and not any(o.error_message for o in out)
    finally:
        ch.close()


# ---- 7. each request of a stream counts under the per-client limit --------------------------------
def test_a_stream_counts_each_of_its_requests(start_demo):
    d = start_demo("--max-client-requests", "4", "--threads", "1")
    s = load_stubs()
    pb = s.pb
    ch = make_channel(d)
    try:
        stub = s.pb_grpc.GRPCInferenceServiceStub(ch)
        reqs = [slow_request(pb, 300, req_id=str(i)) for i in range(10)]
        out = list(stub.ModelStreamInfer(iter(reqs), timeout=TIMEOUT))
    finally:
        ch.close()
    assert len(out) == 10
    refused = [o.error_message for o in out if o.error_message]
    served = [o for o in out if not o.error_message]
    assert len(served) >= 4 and len(refused) >= 1, out
    assert all("requests in flight" in m for m in refused), refused
