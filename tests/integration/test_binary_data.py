"""Binary tensor data extension (Triton's, PROTOCOLS.md section 1): a JSON header of
Inference-Header-Content-Length bytes, then the raw tensors in input order; outputs asked for
in binary come back the same way. Driven with python-requests, raw sockets and curl (h2c)."""
import json
import struct
from array import array

import pytest

from grpc_stubs import curl_h2
from isvtest import (RawConn, assert_error, flatten, get, ok_json, outputs_by_name, show,
                     http_request)

import requests

TIMEOUT = 10.0


def binary_body(inputs, outputs=None, parameters=None):
    """inputs: (name, datatype, shape, raw bytes or JSON data list). Returns (header length, body)."""
    desc, raws = [], []
    for name, dt, shape, data in inputs:
        d = {"name": name, "datatype": dt, "shape": shape}
        if isinstance(data, (bytes, bytearray)):
            d["parameters"] = {"binary_data_size": len(data)}
            raws.append(bytes(data))
        else:
            d["data"] = data
        desc.append(d)
    obj = {"inputs": desc}
    if outputs is not None:
        obj["outputs"] = outputs
    if parameters is not None:
        obj["parameters"] = parameters
    head = json.dumps(obj).encode()
    return len(head), head + b"".join(raws)


def post_binary(demo, model, inputs, outputs=None, parameters=None, content_type=None, **kw):
    hl, body = binary_body(inputs, outputs, parameters)
    headers = {"Inference-Header-Content-Length": str(hl)}
    if content_type:
        headers["Content-Type"] = content_type
    headers.update(kw.pop("headers", {}))
    return requests.post(demo.url("/v2/models/%s/infer" % model), data=body, headers=headers,
                         timeout=TIMEOUT, **kw)


def split_response(r):
    """(JSON header, {output name: raw bytes}) of a binary response."""
    assert r.status_code == 200, show(r)
    assert r.headers.get("Content-Type") == "application/octet-stream", show(r)
    hl = int(r.headers["Inference-Header-Content-Length"])
    head = json.loads(r.content[:hl])
    raw, off = {}, hl
    for o in head["outputs"]:
        size = (o.get("parameters") or {}).get("binary_data_size")
        if size is None:
            continue
        assert "data" not in o, head
        raw[o["name"]] = r.content[off:off + size]
        off += size
    assert off == len(r.content), "body has %d bytes, header and parts account for %d" % (
        len(r.content), off)
    return head, raw


def i32(vals):
    return array("i", vals).tobytes()


def bytes_elems(elems):
    return b"".join(struct.pack("<I", len(e)) + e for e in elems)


def unpack_bytes(raw):
    out, off = [], 0
    while off < len(raw):
        (n,) = struct.unpack_from("<I", raw, off)
        out.append(raw[off + 4:off + 4 + n])
        off += 4 + n
    return out


A = list(range(16))
B = [3] * 16


def test_advertised(demo):
    assert "binary_tensor_data" in ok_json(get(demo, "/v2"))["extensions"]


def test_binary_in_binary_out(demo):
    r = post_binary(demo, "simple", [("INPUT0", "INT32", [1, 16], i32(A)),
                                     ("INPUT1", "INT32", [1, 16], i32(B))],
                    parameters={"binary_data_output": True},
                    content_type="application/octet-stream")
    head, raw = split_response(r)
    assert head["model_name"] == "simple", head
    outs = {o["name"]: o for o in head["outputs"]}
    assert outs["OUTPUT0"]["shape"] == [1, 16] and outs["OUTPUT0"]["datatype"] == "INT32", head
    assert outs["OUTPUT0"]["parameters"] == {"binary_data_size": 64}, head
    assert list(array("i", raw["OUTPUT0"])) == [a + b for a, b in zip(A, B)]
    assert list(array("i", raw["OUTPUT1"])) == [a - b for a, b in zip(A, B)]
    # binary_data_output is the extension's switch: it must not reach the model as a parameter
    assert "parameters" not in head or "binary_data_output" not in head["parameters"], head


def test_binary_in_json_out(demo):
    """Binary inputs alone do not make the response binary."""
    r = post_binary(demo, "simple", [("INPUT0", "INT32", [1, 16], i32(A)),
                                     ("INPUT1", "INT32", [1, 16], B)])
    assert r.status_code == 200, show(r)
    assert r.headers["Content-Type"].startswith("application/json"), show(r)
    assert "Inference-Header-Content-Length" not in r.headers, show(r)
    body = r.json()
    assert flatten(outputs_by_name(body)["OUTPUT0"]["data"]) == [a + b for a, b in zip(A, B)]


