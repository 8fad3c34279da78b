"""Triton's example models by their names, as its client example programs call them (issue 16):
simple_int8, simple_identity, repeat_int32 (decoupled, over gRPC ModelStreamInfer), and the
server name a host sets (the demo's --server-name), on V2 REST, V2 gRPC and grps."""
import grpc
import requests

from grpc_stubs import (_grpc_channels, add_input, channel, decode_raw, encode_raw,  # noqa: F401
                        make_channel, protos, stub)
from isvtest import TIMEOUT


def infer(demo, model, body):
    return requests.post(demo.base + "/v2/models/%s/infer" % model, json=body, timeout=TIMEOUT)


def test_simple_int8_wraps(demo):
    a = [127, -128, 1, 0] + [5] * 12
    b = [1, 1, -1, -128] + [-5] * 12
    r = infer(demo, "simple_int8", {"inputs": [
        {"name": "INPUT0", "shape": [1, 16], "datatype": "INT8", "data": a},
        {"name": "INPUT1", "shape": [1, 16], "datatype": "INT8", "data": b}]})
    assert r.status_code == 200, r.text
    out = {o["name"]: o for o in r.json()["outputs"]}
    wrap = lambda v: (v + 128) % 256 - 128  # noqa: E731
    assert out["OUTPUT0"]["datatype"] == "INT8" and out["OUTPUT0"]["shape"] == [1, 16]
    assert out["OUTPUT0"]["data"] == [wrap(x + y) for x, y in zip(a, b)]
    assert out["OUTPUT1"]["data"] == [wrap(x - y) for x, y in zip(a, b)]


def test_simple_identity_bytes_rest_and_grpc(demo, stub, protos):
    vals = ["a", "", "héllo"]
    r = infer(demo, "simple_identity", {"inputs": [
        {"name": "INPUT0", "shape": [1, 3], "datatype": "BYTES", "data": vals}]})
    assert r.status_code == 200, r.text
    assert r.json()["outputs"][0]["data"] == vals
    req = protos.pb.ModelInferRequest(model_name="simple_identity")
    raw = [v.encode() for v in vals] + [b"\x00\xff"]
    add_input(req, "INPUT0", "BYTES", [2, 2], raw=encode_raw("BYTES", raw))
    resp = stub.ModelInfer(req, timeout=TIMEOUT)
    assert list(resp.outputs[0].shape) == [2, 2]
    assert decode_raw("BYTES", resp.raw_output_contents[0]) == raw


def test_repeat_int32_streams_one_response_per_element(stub, protos):
    req = protos.pb.ModelInferRequest(model_name="repeat_int32", id="r1")
    add_input(req, "IN", "INT32", [4], raw=encode_raw("INT32", [10, -1, 7, 3]))
    add_input(req, "DELAY", "UINT32", [4], raw=encode_raw("UINT32", [0, 20, 0, 10]))
    add_input(req, "WAIT", "UINT32", [1], raw=encode_raw("UINT32", [0]))
    got = []
    for r in stub.ModelStreamInfer(iter([req]), timeout=10):
        assert r.error_message == "", r.error_message
        outs = {o.name: i for i, o in enumerate(r.infer_response.outputs)}
        if not outs:
            continue  # an empty final response, if any
        assert r.infer_response.id == "r1"
        out = decode_raw("INT32", r.infer_response.raw_output_contents[outs["OUT"]])
        idx = decode_raw("UINT32", r.infer_response.raw_output_contents[outs["IDX"]])
        got.append((out[0], idx[0]))
    assert got == [(10, 0), (-1, 1), (7, 2), (3, 3)]


def test_repeat_int32_in_and_delay_must_match(stub, protos):
    req = protos.pb.ModelInferRequest(model_name="repeat_int32")
    add_input(req, "IN", "INT32", [2], raw=encode_raw("INT32", [1, 2]))
    add_input(req, "DELAY", "UINT32", [1], raw=encode_raw("UINT32", [0]))
    add_input(req, "WAIT", "UINT32", [1], raw=encode_raw("UINT32", [0]))
    msgs = list(stub.ModelStreamInfer(iter([req]), timeout=10))
    assert len(msgs) == 1 and "IN and DELAY shape to match" in msgs[0].error_message


def test_server_name_on_every_protocol(start_demo, protos):
    d = start_demo("--server-name", "triton:2.40.0")
    meta = requests.get(d.base + "/v2", timeout=TIMEOUT).json()
    assert (meta["name"], meta["version"]) == ("triton", "2.40.0")
    ch = make_channel(d)
    try:
        m = protos.pb_grpc.GRPCInferenceServiceStub(ch).ServerMetadata(
            protos.pb.ServerMetadataRequest(), timeout=TIMEOUT)
        assert (m.name, m.version) == ("triton", "2.40.0")
    finally:
        ch.close()
    y = requests.get(d.base + "/grps/v1/metadata/server", timeout=TIMEOUT).json()["str_data"]
    assert y.startswith('name: "triton"\nversion: "2.40.0"')
    d2 = start_demo("--server-name", "mine")
    assert requests.get(d2.base + "/v2", timeout=TIMEOUT).json()["name"] == "mine"


def test_unknown_model_text_is_tritons(demo, stub, protos):
    """Triton's example programs check `"Request for unknown model" in msg` (model metadata)
    and `msg.startswith("Request for unknown model")` (infer)."""
    r = requests.get(demo.base + "/v2/models/wrong_model_name", timeout=TIMEOUT)
    assert r.status_code == 404
    assert r.json()["error"] == "Request for unknown model: 'wrong_model_name' is not found"
    r = infer(demo, "wrong_model_name", {"inputs": []})
    assert r.status_code == 404 and r.json()["error"].startswith("Request for unknown model")

    try:
        stub.ModelMetadata(protos.pb.ModelMetadataRequest(name="wrong_model_name"),
                           timeout=TIMEOUT)
        raise AssertionError("ModelMetadata of an unknown model answered")
    except grpc.RpcError as e:
        assert e.code() == grpc.StatusCode.NOT_FOUND
        assert e.details().startswith("Request for unknown model: 'wrong_model_name'")
