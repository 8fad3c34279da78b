"""Every datatype through identity_<t> over gRPC, as raw_input_contents and as typed
InferTensorContents (PROTOCOLS.md §0, §2), and large messages (64 MiB server default)."""
import math
import struct
import time

import grpc
import pytest

from grpc_stubs import (ALL_DATATYPES, MiB, add_input, decode_bytes_elems, encode_raw,
                        expect_rpc_error, outputs_of, short)
from grpc_stubs import _grpc_channels, channel, protos, stub  # noqa: F401 (fixtures)

T = 5.0
SHAPE = [2, 3]

VALUES = {
    "BOOL": [True, False, True, True, False, False],
    "UINT8": [0, 1, 127, 128, 254, 255],
    "UINT16": [0, 1, 255, 256, 65534, 65535],
    "UINT32": [0, 1, 2 ** 31 - 1, 2 ** 31, 2 ** 32 - 2, 2 ** 32 - 1],
    "UINT64": [0, 1, 2 ** 32, 2 ** 63 - 1, 2 ** 63, 2 ** 64 - 1],
    "INT8": [-128, -1, 0, 1, 126, 127],
    "INT16": [-32768, -1, 0, 1, 255, 32767],
    "INT32": [-2 ** 31, -1, 0, 1, 65536, 2 ** 31 - 1],
    "INT64": [-2 ** 63, -1, 0, 1, 2 ** 32, 2 ** 63 - 1],
    "FP16": [0.0, -0.0, 1.5, 65504.0, -math.inf, 2.0 ** -24],   # max, smallest subnormal
    "BF16": [0x0000, 0x8000, 0x3F80, 0x7F80, 0x7FC0, 0x0001],    # bit patterns (raw only)
    "FP32": [0.0, -0.0, 0.1, 3.4028234663852886e38, math.inf, math.nan],
    "FP64": [0.0, -0.0, 0.1, 1.7976931348623157e308, -math.inf, 5e-324],
    "BYTES": [b"", b"a", b"\x00\xff\xfe", "ü✓".encode(), b"x" * 1000, b"\n\"\\"],
}


def _identity_request(pb, dt, raw=True, field=None, values=None, shape=SHAPE):
    values = VALUES[dt] if values is None else values
    req = pb.ModelInferRequest(model_name="identity_" + dt.lower())
    if raw:
        add_input(req, "INPUT0", dt, shape, raw=encode_raw(dt, values))
    else:
        add_input(req, "INPUT0", dt, shape, typed=values, field=field)
    return req


def _check_identity(resp, dt, values, shape=SHAPE):
    dt_out, shape_out, raw = outputs_of(resp)["OUTPUT0"]
    assert (dt_out, shape_out) == (dt, shape), short(resp)
    if dt == "BYTES":
        assert decode_bytes_elems(raw) == values, short(resp)
    else:
        # exact bit patterns (NaN, -0.0, subnormals) — identity is a copy
        assert raw == encode_raw(dt, values), "%s: got %r want %r" % (dt, raw,
                                                                     encode_raw(dt, values))


@pytest.mark.parametrize("dt", ALL_DATATYPES)
def test_identity_raw(stub, protos, dt):
    resp = stub.ModelInfer(_identity_request(protos.pb, dt, raw=True), timeout=T)
    assert resp.model_name == "identity_" + dt.lower(), short(resp)
    assert len(resp.outputs) == 1 and resp.outputs[0].name == "OUTPUT0", short(resp)
    # raw_output_contents, not typed contents
    assert not resp.outputs[0].HasField("contents"), short(resp)
    _check_identity(resp, dt, VALUES[dt])


@pytest.mark.parametrize("dt", [d for d in ALL_DATATYPES if d not in ("FP16", "BF16")])
def test_identity_typed(stub, protos, dt):
    resp = stub.ModelInfer(_identity_request(protos.pb, dt, raw=False), timeout=T)
    vals = VALUES[dt]
    if dt == "FP32":  # the wire holds float32: the values as rounded to FP32
        vals = [struct.unpack("<f", struct.pack("<f", v))[0] for v in vals]
    _check_identity(resp, dt, vals)


