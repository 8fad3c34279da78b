"""Protobuf wire compatibility of the server's hand-written decoder (lib/protocol/v2_pb.c):
encodings that every protobuf parser must accept but Python's serializer never produces —
unpacked repeated scalars, unknown fields of every wire type, any field order, repeated
singular fields (last one wins), a message field given twice (merged)."""
import struct

import grpc
import pytest

from grpc_stubs import SERVICE, decode_raw, encode_raw, expect_rpc_error, outputs_of, raw_method, \
    wrap32
from grpc_stubs import _grpc_channels, channel, protos, stub  # noqa: F401 (fixtures)

T = 5.0


# ---- a tiny protobuf encoder ------------------------------------------------------------------
def varint(n):
    if n < 0:
        n += 1 << 64
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def key(field, wt):
    return varint(field << 3 | wt)


def ld(field, data):
    if isinstance(data, str):
        data = data.encode()
    return key(field, 2) + varint(len(data)) + data


def vi(field, n):
    return key(field, 0) + varint(n)


def f32(field, x):
    return key(field, 5) + struct.pack("<f", x)


def f64(field, x):
    return key(field, 1) + struct.pack("<d", x)


def packed_varints(field, values):
    return ld(field, b"".join(varint(v) for v in values))


UNKNOWN = (vi(99, 12345) + f64(98, 1.5) + ld(97, b"unknown bytes") + f32(96, 2.5)
           + ld(95, vi(1, 1) + ld(2, "nested unknown")))


def tensor(name, datatype, shape, contents=b"", packed=True, extra=b""):
    t = ld(1, name) + ld(2, datatype)
    t += packed_varints(3, shape) if packed else b"".join(vi(3, d) for d in shape)
    if contents:
        t += ld(5, contents)
    return t + extra


A = list(range(16))
B = [(i * 7 - 50) for i in range(16)]


def _call(channel, protos, msg):
    fn = raw_method(channel, SERVICE + "ModelInfer")
    return protos.pb.ModelInferResponse.FromString(fn(msg, timeout=T))


def _check(resp, a=A, b=B):
    outs = outputs_of(resp)
    assert outs["OUTPUT0"][:2] == ("INT32", [1, 16]), resp
    assert decode_raw("INT32", outs["OUTPUT0"][2]) == [wrap32(x + y) for x, y in zip(a, b)]
    assert decode_raw("INT32", outs["OUTPUT1"][2]) == [wrap32(x - y) for x, y in zip(a, b)]


# ---- tests ------------------------------------------------------------------------------------
def test_reference_encoding(channel, protos):
    """The hand encoder agrees with the generated stubs (a sanity check of this file)."""
    msg = (ld(1, "simple") + ld(5, tensor("INPUT0", "INT32", [1, 16]))
           + ld(5, tensor("INPUT1", "INT32", [1, 16]))
           + ld(7, encode_raw("INT32", A)) + ld(7, encode_raw("INT32", B)))
    req = protos.pb.ModelInferRequest.FromString(msg)
    assert req.model_name == "simple" and list(req.inputs[1].shape) == [1, 16]
    _check(_call(channel, protos, msg))


def test_unpacked_repeated_scalars(channel, protos):
    """shape and int_contents as one key per element (proto2 style; parsers must accept it)."""
    ca = b"".join(vi(2, v) for v in A)
    cb = b"".join(vi(2, v) for v in B)  # negative: 10-byte varints
    msg = (ld(1, "simple") + ld(5, tensor("INPUT0", "INT32", [1, 16], ca, packed=False))
           + ld(5, tensor("INPUT1", "INT32", [1, 16], cb, packed=False)))
    _check(_call(channel, protos, msg))


@pytest.mark.parametrize("dt,field,enc", [
    ("FP32", 6, lambda v: f32(6, v)), ("FP64", 7, lambda v: f64(7, v)),
    ("INT64", 3, lambda v: vi(3, v)), ("UINT64", 5, lambda v: vi(5, v)),
    ("BOOL", 1, lambda v: vi(1, int(v)))])
def test_unpacked_typed_contents_other_types(channel, protos, dt, field, enc):
    vals = {"FP32": [1.5, -2.25, 0.0], "FP64": [1e300, -0.5, 3.0], "INT64": [-2 ** 63, -1, 7],
            "UINT64": [2 ** 64 - 1, 0, 9], "BOOL": [True, False, True]}[dt]
    msg = (ld(1, "identity_" + dt.lower())
           + ld(5, tensor("INPUT0", dt, [1, 3], b"".join(enc(v) for v in vals))))
    resp = _call(channel, protos, msg)
    assert outputs_of(resp)["OUTPUT0"][2] == encode_raw(dt, vals)


