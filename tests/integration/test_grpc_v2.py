"""KServe V2 over gRPC (PROTOCOLS.md §2): every RPC of inference.GRPCInferenceService and
grpc.health.v1.Health/Check, with stubs generated from the project's own protos at test time.
Responses carry tensors in raw_output_contents (as Triton does)."""
import queue
import threading

import grpc
import pytest

from grpc_stubs import (add_input, decode_bytes_elems, decode_raw, encode_raw, expect_rpc_error,
                        outputs_of, short, simple_request, wrap32)
from grpc_stubs import _grpc_channels, channel, health, protos, stub  # noqa: F401 (fixtures)
from isvtest import f32, shortest_repr

T = 5.0  # per-call timeout


# ------------------------------------------------------------------------------------------
# Server / model health and metadata
# ------------------------------------------------------------------------------------------
def test_server_live(stub, protos):
    r = stub.ServerLive(protos.pb.ServerLiveRequest(), timeout=T)
    assert r.live is True


def test_server_ready(stub, protos):
    r = stub.ServerReady(protos.pb.ServerReadyRequest(), timeout=T)
    assert r.ready is True


@pytest.mark.parametrize("name,version,ready", [
    ("simple", "", True), ("simple", "1", True), ("multi_version", "2", True),
    ("classifier", "", True), ("loading", "", False), ("loading", "1", False)])
def test_model_ready(stub, protos, name, version, ready):
    r = stub.ModelReady(protos.pb.ModelReadyRequest(name=name, version=version), timeout=T)
    assert r.ready is ready, "%s/%s: %s" % (name, version, short(r))


@pytest.mark.parametrize("name,version", [("no_such_model", ""), ("simple", "99")])
def test_model_ready_unknown_is_not_ready(stub, protos, name, version):
    # Triton's answer: not there is not ready, with status OK (tritonclient's is_model_ready()
    # after an unload expects False, not an error); ModelMetadata still says NOT_FOUND
    r = stub.ModelReady(protos.pb.ModelReadyRequest(name=name, version=version), timeout=T)
    assert r.ready is False, short(r)
    expect_rpc_error(stub.ModelMetadata, grpc.StatusCode.NOT_FOUND,
                     request=protos.pb.ModelMetadataRequest(name=name, version=version), timeout=T)


def test_server_metadata(stub, protos):
    r = stub.ServerMetadata(protos.pb.ServerMetadataRequest(), timeout=T)
    assert r.name, short(r)
    assert r.version, short(r)
    assert "classification" in list(r.extensions), short(r)
    assert len(set(r.extensions)) == len(r.extensions), "duplicate extensions: %s" % short(r)


def test_server_metadata_matches_rest(stub, protos, demo):
    import requests
    rest = requests.get(demo.url("/v2"), timeout=T).json()
    r = stub.ServerMetadata(protos.pb.ServerMetadataRequest(), timeout=T)
    assert (r.name, r.version) == (rest["name"], rest["version"]), "%s vs %r" % (short(r), rest)
    # one list for both (gRPC used to list only the first of REST's two)
    assert list(r.extensions) == rest["extensions"], "%s vs %r" % (short(r), rest)
    assert "binary_tensor_data" in rest["extensions"], rest


def _tm(t):
    return (t.name, t.datatype, list(t.shape))


def test_model_metadata_simple(stub, protos):
    r = stub.ModelMetadata(protos.pb.ModelMetadataRequest(name="simple"), timeout=T)
    assert r.name == "simple", short(r)
    assert list(r.versions) == ["1"], short(r)
    assert [_tm(t) for t in r.inputs] == [("INPUT0", "INT32", [-1, 16]),
                                          ("INPUT1", "INT32", [-1, 16])], short(r)
    assert [_tm(t) for t in r.outputs] == [("OUTPUT0", "INT32", [-1, 16]),
                                           ("OUTPUT1", "INT32", [-1, 16])], short(r)


def test_model_metadata_with_version_and_multi_version(stub, protos):
    r = stub.ModelMetadata(protos.pb.ModelMetadataRequest(name="simple", version="1"), timeout=T)
    assert r.name == "simple" and [_tm(t) for t in r.inputs][0] == ("INPUT0", "INT32", [-1, 16])
    r = stub.ModelMetadata(protos.pb.ModelMetadataRequest(name="multi_version"), timeout=T)
    assert sorted(r.versions) == ["1", "2", "3"], short(r)
    r = stub.ModelMetadata(protos.pb.ModelMetadataRequest(name="identity_fp16"), timeout=T)
    assert [_tm(t) for t in r.inputs] == [("INPUT0", "FP16", [-1, -1])], short(r)