@pytest.mark.parametrize("dt", ["FP16", "BF16"])
@pytest.mark.parametrize("field", ["fp32_contents", "uint_contents"])
def test_half_types_have_no_typed_field(stub, protos, dt, field):
    vals = [1.0] * 6 if field == "fp32_contents" else [1] * 6
    req = _identity_request(protos.pb, dt, raw=False, field=field, values=vals)
    expect_rpc_error(stub.ModelInfer, grpc.StatusCode.INVALID_ARGUMENT, "INPUT0",
                     request=req, timeout=T)


@pytest.mark.parametrize("dt,field", [("INT32", "fp32_contents"), ("INT8", "int64_contents"),
                                      ("FP32", "fp64_contents"), ("UINT64", "uint_contents"),
                                      ("BYTES", "int_contents"), ("BOOL", "int_contents")])
def test_typed_field_must_match_datatype(stub, protos, dt, field):
    req = _identity_request(protos.pb, dt, raw=False, field=field,
                            values=[1.0] * 6 if "fp" in field else [1] * 6)
    expect_rpc_error(stub.ModelInfer, grpc.StatusCode.INVALID_ARGUMENT, "INPUT0",
                     request=req, timeout=T)


@pytest.mark.parametrize("dt,vals", [("UINT8", [256, 0]), ("UINT16", [65536, 0]),
                                     ("INT8", [-129, 0]), ("INT8", [128, 0]),
                                     ("INT16", [32768, 0]), ("INT16", [-32769, 0])])
def test_typed_out_of_range(stub, protos, dt, vals):
    """int_contents/uint_contents are 32-bit: a value that does not fit the narrower datatype
    is refused (as an out-of-range JSON number is), never truncated."""
    req = _identity_request(protos.pb, dt, raw=False, values=vals, shape=[1, 2])
    expect_rpc_error(stub.ModelInfer, grpc.StatusCode.INVALID_ARGUMENT, "INPUT0",
                     request=req, timeout=T)


@pytest.mark.parametrize("dt", ["INT32", "FP64", "BYTES", "BOOL"])
def test_typed_count_mismatch(stub, protos, dt):
    req = _identity_request(protos.pb, dt, raw=False, values=VALUES[dt][:5])
    expect_rpc_error(stub.ModelInfer, grpc.StatusCode.INVALID_ARGUMENT, "INPUT0",
                     request=req, timeout=T)


@pytest.mark.parametrize("dt", ["INT32", "FP16", "UINT64"])
def test_raw_size_mismatch(stub, protos, dt):
    req = _identity_request(protos.pb, dt, raw=True)
    req.raw_input_contents[0] = req.raw_input_contents[0][:-1]
    expect_rpc_error(stub.ModelInfer, grpc.StatusCode.INVALID_ARGUMENT, "INPUT0",
                     request=req, timeout=T)


@pytest.mark.parametrize("raw", [b"\x05\x00\x00\x00ab",            # length past the end
                                 b"\x01\x00\x00",                  # truncated length prefix
                                 encode_raw("BYTES", [b"a"] * 7)])  # 7 elements for shape [2,3]
def test_raw_bytes_malformed(stub, protos, raw):
    req = protos.pb.ModelInferRequest(model_name="identity_bytes")
    add_input(req, "INPUT0", "BYTES", SHAPE, raw=raw)
    expect_rpc_error(stub.ModelInfer, grpc.StatusCode.INVALID_ARGUMENT, "INPUT0",
                     request=req, timeout=T)


def test_empty_tensor(stub, protos):
    req = _identity_request(protos.pb, "INT64", raw=True, values=[], shape=[0, 3])
    _check_identity(stub.ModelInfer(req, timeout=T), "INT64", [], shape=[0, 3])


def test_bytes_large_elements(stub, protos):
    vals = [bytes(range(256)) * 1024, b"", b"\x00" * 70000, b"z", b"q" * 5, b"end"]
    resp = stub.ModelInfer(_identity_request(protos.pb, "BYTES", raw=True, values=vals),
                           timeout=T)
    _check_identity(resp, "BYTES", vals)
    resp = stub.ModelInfer(_identity_request(protos.pb, "BYTES", raw=False, values=vals),
                           timeout=T)
    _check_identity(resp, "BYTES", vals)


