"""Triton's example models by their names, as its client example programs call them (issue 16):
simple_int8, simple_identity, repeat_int32 (decoupled, over gRPC ModelStreamInfer), the sequence
models (simple_sequence, simple_dyna_sequence, simple_string_dyna_sequence: the values Triton's
simple_*_sequence_*_client programs check, over REST, gRPC and one gRPC stream),
custom_identity_int32, and the server name a host sets (the demo's --server-name), on V2 REST,
V2 gRPC and grps."""
import random
import threading
import uuid

import grpc
import requests

from grpc_stubs import (_grpc_channels, add_input, channel, decode_raw, encode_raw,  # noqa: F401
                        make_channel, protos, stub)
from isvtest import TIMEOUT


def infer(demo, model, body, http=requests):
    return http.post(demo.base + "/v2/models/%s/infer" % model, json=body, timeout=TIMEOUT)


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


# ---- the sequence models, as Triton's simple_*_sequence_*_client programs drive them ---------

VALUES = [11, 7, 5, 3, 2, 0, 1]  # the examples' values; each sequence starts with its own first


def expected(dyna, ids, firsts=(0, 100, 20)):
    """What the examples assert for the three sequences (int id0, int id1, string id0): the
    start answers INPUT + 1 (simple_sequence and simple_dyna_sequence; the string-id dyna model
    keeps an accumulator and answers 20), then the value sent (-v for the second and third);
    with dyna the last answer adds the sequence id."""
    seqs = [[firsts[0]] + VALUES, [firsts[1]] + [-v for v in VALUES],
            [firsts[2]] + [-v for v in VALUES]]
    want = [[], [], []]
    acc = 0
    for i in range(len(VALUES) + 1):
        last = i == len(VALUES)
        for k in (0, 1):
            v = seqs[k][i] + (1 if i == 0 else 0)
            want[k].append(v + (int(ids[k]) if dyna and last else 0))
        if dyna:  # the accumulator of Triton's dyna_sequence backend
            acc = seqs[2][i] if i == 0 else acc + seqs[2][i]
            acc += int(ids[2]) if last else 0
            want[2].append(acc)
        else:
            want[2].append(seqs[2][i] + (1 if i == 0 else 0))
    return seqs, want


def models(dyna):
    return ("simple_dyna_sequence", "simple_dyna_sequence", "simple_string_dyna_sequence") \
        if dyna else ("simple_sequence",) * 3


def ids_for(dyna):
    base = random.randint(1000, 1 << 20) * 2  # the examples use 1000 + 2 * offset
    return [base, base + 1, str(base + 2) if dyna else str(uuid.uuid4())]


def rest_step(demo, model, value, sid, start, end, http=requests):
    """One request of a sequence. A sequence lives on the loop its start reached (the demo runs
    one per core): its requests go over one keep-alive connection, `http`, as Triton's HTTP
    client sends them."""
    params = {"sequence_id": sid}
    if start:
        params["sequence_start"] = True
    if end:
        params["sequence_end"] = True
    r = infer(demo, model, {"parameters": params, "inputs": [
        {"name": "INPUT", "shape": [1, 1], "datatype": "INT32", "data": [value]}],
        "outputs": [{"name": "OUTPUT"}]}, http)
    assert r.status_code == 200, r.text
    out = r.json()["outputs"][0]
    assert (out["name"], out["datatype"], out["shape"]) == ("OUTPUT", "INT32", [1, 1])
    return out["data"][0]


def grpc_request(protos, model, value, sid, start, end, rid=""):
    req = protos.pb.ModelInferRequest(model_name=model, id=rid)
    if isinstance(sid, str):
        req.parameters["sequence_id"].string_param = sid
    else:
        req.parameters["sequence_id"].int64_param = sid
    req.parameters["sequence_start"].bool_param = start
    req.parameters["sequence_end"].bool_param = end
    add_input(req, "INPUT", "INT32", [1, 1], raw=encode_raw("INT32", [value]))
    req.outputs.add().name = "OUTPUT"
    return req


def grpc_value(resp):
    assert resp.outputs[0].name == "OUTPUT" and list(resp.outputs[0].shape) == [1, 1]
    return decode_raw("INT32", resp.raw_output_contents[0])[0]


def run_sync(send, dyna):
    """The sync examples: the three sequences one after the other."""
    ids = ids_for(dyna)
    seqs, want = expected(dyna, ids)
    for k in range(3):
        got = [send(models(dyna)[k], v, ids[k], i == 0, i == len(seqs[k]) - 1)
               for i, v in enumerate(seqs[k])]
        assert got == want[k], (models(dyna)[k], ids[k])