@pytest.mark.parametrize("name,version", [("no_such_model", ""), ("simple", "7")])
def test_model_metadata_unknown_is_not_found(stub, protos, name, version):
    expect_rpc_error(stub.ModelMetadata, grpc.StatusCode.NOT_FOUND,
                     request=protos.pb.ModelMetadataRequest(name=name, version=version), timeout=T)


# ------------------------------------------------------------------------------------------
# ModelInfer
# ------------------------------------------------------------------------------------------
def _check_simple(resp, fa, fb, rows, outputs=("OUTPUT0", "OUTPUT1")):
    outs = outputs_of(resp)
    assert sorted(outs) == sorted(outputs), short(resp)
    want = {"OUTPUT0": [wrap32(x + y) for x, y in zip(fa, fb)],
            "OUTPUT1": [wrap32(x - y) for x, y in zip(fa, fb)]}
    for name in outputs:
        dt, shape, raw = outs[name]
        assert dt == "INT32" and shape == [rows, 16], "%s: %s" % (name, short(resp))
        assert len(raw) == rows * 16 * 4, "%s: %d raw bytes" % (name, len(raw))
        assert decode_raw("INT32", raw) == want[name], name


@pytest.mark.parametrize("rows", [1, 3, 8])
def test_infer_simple_raw(stub, protos, rows):
    req, fa, fb = simple_request(protos.pb, rows=rows)
    resp = stub.ModelInfer(req, timeout=T)
    assert resp.model_name == "simple", short(resp)
    assert resp.model_version == "1", short(resp)
    assert resp.id == "", "no id was sent, none must come back: %s" % short(resp)
    _check_simple(resp, fa, fb, rows)


def test_infer_simple_typed_int_contents(stub, protos):
    req, fa, fb = simple_request(protos.pb, rows=2, typed=True, req_id="typed-1")
    assert len(req.raw_input_contents) == 0
    resp = stub.ModelInfer(req, timeout=T)
    assert resp.id == "typed-1", short(resp)
    _check_simple(resp, fa, fb, 2)


def test_infer_int32_wrapping_edges(stub, protos):
    a = [2 ** 31 - 1, -2 ** 31, -1, 0] + [5] * 12
    b = [1, -1, -2 ** 31, -2 ** 31] + [-5] * 12
    req = protos.pb.ModelInferRequest(model_name="simple")
    add_input(req, "INPUT0", "INT32", [1, 16], raw=encode_raw("INT32", a))
    add_input(req, "INPUT1", "INT32", [1, 16], raw=encode_raw("INT32", b))
    _check_simple(stub.ModelInfer(req, timeout=T), a, b, 1)


def test_infer_id_echoed(stub, protos):
    for rid in ("my-request-42", "ünïcode id ✓", "x" * 300):
        req, fa, fb = simple_request(protos.pb, req_id=rid)
        resp = stub.ModelInfer(req, timeout=T)
        assert resp.id == rid, short(resp)


@pytest.mark.parametrize("wanted", [["OUTPUT1"], ["OUTPUT0"], ["OUTPUT1", "OUTPUT0"]])
def test_infer_requested_outputs_filter(stub, protos, wanted):
    req, fa, fb = simple_request(protos.pb, rows=2, outputs=wanted)
    resp = stub.ModelInfer(req, timeout=T)
    _check_simple(resp, fa, fb, 2, outputs=wanted)


def test_infer_explicit_version(stub, protos):
    for version, add in (("1", 1), ("2", 2), ("3", 3), ("", 3)):  # default version is 3
        req = protos.pb.ModelInferRequest(model_name="multi_version", model_version=version)
        add_input(req, "INPUT0", "INT32", [4], raw=encode_raw("INT32", [0, 10, -5, 7]))
        resp = stub.ModelInfer(req, timeout=T)
        assert resp.model_version == (version or "3"), short(resp)
        dt, shape, raw = outputs_of(resp)["OUTPUT0"]
        assert (dt, shape) == ("INT32", [4])
        assert decode_raw("INT32", raw) == [add, 10 + add, add - 5, 7 + add], version


def test_infer_request_parameters_accepted(stub, protos):
    req, fa, fb = simple_request(protos.pb)
    req.parameters["priority"].int64_param = 1
    req.parameters["note"].string_param = "hello"
    req.parameters["flag"].bool_param = True
    req.inputs[0].parameters["x"].double_param = 0.5
    _check_simple(stub.ModelInfer(req, timeout=T), fa, fb, 1)