def test_unknown_fields_everywhere_are_skipped(channel, protos):
    contents_a = packed_varints(2, A) + UNKNOWN
    param = ld(4, ld(1, "p") + ld(2, vi(2, 5) + UNKNOWN))  # map entry {key, InferParameter}
    msg = (UNKNOWN + ld(1, "simple") + UNKNOWN + param
           + ld(5, tensor("INPUT0", "INT32", [1, 16], contents_a, extra=UNKNOWN))
           + ld(5, tensor("INPUT1", "INT32", [1, 16], packed_varints(2, B), extra=UNKNOWN))
           + ld(6, ld(1, "OUTPUT0") + UNKNOWN) + ld(6, ld(1, "OUTPUT1")) + UNKNOWN)
    _check(_call(channel, protos, msg))


def test_any_field_order(channel, protos):
    msg = (ld(7, encode_raw("INT32", A)) + ld(6, ld(1, "OUTPUT1"))
           + ld(5, packed_varints(3, [1, 16]) + ld(1, "INPUT0") + ld(2, "INT32"))
           + ld(3, "the-id") + ld(7, encode_raw("INT32", B))
           + ld(5, ld(2, "INT32") + packed_varints(3, [1, 16]) + ld(1, "INPUT1"))
           + ld(6, ld(1, "OUTPUT0")) + ld(1, "simple"))
    resp = _call(channel, protos, msg)
    assert resp.id == "the-id"
    _check(resp)


def test_last_singular_field_wins(channel, protos):
    msg = (ld(1, "no_such_model") + ld(3, "first")
           + ld(5, tensor("INPUT0", "INT32", [1, 16])) + ld(5, tensor("INPUT1", "INT32", [1, 16]))
           + ld(7, encode_raw("INT32", A)) + ld(7, encode_raw("INT32", B))
           + ld(1, "simple") + ld(3, "second"))
    resp = _call(channel, protos, msg)
    assert resp.model_name == "simple" and resp.id == "second", resp
    _check(resp)


def test_message_field_given_twice_is_merged(channel, protos):
    """`contents` twice in one input: protobuf merges them (repeated fields concatenate)."""
    t0 = (ld(1, "INPUT0") + ld(2, "INT32") + packed_varints(3, [1, 16])
          + ld(5, packed_varints(2, A[:8])) + ld(5, packed_varints(2, A[8:])))
    msg = (ld(1, "simple") + ld(5, t0)
           + ld(5, tensor("INPUT1", "INT32", [1, 16], packed_varints(2, B))))
    _check(_call(channel, protos, msg))


def test_field_with_wrong_wire_type(channel, protos):
    """model_name (a string) sent as a varint: not a string — never a crash."""
    msg = (vi(1, 7) + ld(5, tensor("INPUT0", "INT32", [1, 16]))
           + ld(5, tensor("INPUT1", "INT32", [1, 16]))
           + ld(7, encode_raw("INT32", A)) + ld(7, encode_raw("INT32", B)))
    expect_rpc_error(raw_method(channel, SERVICE + "ModelInfer"),
                     grpc.StatusCode.INVALID_ARGUMENT, request=msg, timeout=T)


@pytest.mark.parametrize("msg", [
    b"\x0a\x06simple\x18" + b"\xff" * 10 + b"\x01",  # 11-byte varint
    b"\x0a\x06simple\x2a\x80\x80\x80\x80\x10",        # length 2^32 (past the end)
    b"\x0a\x06simple\x3a\xff\xff\xff\xff\x0f",        # raw content length 2^32-1
    b"\x0a",                                          # key without its length
    b"\x00\x01",                                      # field number 0
])
def test_malformed_varints_and_lengths(channel, stub, protos, msg):
    expect_rpc_error(raw_method(channel, SERVICE + "ModelInfer"),
                     grpc.StatusCode.INVALID_ARGUMENT, request=msg, timeout=T)
    assert stub.ServerLive(protos.pb.ServerLiveRequest(), timeout=T).live


def test_health_and_metadata_requests_with_unknown_fields(channel, protos):
    r = raw_method(channel, "/grpc.health.v1.Health/Check")(ld(1, "simple") + UNKNOWN,
                                                             timeout=T)
    assert protos.health_pb.HealthCheckResponse.FromString(r).status == 1
    r = raw_method(channel, SERVICE + "ModelMetadata")(UNKNOWN + ld(1, "simple") + UNKNOWN,
                                                       timeout=T)
    assert protos.pb.ModelMetadataResponse.FromString(r).name == "simple"
    r = raw_method(channel, SERVICE + "ServerLive")(UNKNOWN, timeout=T)
    assert protos.pb.ServerLiveResponse.FromString(r).live is True