def test_sequence_models_over_rest(demo):
    with requests.Session() as http:
        for dyna in (False, True):
            run_sync(lambda *a: rest_step(demo, *a, http=http), dyna)


def test_sequence_models_over_grpc(stub, protos):
    for dyna in (False, True):
        run_sync(lambda *a: grpc_value(stub.ModelInfer(grpc_request(protos, *a), timeout=10)),
                 dyna)


def test_sequence_models_interleaved_on_one_stream(stub, protos):
    """The stream example: the three sequences sent back to back on one ModelStreamInfer, each
    request with id "<sequence id>_<n>"; the answers sorted back by that id."""
    for dyna in (False, True):
        ids = ids_for(dyna)
        seqs, want = expected(dyna, ids)
        reqs = [grpc_request(protos, models(dyna)[k], v, ids[k], i == 0,
                             i == len(seqs[k]) - 1, "%s_%d" % (ids[k], i + 1))
                for k in range(3) for i, v in enumerate(seqs[k])]
        got = {str(i): [] for i in ids}
        for r in stub.ModelStreamInfer(iter(reqs), timeout=10):
            assert r.error_message == "", r.error_message
            got[r.infer_response.id.split("_")[0]].append(grpc_value(r.infer_response))
        assert [got[str(i)] for i in ids] == want


def test_sequence_models_refuse_what_triton_refuses(demo):
    sid = random.randint(1 << 30, 1 << 40)
    body = {"parameters": {"sequence_id": sid}, "inputs": [
        {"name": "INPUT", "shape": [1, 1], "datatype": "INT32", "data": [1]}]}
    r = infer(demo, "simple_sequence", body)  # no start: the sequence is not live
    assert r.status_code == 400 and "sequence_start" in r.json()["error"]
    body["parameters"] = {"sequence_id": "abc", "sequence_start": True}
    r = infer(demo, "simple_dyna_sequence", body)  # its CORRID is UINT64
    assert r.status_code == 400 and "numeric sequence_id" in r.json()["error"]
    r = infer(demo, "simple_string_dyna_sequence", body)  # the id must read as an int
    assert r.status_code == 400 and "decimal int32" in r.json()["error"]
    body["parameters"] = {"sequence_start": True}
    r = infer(demo, "simple_sequence", body)
    assert r.status_code == 400 and "sequence_id" in r.json()["error"]


def test_sequences_of_one_model_do_not_mix(demo):
    """Eight string-id accumulators at once, one thread each: every sum is its own."""
    errors = []

    def one(k):
        sid = str(random.randint(1, 1 << 30))
        acc = 0
        http = requests.Session()  # one connection per sequence (rest_step)
        try:
            for i in range(20):
                acc += k
                got = rest_step(demo, "simple_string_dyna_sequence", k, sid, i == 0, i == 19,
                                http)
                want = acc + (int(sid) if i == 19 else 0)
                if got != (want + 2 ** 31) % 2 ** 32 - 2 ** 31:
                    errors.append((k, i, got, want))
        except Exception as e:  # noqa: BLE001 — a thread's failure must reach the assert
            errors.append((k, repr(e)))
        finally:
            http.close()

    threads = [threading.Thread(target=one, args=(k,)) for k in range(1, 9)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_custom_identity_int32(demo, stub, protos):
    """memory_growth_test.py's model: INPUT0 [1,16] back as OUTPUT0 (max batch 1024)."""
    data = list(range(16))
    r = infer(demo, "custom_identity_int32", {"inputs": [
        {"name": "INPUT0", "shape": [1, 16], "datatype": "INT32", "data": data}],
        "outputs": [{"name": "OUTPUT0"}]})
    assert r.status_code == 200, r.text
    out = r.json()["outputs"][0]
    assert (out["datatype"], out["shape"], out["data"]) == ("INT32", [1, 16], data)
    meta = requests.get(demo.base + "/v2/models/custom_identity_int32", timeout=TIMEOUT).json()
    assert meta["inputs"] == [{"name": "INPUT0", "datatype": "INT32", "shape": [-1, -1]}]
    req = protos.pb.ModelInferRequest(model_name="custom_identity_int32")
    add_input(req, "INPUT0", "INT32", [3, 2], raw=encode_raw("INT32", [1, -2, 3, -4, 5, -6]))
    resp = stub.ModelInfer(req, timeout=TIMEOUT)
    assert list(resp.outputs[0].shape) == [3, 2]
    assert decode_raw("INT32", resp.raw_output_contents[0]) == [1, -2, 3, -4, 5, -6]