def test_json_in_binary_out_per_output(demo):
    """binary_data on one requested output; the other stays JSON; output order as requested."""
    r = post_binary(demo, "simple", [("INPUT0", "INT32", [1, 16], A),
                                     ("INPUT1", "INT32", [1, 16], B)],
                    outputs=[{"name": "OUTPUT1", "parameters": {"binary_data": True}},
                             {"name": "OUTPUT0"}])
    head, raw = split_response(r)
    assert [o["name"] for o in head["outputs"]] == ["OUTPUT1", "OUTPUT0"], head
    assert list(raw) == ["OUTPUT1"], head
    assert list(array("i", raw["OUTPUT1"])) == [a - b for a, b in zip(A, B)]
    assert flatten(head["outputs"][1]["data"]) == [a + b for a, b in zip(A, B)], head


def test_output_false_overrides_request_default(demo):
    r = post_binary(demo, "simple", [("INPUT0", "INT32", [1, 16], i32(A)),
                                     ("INPUT1", "INT32", [1, 16], i32(B))],
                    outputs=[{"name": "OUTPUT0", "parameters": {"binary_data": False}},
                             {"name": "OUTPUT1"}],
                    parameters={"binary_data_output": True})
    head, raw = split_response(r)
    assert list(raw) == ["OUTPUT1"], head
    assert flatten(head["outputs"][0]["data"]) == [a + b for a, b in zip(A, B)], head


@pytest.mark.parametrize("model,typecode,dt", [
    ("identity_fp32", "f", "FP32"), ("identity_fp64", "d", "FP64"),
    ("identity_int64", "q", "INT64"), ("identity_uint8", "B", "UINT8")])
def test_identity_round_trip_is_bit_exact(demo, model, typecode, dt):
    vals = {"f": [1.5, -0.0, float("inf"), 3.4e38, 1e-45], "d": [2.0 ** -1074, -1.0, 1e308],
            "q": [-(2 ** 63), 2 ** 63 - 1, 0], "B": [0, 255, 7]}[typecode]
    raw = array(typecode, vals).tobytes()
    r = post_binary(demo, model, [("INPUT0", dt, [1, len(vals)], raw)],
                    parameters={"binary_data_output": True})
    head, out = split_response(r)
    assert out["OUTPUT0"] == raw, head


def test_fp16_and_nan_payloads_survive(demo):
    """Bit patterns JSON cannot carry (FP16 NaN payloads, signalling NaN) pass untouched."""
    raw = struct.pack("<4H", 0x7e01, 0xfc00, 0x0001, 0x7c01)
    r = post_binary(demo, "identity_fp16", [("INPUT0", "FP16", [1, 4], raw)],
                    parameters={"binary_data_output": True})
    assert split_response(r)[1]["OUTPUT0"] == raw


def test_bytes_round_trip(demo):
    elems = [b"\xff\x00binary", b"", b"ok"]
    raw = bytes_elems(elems)
    r = post_binary(demo, "identity_bytes", [("INPUT0", "BYTES", [1, 3], raw)],
                    outputs=[{"name": "OUTPUT0", "parameters": {"binary_data": True}}])
    head, out = split_response(r)
    assert head["outputs"][0]["parameters"]["binary_data_size"] == len(raw), head
    assert unpack_bytes(out["OUTPUT0"]) == elems


def test_bool_is_one_byte(demo):
    r = post_binary(demo, "identity_bool", [("INPUT0", "BOOL", [1, 3], b"\x01\x00\x01")],
                    parameters={"binary_data_output": True})
    head, out = split_response(r)
    assert out["OUTPUT0"] == b"\x01\x00\x01", head


def test_classification_in_binary(demo):
    rows = [[5.1, 3.5, 1.4, 0.2]]
    r = post_binary(demo, "classifier", [("INPUT0", "FP32", [1, 4], array("f", rows[0]).tobytes())],
                    outputs=[{"name": "OUTPUT0",
                              "parameters": {"classification": 2, "binary_data": True}}])
    head, out = split_response(r)
    o = head["outputs"][0]
    assert o["datatype"] == "BYTES" and o["shape"] == [1, 2], head
    elems = unpack_bytes(out["OUTPUT0"])
    assert len(elems) == 2 and all(e.count(b":") == 2 for e in elems), elems


