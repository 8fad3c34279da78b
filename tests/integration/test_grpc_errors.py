"""gRPC status codes (PROTOCOLS.md §2): NOT_FOUND, INVALID_ARGUMENT (details name the input),
INTERNAL (backend failure), UNAVAILABLE (model loading), UNIMPLEMENTED (unknown method),
DEADLINE_EXCEEDED (grpc-timeout honoured by the server) and cancellation."""
import struct
import time

import grpc
import pytest

from grpc_stubs import (SERVICE, add_input, curl_h2, encode_raw, expect_rpc_error, grpc_frame,
                        outputs_of, raw_method, short, simple_request, slow_request, wrap32)
from grpc_stubs import _grpc_channels, channel, protos, stub  # noqa: F401 (fixtures)

T = 5.0
INVALID = grpc.StatusCode.INVALID_ARGUMENT


def _assert_serving(stub, pb):
    """The server answers a fresh inference promptly and correctly."""
    req, fa, fb = simple_request(pb, req_id="still-alive")
    t0 = time.monotonic()
    resp = stub.ModelInfer(req, timeout=T)
    assert time.monotonic() - t0 < 1.0
    got = struct.unpack("<16i", outputs_of(resp)["OUTPUT0"][2])
    assert list(got) == [wrap32(x + y) for x, y in zip(fa, fb)]


# ------------------------------------------------------------------------------------------
# NOT_FOUND / UNAVAILABLE / INTERNAL / UNIMPLEMENTED
# ------------------------------------------------------------------------------------------
def test_unknown_model_not_found(stub, protos):
    req, _, _ = simple_request(protos.pb, model="no_such_model")
    expect_rpc_error(stub.ModelInfer, grpc.StatusCode.NOT_FOUND, "no_such_model",
                     request=req, timeout=T)


def test_unknown_version_not_found(stub, protos):
    req, _, _ = simple_request(protos.pb)
    req.model_version = "42"
    expect_rpc_error(stub.ModelInfer, grpc.StatusCode.NOT_FOUND, request=req, timeout=T)


def test_backend_failure_internal(stub, protos):
    req = protos.pb.ModelInferRequest(model_name="failing")
    add_input(req, "INPUT0", "INT32", [2], raw=encode_raw("INT32", [1, 2]))
    expect_rpc_error(stub.ModelInfer, grpc.StatusCode.INTERNAL, "intentional failure",
                     request=req, timeout=T)


def test_loading_model_unavailable(stub, protos):
    req = protos.pb.ModelInferRequest(model_name="loading")
    add_input(req, "INPUT0", "INT32", [2], raw=encode_raw("INT32", [1, 2]))
    expect_rpc_error(stub.ModelInfer, grpc.StatusCode.UNAVAILABLE, request=req, timeout=T)


@pytest.mark.parametrize("path", [SERVICE + "NoSuchRpc", "/no.such.Service/ModelInfer",
                                  "/inference.GRPCInferenceService/modelinfer",
                                  "/v2/health/live", "/inference.GRPCInferenceService/",
                                  SERVICE + "ModelInfer/extra"])
def test_unknown_method_unimplemented(channel, path):
    expect_rpc_error(raw_method(channel, path), grpc.StatusCode.UNIMPLEMENTED,
                     request=b"", timeout=T)


def test_custom_metadata_ignored(stub, protos):
    req, fa, fb = simple_request(protos.pb, req_id="md")
    resp = stub.ModelInfer(req, timeout=T, metadata=[("x-custom", "v"), ("authorization", "x"),
                                                     ("x-trace-bin", b"\x00\x01\xff")])
    assert resp.id == "md"


# ------------------------------------------------------------------------------------------
# INVALID_ARGUMENT
# ------------------------------------------------------------------------------------------
def test_bad_shape(stub, protos):
    pb = protos.pb
    req = pb.ModelInferRequest(model_name="simple")
    add_input(req, "INPUT0", "INT32", [1, 15], raw=encode_raw("INT32", [0] * 15))
    add_input(req, "INPUT1", "INT32", [1, 16], raw=encode_raw("INT32", [0] * 16))
    expect_rpc_error(stub.ModelInfer, INVALID, "INPUT0", request=req, timeout=T)


def test_negative_shape(stub, protos):
    req = protos.pb.ModelInferRequest(model_name="identity_int32")
    add_input(req, "INPUT0", "INT32", [-1, 2], raw=b"")
    expect_rpc_error(stub.ModelInfer, INVALID, "INPUT0", request=req, timeout=T)


def test_overflowing_shape(stub, protos):
    req = protos.pb.ModelInferRequest(model_name="identity_int64")
    add_input(req, "INPUT0", "INT64", [2 ** 40, 2 ** 40], raw=b"\x00" * 8)
    expect_rpc_error(stub.ModelInfer, INVALID, "INPUT0", request=req, timeout=T)