def test_infer_bytes_model_simple_string(stub, protos):
    a = [str(i).encode() for i in range(16)]
    b = [str(-3 * i).encode() for i in range(16)]
    req = protos.pb.ModelInferRequest(model_name="simple_string")
    add_input(req, "INPUT0", "BYTES", [1, 16], raw=encode_raw("BYTES", a))
    add_input(req, "INPUT1", "BYTES", [1, 16], typed=b)  # one raw, one typed: both allowed
    outs = outputs_of(stub.ModelInfer(req, timeout=T))
    assert outs["OUTPUT0"][:2] == ("BYTES", [1, 16])
    assert decode_bytes_elems(outs["OUTPUT0"][2]) == [str(-2 * i).encode() for i in range(16)]
    assert decode_bytes_elems(outs["OUTPUT1"][2]) == [str(4 * i).encode() for i in range(16)]


# ------------------------------------------------------------------------------------------
# Classification extension over gRPC
# ------------------------------------------------------------------------------------------
LABELS = ["setosa", "versicolor", "virginica"]
IRIS = [[5.1, 3.5, 1.4, 0.2], [6.7, 3.0, 5.2, 2.3], [5.9, 3.0, 4.2, 1.5]]


def _classifier_request(pb, k=None):
    req = pb.ModelInferRequest(model_name="classifier")
    add_input(req, "INPUT0", "FP32", [len(IRIS), 4], raw=encode_raw("FP32", sum(IRIS, [])))
    if k is not None:
        o = req.outputs.add()
        o.name = "OUTPUT0"
        o.parameters["classification"].int64_param = k
    return req


@pytest.mark.parametrize("k", [2, 3, 10])
def test_classification_top_k(stub, protos, k):
    plain = outputs_of(stub.ModelInfer(_classifier_request(protos.pb), timeout=T))["OUTPUT0"]
    assert plain[:2] == ("FP32", [len(IRIS), 3])
    probs = decode_raw("FP32", plain[2])
    for r in range(len(IRIS)):
        assert abs(sum(probs[r * 3:r * 3 + 3]) - 1.0) < 1e-5

    resp = stub.ModelInfer(_classifier_request(protos.pb, k), timeout=T)
    kk = min(k, 3)
    dt, shape, raw = outputs_of(resp)["OUTPUT0"]
    assert (dt, shape) == ("BYTES", [len(IRIS), kk]), short(resp)
    elems = [e.decode("utf-8") for e in decode_bytes_elems(raw)]
    assert len(elems) == len(IRIS) * kk, elems
    for r in range(len(IRIS)):
        row = probs[r * 3:r * 3 + 3]
        order = sorted(range(3), key=lambda i: (-row[i], i))[:kk]
        got = elems[r * kk:(r + 1) * kk]
        for elem, idx in zip(got, order):
            parts = elem.split(":")
            assert len(parts) == 3, "element %r (want value:index:label)" % elem
            assert int(parts[1]) == idx and parts[2] == LABELS[idx], "row %d: %r" % (r, got)
            assert f32(float(parts[0])) == row[idx], "value of %r vs %r" % (elem, row[idx])
            # the shortest round-trip text, as the REST writer prints it
            assert parts[0] == shortest_repr(row[idx], f32) or \
                float(parts[0]) == float(shortest_repr(row[idx], f32)), elem


# ------------------------------------------------------------------------------------------
# ModelStreamInfer (Triton's bidirectional streaming extension)
# ------------------------------------------------------------------------------------------
class _Feeder:
    """A request iterator fed from the test thread; close() half-closes the stream."""

    def __init__(self):
        self.q = queue.Queue()

    def put(self, msg):
        self.q.put(msg)

    def close(self):
        self.q.put(None)

    def __iter__(self):
        while True:
            m = self.q.get()
            if m is None:
                return
            yield m


def _next(it, what):
    box = {}

    def run():
        try:
            box["v"] = next(it)
        except BaseException as e:  # noqa: BLE001 - handed to the test thread
            box["e"] = e
    th = threading.Thread(target=run, daemon=True)
    th.start()
    th.join(T)
    assert not th.is_alive(), "no stream response within %.0f s (%s)" % (T, what)
    if "e" in box:
        raise box["e"]
    return box["v"]