# ------------------------------------------------------------------------------------------
# Large messages
# ------------------------------------------------------------------------------------------
def test_large_typed_int64_contents_are_decoded_whole(stub, protos):
    """1 MiB+ of int64 varints (a message past the offload threshold: decoded on the server's
    worker pool, not its loop) comes back exact; the same size with a shape that disagrees is
    refused as such."""
    n = 200_000
    vals = [(i * 2654435761) % (2 ** 63) - 2 ** 62 for i in range(n)]
    req = protos.pb.ModelInferRequest(model_name="identity_int64", id="typed-big")
    add_input(req, "INPUT0", "INT64", [2, n // 2], typed=vals)
    assert req.ByteSize() > 1 << 20
    resp = stub.ModelInfer(req, timeout=30)
    assert resp.id == "typed-big"
    dt, shape, raw = outputs_of(resp)["OUTPUT0"]
    assert (dt, shape) == ("INT64", [2, n // 2])
    assert raw == struct.pack("<%dq" % n, *vals)
    bad = protos.pb.ModelInferRequest(model_name="identity_int64")
    add_input(bad, "INPUT0", "INT64", [2, n // 2 + 1], typed=vals)
    expect_rpc_error(stub.ModelInfer, grpc.StatusCode.INVALID_ARGUMENT, "INPUT0",
                     request=bad, timeout=30)


def test_large_48mib_fp32_round_trip(stub, protos):
    n = 48 * MiB // 4
    pattern = bytes(range(256))  # every byte value; includes NaN/denormal patterns
    data = pattern * (48 * MiB // len(pattern))
    req = protos.pb.ModelInferRequest(model_name="identity_fp32", id="big")
    add_input(req, "INPUT0", "FP32", [4, n // 4], raw=data)
    t0 = time.monotonic()
    resp = stub.ModelInfer(req, timeout=30)
    elapsed = time.monotonic() - t0
    assert resp.id == "big"
    dt, shape, raw = outputs_of(resp)["OUTPUT0"]
    assert (dt, shape) == ("FP32", [4, n // 4])
    assert len(raw) == len(data), "%d bytes back for %d" % (len(raw), len(data))
    assert raw == data, "48 MiB payload corrupted (first difference at %d)" % next(
        i for i in range(len(data)) if raw[i] != data[i])
    assert elapsed < 10, "48 MiB round trip took %.1f s" % elapsed


def test_message_over_server_limit_is_resource_exhausted(stub, protos):
    """80 MiB > the server's 64 MiB default (the client's own limits are 200 MiB, so the
    refusal must come from the server)."""
    data = b"\x00" * (80 * MiB)
    req = protos.pb.ModelInferRequest(model_name="identity_uint8")
    add_input(req, "INPUT0", "UINT8", [1, len(data)], raw=data)
    t0 = time.monotonic()
    e = expect_rpc_error(stub.ModelInfer, grpc.StatusCode.RESOURCE_EXHAUSTED,
                         request=req, timeout=30)
    assert "Sent message larger than max" not in (e.details() or ""), e.details()
    assert time.monotonic() - t0 < 10
    # the server is fine and the same channel keeps working
    r = stub.ServerLive(protos.pb.ServerLiveRequest(), timeout=T)
    assert r.live is True
    resp = stub.ModelInfer(_identity_request(protos.pb, "INT16", raw=True), timeout=T)
    _check_identity(resp, "INT16", VALUES["INT16"])


def test_response_over_client_receive_limit(demo, stub, protos):
    """A grpcio client with the default 4 MiB receive limit gets an 8 MiB answer: the client
    refuses it (RESOURCE_EXHAUSTED) and resets the stream while the server is still sending;
    the server must be fine (it sends tensors by reference)."""
    ch = grpc.insecure_channel("%s:%d" % (demo.host, demo.port),
                               options=[("grpc.max_receive_message_length", 4 * MiB),
                                        ("grpc.use_local_subchannel_pool", 1)])
    try:
        small = protos.pb_grpc.GRPCInferenceServiceStub(ch)
        data = bytes(range(256)) * (8 * MiB // 256)
        req = protos.pb.ModelInferRequest(model_name="identity_uint8")
        add_input(req, "INPUT0", "UINT8", [1, len(data)], raw=data)
        for _ in range(3):
            expect_rpc_error(small.ModelInfer, grpc.StatusCode.RESOURCE_EXHAUSTED,
                             request=req, timeout=T)
        assert small.ServerLive(protos.pb.ServerLiveRequest(), timeout=T).live
    finally:
        ch.close()
    resp = stub.ModelInfer(_identity_request(protos.pb, "INT64", raw=True), timeout=T)
    _check_identity(resp, "INT64", VALUES["INT64"])