def test_batch_over_max(stub, protos):
    req, _, _ = simple_request(protos.pb, rows=9)  # max batch 8
    expect_rpc_error(stub.ModelInfer, INVALID, request=req, timeout=T)


def test_bad_datatype(stub, protos):
    req = protos.pb.ModelInferRequest(model_name="simple")
    add_input(req, "INPUT0", "FP32", [1, 16], raw=encode_raw("FP32", [0.0] * 16))
    add_input(req, "INPUT1", "INT32", [1, 16], raw=encode_raw("INT32", [0] * 16))
    expect_rpc_error(stub.ModelInfer, INVALID, "INPUT0", request=req, timeout=T)


def test_unknown_datatype_string(stub, protos):
    req = protos.pb.ModelInferRequest(model_name="identity_int32")
    add_input(req, "INPUT0", "INT33", [1, 1], raw=b"\x00" * 4)
    expect_rpc_error(stub.ModelInfer, INVALID, "INPUT0", request=req, timeout=T)


def test_missing_input(stub, protos):
    req = protos.pb.ModelInferRequest(model_name="simple")
    add_input(req, "INPUT0", "INT32", [1, 16], raw=encode_raw("INT32", [0] * 16))
    expect_rpc_error(stub.ModelInfer, INVALID, "INPUT1", request=req, timeout=T)


def test_extra_input(stub, protos):
    req, _, _ = simple_request(protos.pb)
    add_input(req, "INPUT9", "INT32", [1, 16], raw=encode_raw("INT32", [0] * 16))
    expect_rpc_error(stub.ModelInfer, INVALID, "INPUT9", request=req, timeout=T)


def test_duplicate_input(stub, protos):
    req, _, _ = simple_request(protos.pb)
    add_input(req, "INPUT1", "INT32", [1, 16], raw=encode_raw("INT32", [0] * 16))
    expect_rpc_error(stub.ModelInfer, INVALID, "INPUT1", request=req, timeout=T)


def test_unknown_requested_output(stub, protos):
    req, _, _ = simple_request(protos.pb, outputs=["OUTPUT7"])
    expect_rpc_error(stub.ModelInfer, INVALID, "OUTPUT7", request=req, timeout=T)


def test_raw_and_typed_on_one_input(stub, protos):
    req = protos.pb.ModelInferRequest(model_name="identity_int32")
    add_input(req, "INPUT0", "INT32", [1, 2], raw=encode_raw("INT32", [1, 2]), typed=[1, 2])
    expect_rpc_error(stub.ModelInfer, INVALID, "INPUT0", request=req, timeout=T)


def test_more_raw_contents_than_inputs(stub, protos):
    req, _, _ = simple_request(protos.pb)
    req.raw_input_contents.append(encode_raw("INT32", [0] * 16))
    expect_rpc_error(stub.ModelInfer, INVALID, request=req, timeout=T)


def test_fewer_raw_contents_than_inputs(stub, protos):
    req, _, _ = simple_request(protos.pb)
    del req.raw_input_contents[1]  # INPUT1 has neither raw nor typed data
    expect_rpc_error(stub.ModelInfer, INVALID, "INPUT1", request=req, timeout=T)


def test_missing_model_name(stub, protos):
    req, _, _ = simple_request(protos.pb, model="")
    expect_rpc_error(stub.ModelInfer, INVALID, request=req, timeout=T)


@pytest.mark.parametrize("rpc,msg", [
    (rpc, msg) for rpc in ("ModelInfer", "ModelMetadata", "ModelReady")
    for msg in (b"\xff\xff\xff\xff",          # field number 0 / bad varint
                b"\x0a\x10abc",                 # string length past the end
                b"\x2a\x07\x0a\x03INP",         # field 5 length past the end
                b"\x0a\x03abc\x10",             # truncated varint field
                b"\x0b\x00")                    # wire type 3 (groups): unsupported
] + [("ModelInfer", b"\x2a\x05\x0a\x09INP"),   # an input whose name overruns the input
     ("ModelInfer", b"\x0a\x06simple\x2a\x04\x1a\x02\x01")])  # packed shape overruns
def test_malformed_protobuf(channel, stub, protos, rpc, msg):
    expect_rpc_error(raw_method(channel, SERVICE + rpc), INVALID, request=msg, timeout=T)
    _assert_serving(stub, protos.pb)