def test_stream_infer_three_then_error(stub, protos):
    pb = protos.pb
    feeder = _Feeder()
    responses = stub.ModelStreamInfer(iter(feeder), timeout=10)
    sent = {}
    for i, rows in enumerate((1, 2, 3)):
        req, fa, fb = simple_request(pb, rows=rows, req_id="s%d" % i)
        sent[req.id] = (fa, fb, rows)
        feeder.put(req)
    got = {}
    for n in range(3):
        r = _next(responses, "response %d of 3" % (n + 1))
        assert r.error_message == "", short(r)
        got[r.infer_response.id] = r.infer_response
    assert sorted(got) == sorted(sent), "ids %r" % sorted(got)
    for rid, (fa, fb, rows) in sent.items():
        assert got[rid].model_name == "simple"
        _check_simple(got[rid], fa, fb, rows)

    # a bad request: an error_message in the stream, the stream goes on
    bad = pb.ModelInferRequest(model_name="simple", id="bad")
    add_input(bad, "INPUT0", "INT32", [1, 16], raw=encode_raw("INT32", [0] * 16))
    feeder.put(bad)  # INPUT1 missing
    r = _next(responses, "the error response")
    assert r.error_message, "expected an error_message: %s" % short(r)
    assert "INPUT1" in r.error_message, short(r)

    # still usable after the error
    req, fa, fb = simple_request(pb, rows=1, req_id="after")
    feeder.put(req)
    r = _next(responses, "the response after the error")
    assert r.error_message == "" and r.infer_response.id == "after", short(r)
    _check_simple(r.infer_response, fa, fb, 1)

    feeder.close()
    with pytest.raises(StopIteration):
        _next(responses, "the end of the stream")
    assert responses.code() == grpc.StatusCode.OK, (responses.code(), responses.details())


def test_stream_infer_unknown_model_and_interleaved(stub, protos):
    """Errors of every kind travel in error_message; responses of a slow request do not hold up
    a fast one (answers in completion order)."""
    from grpc_stubs import slow_request
    pb = protos.pb
    feeder = _Feeder()
    responses = stub.ModelStreamInfer(iter(feeder), timeout=10)
    feeder.put(slow_request(pb, 300, req_id="slow"))
    feeder.put(pb.ModelInferRequest(model_name="no_such_model", id="nf"))
    req, fa, fb = simple_request(pb, req_id="fast")
    feeder.put(req)
    order = []
    for _ in range(3):
        r = _next(responses, "stream response")
        if r.error_message:
            assert "no_such_model" in r.error_message, short(r)
            order.append("error")
        else:
            order.append(r.infer_response.id)
    assert order.index("slow") == 2, "the slow answer should come last: %r" % order
    assert sorted(order) == ["error", "fast", "slow"], order
    feeder.close()
    with pytest.raises(StopIteration):
        _next(responses, "the end of the stream")
    assert responses.code() == grpc.StatusCode.OK


def test_stream_infer_empty_stream_ends_ok(stub, protos):
    responses = stub.ModelStreamInfer(iter(()), timeout=T)
    assert list(responses) == []
    assert responses.code() == grpc.StatusCode.OK


# ------------------------------------------------------------------------------------------
# grpc.health.v1.Health/Check
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("service,status", [
    ("", "SERVING"), ("inference.GRPCInferenceService", "SERVING"), ("simple", "SERVING"),
    ("classifier", "SERVING"), ("loading", "NOT_SERVING")])
def test_health_check(health, protos, service, status):
    hp = protos.health_pb
    r = health.Check(hp.HealthCheckRequest(service=service), timeout=T)
    want = hp.HealthCheckResponse.ServingStatus.Value(status)
    assert r.status == want, "%r: got %s" % (
        service, hp.HealthCheckResponse.ServingStatus.Name(r.status))


def test_health_check_unknown_is_not_found(health, protos):
    expect_rpc_error(health.Check, grpc.StatusCode.NOT_FOUND,
                     request=protos.health_pb.HealthCheckRequest(service="no_such_model"),
                     timeout=T)


def test_health_watch_streams_the_status(channel, protos):
    """Watch is served (test_grpc_health_watch.py follows its changes): SERVING at once, and
    the stream stays open until the client leaves."""
    watch = channel.unary_stream("/grpc.health.v1.Health/Watch",
                                 request_serializer=lambda b: b,
                                 response_deserializer=lambda b: b)
    call = watch(b"", timeout=T)
    assert next(call) == b"\x08\x01"  # SERVING
    call.cancel()
    with pytest.raises(grpc.RpcError) as ei:
        next(call)
    assert ei.value.code() == grpc.StatusCode.CANCELLED, ei.value


