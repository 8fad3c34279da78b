"""gRPC answer compression (isv_options_set_grpc_compression, the demo's --grpc-compression N):
off by default whatever the client accepts; when on, answers of at least N bytes are coded with
what grpc-accept-encoding lists (gzip first), the response names it in grpc-encoding and the
message's flag is 1 — small answers keep flag 0. A large unary answer is compressed on the
worker threads. Checked on the wire with the hand-driven HTTP/2 client (h2raw.py), and with
grpcio, which decompresses what it is sent."""
import gzip
import signal
import zlib

import grpc
import pytest

from grpc_stubs import SERVICE, add_input, grpc_frame, make_channel, outputs_of, simple_request
from grpc_stubs import protos  # noqa: F401 (fixture)
from h2raw import H2Conn, grpc_headers
from isvtest import Demo

T = 10.0
MIN = 1024


def _identity(pb, n):
    req = pb.ModelInferRequest(model_name="identity_uint8", id="z")
    add_input(req, "INPUT0", "UINT8", [1, n], raw=bytes(range(256)) * (n // 256))
    return req


def _call(demo, req, accept):
    extra = [("grpc-accept-encoding", accept)] if accept is not None else []
    with H2Conn(demo, timeout=T) as c:
        sid = c.request(grpc_headers(demo, SERVICE + "ModelInfer", extra),
                        body=grpc_frame(req.SerializeToString()), end_stream=True)
        st = c.wait(sid)
    assert st.reset is None and st.grpc("grpc-status") == "0", st
    msgs = st.grpc_messages()
    assert len(msgs) == 1, st
    return st, msgs[0]


def _decode(pb, st, msg):
    flag, body = msg
    if flag == 0:
        return pb.ModelInferResponse.FromString(body), len(body)
    coding = st.header("grpc-encoding")
    raw = gzip.decompress(body) if coding == "gzip" else zlib.decompress(body)
    return pb.ModelInferResponse.FromString(raw), len(body)


@pytest.fixture(scope="module")
def zdemo():
    d = Demo(extra_args=("--grpc-compression", str(MIN)))
    yield d
    d.stop_and_check(signal.SIGTERM, timeout=10.0)


def test_grpc_answers_uncompressed_by_default_whatever_the_client_accepts(demo, protos):
    pb = protos.pb
    st, msg = _call(demo, _identity(pb, 64 << 10), "identity,deflate,gzip")
    assert msg[0] == 0 and st.header("grpc-encoding") is None, st
    resp, _ = _decode(pb, st, msg)
    assert outputs_of(resp)["OUTPUT0"][2] == bytes(range(256)) * 256


@pytest.mark.parametrize("n", [64 << 10, 1 << 20])  # on the loop; on a worker (>= 96 KiB)
@pytest.mark.parametrize("accept,coding", [("identity,deflate,gzip", "gzip"),
                                           ("deflate", "deflate")])
def test_large_grpc_answers_are_compressed_with_what_the_client_accepts(zdemo, protos, n, accept,
                                                                   coding):
    pb = protos.pb
    st, msg = _call(zdemo, _identity(pb, n), accept)
    assert st.header("grpc-encoding") == coding, st
    assert msg[0] == 1, "flag %d: not compressed" % msg[0]
    resp, wire = _decode(pb, st, msg)
    assert outputs_of(resp)["OUTPUT0"][2] == bytes(range(256)) * (n // 256)
    assert wire < n // 10, "%d bytes on the wire for %d of repetitive output" % (wire, n)


def test_small_grpc_answers_and_clients_that_accept_nothing_go_as_they_are(zdemo, protos):
    pb = protos.pb
    st, msg = _call(zdemo, simple_request(pb)[0], "gzip")
    assert msg[0] == 0, st  # under the minimum
    assert outputs_of(pb.ModelInferResponse.FromString(msg[1]))
    st, msg = _call(zdemo, _identity(pb, 64 << 10), None)
    assert msg[0] == 0 and st.header("grpc-encoding") is None, st
    st, msg = _call(zdemo, _identity(pb, 64 << 10), "identity,snappy")
    assert msg[0] == 0 and st.header("grpc-encoding") is None, st


def test_grpcio_gets_compressed_answers_and_decodes_them(zdemo, protos):
    pb, pbg = protos.pb, protos.pb_grpc
    ch = make_channel(zdemo)
    try:
        stub = pbg.GRPCInferenceServiceStub(ch)
        for n in (4096, 64 << 10, 2 << 20):
            r = stub.ModelInfer(_identity(pb, n), timeout=T)
            assert outputs_of(r)["OUTPUT0"][2] == bytes(range(256)) * (n // 256), n
        # the client compressing its own request too: both ways at once
        r = stub.ModelInfer(_identity(pb, 1 << 20), timeout=T, compression=grpc.Compression.Gzip)
        assert outputs_of(r)["OUTPUT0"][2] == bytes(range(256)) * 4096
    finally:
        ch.close()