def test_large_fp32_round_trip(demo):
    n = 1 << 20  # 4 MiB
    raw = array("f", (float(i) * 0.5 for i in range(n))).tobytes()
    r = post_binary(demo, "identity_fp32", [("INPUT0", "FP32", [1, n], raw)],
                    parameters={"binary_data_output": True})
    assert split_response(r)[1]["OUTPUT0"] == raw


def test_large_fp32_round_trip_over_h2c(demo):
    """A body announced at 1 MiB or more over HTTP/2 is received into one block of its size,
    faulted in on a worker first (transport/http2.c): the tensor comes back whole."""
    n = 3 << 18  # 3 MiB
    raw = array("f", (float(i) * 0.25 - 7 for i in range(n))).tobytes()
    hl, body = binary_body([("INPUT0", "FP32", [1, n], raw)],
                           parameters={"binary_data_output": True})
    r = curl_h2(demo, "/v2/models/identity_fp32/infer", data=body,
                headers=["content-type: application/octet-stream",
                         "inference-header-content-length: %d" % hl], timeout=30)
    assert r.http_version == "2" and r.status == 200, r
    hdrs = {k.lower(): v for k, v in r.headers}
    got_hl = int(hdrs["inference-header-content-length"])
    assert r.body[got_hl:] == raw


def test_chunked_binary_request(demo):
    """No Content-Length: the body arrives in chunks and still decodes (copied if misaligned)."""
    hl, body = binary_body([("INPUT0", "INT32", [1, 16], i32(A)),
                            ("INPUT1", "INT32", [1, 16], i32(B))],
                           parameters={"binary_data_output": True})
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(body[i:i + 7]), body[i:i + 7])
                      for i in range(0, len(body), 7)) + b"0\r\n\r\n"
    req = http_request("POST", "/v2/models/simple/infer", chunks,
                       headers={"Content-Length": None, "Transfer-Encoding": "chunked",
                                "Content-Type": "application/octet-stream",
                                "Inference-Header-Content-Length": str(hl)})
    with RawConn(demo) as c:
        c.send(req)
        resp = c.read_response()
    assert resp.status == 200, resp
    got_hl = int(resp.header("Inference-Header-Content-Length"))
    head = json.loads(resp.body[:got_hl])
    assert [o["parameters"]["binary_data_size"] for o in head["outputs"]] == [64, 64], head
    assert list(array("i", resp.body[got_hl:got_hl + 64])) == [a + b for a, b in zip(A, B)]


def test_binary_over_h2c(demo):
    hl, body = binary_body([("INPUT0", "INT32", [1, 16], i32(A)),
                            ("INPUT1", "INT32", [1, 16], i32(B))],
                           parameters={"binary_data_output": True})
    r = curl_h2(demo, "/v2/models/simple/infer", data=body,
                headers=["content-type: application/octet-stream",
                         "inference-header-content-length: %d" % hl])
    assert r.http_version == "2" and r.status == 200, r
    hdrs = {k.lower(): v for k, v in r.headers}
    assert hdrs["content-type"] == "application/octet-stream", r
    got_hl = int(hdrs["inference-header-content-length"])
    assert len(r.body) == got_hl + 128, r
    assert list(array("i", r.body[got_hl + 64:])) == [a - b for a, b in zip(A, B)]


# --- errors: 400/415 with a message that names the problem ---------------------------------

def _post_raw(demo, body, headers):
    return requests.post(demo.url("/v2/models/simple/infer"), data=body, headers=headers,
                         timeout=TIMEOUT)


def test_header_longer_than_body(demo):
    r = _post_raw(demo, b'{"inputs":[]}', {"Inference-Header-Content-Length": "99"})
    assert_error(r, 400, "Inference-Header-Content-Length is 99", "13 bytes")


@pytest.mark.parametrize("value", ["", "12x", "-1", "0x10", "99999999999999999999999"])
def test_header_not_a_number(demo, value):
    r = _post_raw(demo, b'{"inputs":[]}', {"Inference-Header-Content-Length": value})
    assert_error(r, 400, "Inference-Header-Content-Length")


def test_octet_stream_without_header(demo):
    r = _post_raw(demo, b'{"inputs":[]}', {"Content-Type": "application/octet-stream"})
    assert_error(r, 400, "Inference-Header-Content-Length")


def test_other_content_type_is_415(demo):
    r = _post_raw(demo, b'{"inputs":[]}', {"Content-Type": "image/png"})
    assert_error(r, 415, "image/png", "application/octet-stream")