def test_client_mistakes_are_never_internal(stub, protos):
    """A sweep of mistakes: none may be INTERNAL/UNKNOWN (a server's error)."""
    pb = protos.pb
    bad = []
    r = pb.ModelInferRequest(model_name="simple")
    add_input(r, "", "INT32", [1, 16], raw=encode_raw("INT32", [0] * 16))
    bad.append(r)
    r = pb.ModelInferRequest(model_name="simple")
    add_input(r, "INPUT0", "", [1, 16], raw=encode_raw("INT32", [0] * 16))
    bad.append(r)
    r = pb.ModelInferRequest(model_name="simple")
    add_input(r, "INPUT0", "INT32", [], raw=encode_raw("INT32", [0]))
    bad.append(r)
    r = pb.ModelInferRequest(model_name="simple_string")
    add_input(r, "INPUT0", "BYTES", [1, 16], typed=[b"x"] * 16)
    add_input(r, "INPUT1", "BYTES", [1, 16], typed=[b"1"] * 16)
    bad.append(r)
    r = pb.ModelInferRequest(model_name="slow")
    add_input(r, "INPUT0", "INT32", [1], raw=encode_raw("INT32", [-5]))
    bad.append(r)
    for req in bad:
        try:
            resp = stub.ModelInfer(req, timeout=T)
        except grpc.RpcError as e:
            assert e.code() == INVALID, "%s for\n%s" % (e, short(req))
        else:
            raise AssertionError("accepted:\n%s\n->\n%s" % (short(req), short(resp)))


# ------------------------------------------------------------------------------------------
# Deadlines and cancellation
# ------------------------------------------------------------------------------------------
def test_deadline_exceeded(stub, protos):
    pb = protos.pb
    t0 = time.monotonic()
    expect_rpc_error(stub.ModelInfer, grpc.StatusCode.DEADLINE_EXCEEDED,
                     request=slow_request(pb, 500), timeout=0.1)
    elapsed = time.monotonic() - t0
    assert elapsed < 0.4, "DEADLINE_EXCEEDED after %.3f s" % elapsed
    _assert_serving(stub, pb)
    time.sleep(0.5)  # the slow request completes after its call is gone
    _assert_serving(stub, pb)


def test_server_honours_grpc_timeout(demo, protos, stub):
    """grpcio enforces deadlines on the client side too; curl does not, so this shows the
    server's own grpc-timeout handling: trailers with grpc-status 4 at ~100 ms."""
    msg = slow_request(protos.pb, 500).SerializeToString()
    r = curl_h2(demo, SERVICE + "ModelInfer", data=grpc_frame(msg),
                headers=["content-type: application/grpc", "te: trailers",
                         "grpc-timeout: 100m"])
    assert r.status == 200, r
    assert r.header("grpc-status") == "4", "expected grpc-status 4 (DEADLINE_EXCEEDED): %r" % r
    assert r.elapsed < 0.45, "deadline reported after %.3f s: %r" % (r.elapsed, r)
    assert r.body == b"", r
    _assert_serving(stub, protos.pb)


def test_grpc_timeout_not_reached(demo, protos):
    msg = slow_request(protos.pb, 50).SerializeToString()
    r = curl_h2(demo, SERVICE + "ModelInfer", data=grpc_frame(msg),
                headers=["content-type: application/grpc", "te: trailers", "grpc-timeout: 2S"])
    assert r.header("grpc-status") == "0", r
    assert len(r.body) > 5 and r.body[0] == 0, r
    resp = protos.pb.ModelInferResponse.FromString(r.body[5:])
    assert resp.model_name == "slow" and struct.unpack("<i", resp.raw_output_contents[0]) == (50,)


def test_cancellation(stub, protos):
    pb = protos.pb
    fut = stub.ModelInfer.future(slow_request(pb, 500, req_id="to-cancel"), timeout=T)
    time.sleep(0.1)
    assert fut.cancel(), "the call could not be cancelled (it already finished?)"
    assert fut.cancelled()
    _assert_serving(stub, pb)  # while the cancelled request still sleeps on the pool
    assert stub.ServerLive(pb.ServerLiveRequest(), timeout=T).live
    time.sleep(0.5)  # the cancelled request completes; its answer must be dropped
    _assert_serving(stub, pb)


def test_cancel_stream_with_requests_in_flight(stub, protos):
    pb = protos.pb
    reqs = [slow_request(pb, 300, req_id="s%d" % i) for i in range(3)]
    call = stub.ModelStreamInfer(iter(reqs), timeout=T)
    time.sleep(0.1)
    call.cancel()
    with pytest.raises(grpc.RpcError) as ei:
        list(call)
    assert ei.value.code() == grpc.StatusCode.CANCELLED
    _assert_serving(stub, pb)
    time.sleep(0.4)
    _assert_serving(stub, pb)


def test_many_concurrent_calls_one_channel(stub, protos):
    pb = protos.pb
    futs = []
    for i in range(50):
        req, fa, fb = simple_request(pb, rows=1 + i % 8, req_id="c%d" % i)
        futs.append((fut := stub.ModelInfer.future(req, timeout=T), fa, fb, req.id))
    slow = [stub.ModelInfer.future(slow_request(pb, 200), timeout=T) for _ in range(3)]
    for fut, fa, fb, rid in futs:
        resp = fut.result()
        assert resp.id == rid
        got = struct.unpack("<%di" % len(fa), outputs_of(resp)["OUTPUT1"][2])
        assert list(got) == [wrap32(x - y) for x, y in zip(fa, fb)], rid
    for f in slow:
        assert f.result().model_name == "slow"