# ------------------------------------------------------------------------------------------
# Load
# ------------------------------------------------------------------------------------------
def test_stream_infer_many_requests(stub, protos):
    pb = protos.pb
    sent = {}
    reqs = []
    for i in range(200):
        req, fa, fb = simple_request(pb, rows=1 + i % 8, req_id="r%d" % i)
        sent[req.id] = (fa, fb, 1 + i % 8)
        reqs.append(req)
    got = {}
    for r in stub.ModelStreamInfer(iter(reqs), timeout=10):
        assert r.error_message == "", short(r)
        assert r.infer_response.id not in got, "id %s answered twice" % r.infer_response.id
        got[r.infer_response.id] = r.infer_response
    assert sorted(got) == sorted(sent)
    for rid, (fa, fb, rows) in sent.items():
        _check_simple(got[rid], fa, fb, rows)


def test_stream_infer_keeps_the_order_of_a_large_message(stub, protos):
    # a message of 96 KiB or more is decoded on a worker thread; the ones sent after it must
    # still reach the model after it (a sequence's requests must run as they were sent)
    pb = protos.pb
    for round_no in range(5):
        big, _, _ = simple_request(pb, req_id="big%d" % round_no)
        big.parameters["pad"].string_param = "x" * (200 << 10)
        smalls = [simple_request(pb, req_id="small%d.%d" % (round_no, i))[0] for i in range(3)]
        order = [r.infer_response.id for r in
                 stub.ModelStreamInfer(iter([big] + smalls), timeout=10)]
        assert order == ["big%d" % round_no] + ["small%d.%d" % (round_no, i) for i in range(3)]


def test_parallel_channels(demo, protos):
    from grpc_stubs import make_channel
    errors = []

    def worker(k):
        ch = make_channel(demo)
        try:
            s = protos.pb_grpc.GRPCInferenceServiceStub(ch)
            for i in range(25):
                req, fa, fb = simple_request(protos.pb, rows=1 + (i + k) % 8,
                                             req_id="w%d-%d" % (k, i))
                resp = s.ModelInfer(req, timeout=T)
                assert resp.id == req.id
                _check_simple(resp, fa, fb, 1 + (i + k) % 8)
                vals = [k, -i, 2 ** 62, -2 ** 63]
                r2 = protos.pb.ModelInferRequest(model_name="identity_int64")
                add_input(r2, "INPUT0", "INT64", [2, 2], typed=vals)
                out = outputs_of(s.ModelInfer(r2, timeout=T))["OUTPUT0"]
                assert decode_raw("INT64", out[2]) == vals
        except Exception as e:  # noqa: BLE001 - reported by the main thread
            errors.append("worker %d: %r" % (k, e))
        finally:
            ch.close()
    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors, "\n".join(errors)


@pytest.mark.parametrize("model,dt", [("identity_bytes", "BYTES"), ("identity_bool", "BOOL")])
def test_classification_of_bytes_or_bool_is_invalid(stub, protos, model, dt):
    req = protos.pb.ModelInferRequest(model_name=model)
    vals = [b"a", b"b"] if dt == "BYTES" else [True, False]
    add_input(req, "INPUT0", dt, [1, 2], raw=encode_raw(dt, vals))
    o = req.outputs.add()
    o.name = "OUTPUT0"
    o.parameters["classification"].int64_param = 1
    expect_rpc_error(stub.ModelInfer, grpc.StatusCode.INVALID_ARGUMENT, "OUTPUT0",
                     request=req, timeout=T)


@pytest.mark.parametrize("kind,value", [("int64_param", 0), ("int64_param", -1),
                                        ("uint64_param", 2), ("double_param", 2.0),
                                        ("string_param", "2"), ("bool_param", True)])
def test_classification_parameter_kinds(stub, protos, kind, value):
    """k is a non-negative integer (0 = no classification, as over REST): uint64 2 is k=2 too;
    anything else is INVALID_ARGUMENT or, where the server converts it, a proper top-2 — never
    INTERNAL, never a crash."""
    req = _classifier_request(protos.pb)
    o = req.outputs.add()
    o.name = "OUTPUT0"
    setattr(o.parameters["classification"], kind, value)
    try:
        resp = stub.ModelInfer(req, timeout=T)
    except grpc.RpcError as e:
        assert e.code() == grpc.StatusCode.INVALID_ARGUMENT, (kind, value, e)
        assert kind != "uint64_param", "uint64 k=2 refused: %s" % e.details()
        return
    dt, shape, raw = outputs_of(resp)["OUTPUT0"]
    if (kind, value) == ("int64_param", 0):  # k=0: no classification, as over REST
        assert (dt, shape) == ("FP32", [len(IRIS), 3]), short(resp)
        return
    assert kind in ("uint64_param", "double_param", "string_param"), \
        "%s=%r accepted: %s" % (kind, value, short(resp))
    assert (dt, shape) == ("BYTES", [len(IRIS), 2]), (kind, value, short(resp))