_SIMPLE_JSON = json.dumps({"inputs": [
    {"name": "INPUT0", "datatype": "INT32", "shape": [1, 16], "data": A},
    {"name": "INPUT1", "datatype": "INT32", "shape": [1, 16], "data": B}]}).encode()


@pytest.mark.parametrize("ct", ["application/json", "Application/JSON", "application/json; charset=utf-8",
                                "APPLICATION/JSON;charset=utf-8", "text/plain", "TEXT/Plain ; x=y",
                                "application/X-WWW-Form-Urlencoded"])
def test_json_media_types_any_case_with_parameters(demo, ct):
    r = _post_raw(demo, _SIMPLE_JSON, {"Content-Type": ct})
    out = outputs_by_name(ok_json(r))
    assert flatten(out["OUTPUT0"]["data"]) == [a + b for a, b in zip(A, B)], show(r)


@pytest.mark.parametrize("ct", ["application/jsonx", "application/jso", "application/json-seq",
                                "text/plainjson", "applicatio/json", "application/octet-streams", ""])
def test_near_media_types_are_415(demo, ct):
    r = _post_raw(demo, _SIMPLE_JSON, {"Content-Type": ct})
    assert_error(r, 415, "unsupported Content-Type", "application/octet-stream")


def test_octet_stream_any_case(demo):
    r = _post_raw(demo, b'{"inputs":[]}', {"Content-Type": "Application/Octet-Stream; x=1"})
    assert_error(r, 400, "Inference-Header-Content-Length")


def test_size_mismatch(demo):
    r = post_binary(demo, "simple", [("INPUT0", "INT32", [1, 16], i32(A)[:60]),
                                     ("INPUT1", "INT32", [1, 16], i32(B))])
    assert_error(r, 400, "INPUT0", "binary_data_size is 60", "needs 64 bytes")


def test_binary_part_too_short(demo):
    hl, body = binary_body([("INPUT0", "INT32", [1, 16], i32(A)),
                            ("INPUT1", "INT32", [1, 16], i32(B))])
    r = _post_raw(demo, body[:-10], {"Inference-Header-Content-Length": str(hl)})
    assert_error(r, 400, "INPUT1", "only 54 bytes of binary data are left")


def test_unclaimed_trailing_bytes(demo):
    hl, body = binary_body([("INPUT0", "INT32", [1, 16], i32(A)),
                            ("INPUT1", "INT32", [1, 16], i32(B))])
    r = _post_raw(demo, body + b"junk", {"Inference-Header-Content-Length": str(hl)})
    assert_error(r, 400, "132 bytes of binary data", "claim 128")


def test_data_and_binary_size_both(demo):
    text = json.dumps({"inputs": [{"name": "INPUT0", "datatype": "INT32", "shape": [1, 16],
                                   "data": A, "parameters": {"binary_data_size": 64}},
                                  {"name": "INPUT1", "datatype": "INT32", "shape": [1, 16],
                                   "data": B}]}).encode()
    r = _post_raw(demo, text + i32(A), {"Inference-Header-Content-Length": str(len(text))})
    assert_error(r, 400, "INPUT0", "both 'data' and a binary_data_size")


def test_bad_bytes_framing(demo):
    raw = struct.pack("<I", 100) + b"short"
    r = post_binary(demo, "identity_bytes", [("INPUT0", "BYTES", [1, 1], raw)])
    assert_error(r, 400, "INPUT0", "length 100", "only 5 bytes remain")


def test_non_bool_switches(demo):
    r = post_binary(demo, "simple", [("INPUT0", "INT32", [1, 16], A),
                                     ("INPUT1", "INT32", [1, 16], B)],
                    parameters={"binary_data_output": 1})
    assert_error(r, 400, "binary_data_output", "true or false")
    r = post_binary(demo, "simple", [("INPUT0", "INT32", [1, 16], A),
                                     ("INPUT1", "INT32", [1, 16], B)],
                    outputs=[{"name": "OUTPUT0", "parameters": {"binary_data": "yes"}}])
    assert_error(r, 400, "OUTPUT0", "binary_data", "true or false")


def test_errors_stay_json(demo):
    """A failing request that asked for binary outputs still gets a JSON error."""
    r = post_binary(demo, "simple", [("INPUT0", "INT32", [1, 15], i32(A[:15])),
                                     ("INPUT1", "INT32", [1, 16], i32(B))],
                    parameters={"binary_data_output": True})
    assert r.status_code == 400 and r.headers["Content-Type"].startswith("application/json"), \
        show(r)
    assert "error" in r.json()
