"""Parameters travel both ways (PROTOCOLS.md §1, §2): request parameters reach the backend, and
what the backend attaches to its response (isv_request_set_response_param) reaches the client,
on REST and on gRPC. The demo's `params_echo` model sends every request parameter back."""
import json

import requests

from grpc_stubs import add_input, encode_raw
from grpc_stubs import _grpc_channels, channel, protos, stub  # noqa: F401 (fixtures)

T = 5.0


def test_rest_parameters_round_trip(demo):
    body = {"parameters": {"i": -7, "u": 18446744073709551615, "d": 0.25, "b": True, "s": "h\u00e9"},
            "inputs": [{"name": "INPUT0", "shape": [2], "datatype": "INT32", "data": [3, 4]}]}
    r = requests.post(demo.url("/v2/models/params_echo/infer"), data=json.dumps(body), timeout=T)
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["parameters"] == body["parameters"], r.text
    assert out["outputs"][0]["data"] == [3, 4]


def test_rest_no_parameters_no_key(demo):
    body = {"inputs": [{"name": "INPUT0", "shape": [1], "datatype": "INT32", "data": [1]}]}
    r = requests.post(demo.url("/v2/models/params_echo/infer"), data=json.dumps(body), timeout=T)
    assert r.status_code == 200 and "parameters" not in r.json(), r.text


def test_grpc_parameters_round_trip(stub, protos):
    pb = protos.pb
    req = pb.ModelInferRequest(model_name="params_echo")
    add_input(req, "INPUT0", "INT32", [2], raw=encode_raw("INT32", [5, 6]))
    req.parameters["i"].int64_param = -7
    req.parameters["u"].uint64_param = 2**64 - 1
    req.parameters["d"].double_param = 0.25
    req.parameters["b"].bool_param = True
    req.parameters["s"].string_param = "h\u00e9"
    resp = stub.ModelInfer(req, timeout=T)
    got = {k: v.WhichOneof("parameter_choice") for k, v in resp.parameters.items()}
    assert got == {"i": "int64_param", "u": "uint64_param", "d": "double_param", "b": "bool_param",
                   "s": "string_param"}, resp
    assert resp.parameters["i"].int64_param == -7
    assert resp.parameters["u"].uint64_param == 2**64 - 1
    assert resp.parameters["d"].double_param == 0.25
    assert resp.parameters["b"].bool_param is True
    assert resp.parameters["s"].string_param == "h\u00e9"
    assert resp.raw_output_contents[0] == encode_raw("INT32", [5, 6])
