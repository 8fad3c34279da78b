"""Helpers for the gRPC / HTTP/2 integration tests (test_grpc_*.py, test_h2c.py).

- Python stubs are generated AT TEST TIME from the project's own proto/grpc_predict_v2.proto and
  proto/health.proto with protoc + Debian's grpc_python_plugin, into a temporary directory that
  is put on sys.path (once per session, whichever module asks first).
- Fixtures (imported by the test modules: `from grpc_stubs import protos, channel, stub, health`):
  `protos` (session: the generated modules), `channel` (a grpcio channel to the shared demo with
  200 MiB message limits), `stub` (GRPCInferenceService), `health` (grpc.health.v1.Health).
- Tensor codecs (little-endian, row-major; BYTES = u32 LE length + bytes per element), request
  builders, `expect_rpc_error`, and `curl_h2` (a gRPC/REST request over h2c with curl, returning
  the status, the headers AND trailers, the body and the elapsed time).

Nothing here links the library: everything goes over TCP to a real inferserve-demo.
"""
import atexit
import importlib
import math
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
import types

import grpc
import pytest

from isvtest import REPO_ROOT, TIMEOUT

PROTO_DIR = os.path.join(REPO_ROOT, "proto")
GRPC_PLUGIN = os.environ.get("GRPC_PYTHON_PLUGIN", "/usr/bin/grpc_python_plugin")
MiB = 1 << 20
CLIENT_MAX_MESSAGE = 200 * MiB
SERVICE = "/inference.GRPCInferenceService/"

# ------------------------------------------------------------------------------------------
# Stub generation
# ------------------------------------------------------------------------------------------
_STUBS = None


def load_stubs():
    """Generate (once per process) and import the stubs. Returns a namespace with pb, pb_grpc,
    health_pb, health_grpc and the output directory."""
    global _STUBS
    if _STUBS is not None:
        return _STUBS
    protoc = shutil.which("protoc")
    if protoc is None:
        raise RuntimeError("protoc not found (Debian: apt-get install protobuf-compiler)")
    if not os.path.exists(GRPC_PLUGIN):
        raise RuntimeError("%s not found (Debian: apt-get install protobuf-compiler-grpc)"
                           % GRPC_PLUGIN)
    out = tempfile.mkdtemp(prefix="isv-grpc-stubs-")
    atexit.register(shutil.rmtree, out, True)
    cmd = [protoc, "--python_out=" + out, "--grpc_python_out=" + out,
           "--plugin=protoc-gen-grpc_python=" + GRPC_PLUGIN, "-I", PROTO_DIR,
           os.path.join(PROTO_DIR, "grpc_predict_v2.proto"),
           os.path.join(PROTO_DIR, "health.proto"), os.path.join(PROTO_DIR, "grps.proto"),
           os.path.join(PROTO_DIR, "tensorflow_core.proto"),
           os.path.join(PROTO_DIR, "tensorflow_error.proto"),
           os.path.join(PROTO_DIR, "tensorflow_serving.proto")]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    if res.returncode != 0:
        raise RuntimeError("protoc failed (%d): %s\n%s" % (res.returncode, " ".join(cmd),
                                                          res.stderr))
    # The *_pb2_grpc modules do `import grpc_predict_v2_pb2 as ...` (top-level imports), so the
    # directory itself goes on sys.path.
    sys.path.insert(0, out)
    importlib.invalidate_caches()
    ns = types.SimpleNamespace(
        dir=out,
        pb=importlib.import_module("grpc_predict_v2_pb2"),
        pb_grpc=importlib.import_module("grpc_predict_v2_pb2_grpc"),
        health_pb=importlib.import_module("health_pb2"),
        health_grpc=importlib.import_module("health_pb2_grpc"),
        grps_pb=importlib.import_module("grps_pb2"),
        grps_grpc=importlib.import_module("grps_pb2_grpc"),
        tf_pb=importlib.import_module("tensorflow_core_pb2"),
        tfs_pb=importlib.import_module("tensorflow_serving_pb2"),
        tfs_grpc=importlib.import_module("tensorflow_serving_pb2_grpc"),
    )
    _STUBS = ns
    return ns


def make_channel(demo, max_message=CLIENT_MAX_MESSAGE, options=()):
    opts = [("grpc.max_send_message_length", max_message),
            ("grpc.max_receive_message_length", max_message),
            # one fresh TCP connection per channel (no sharing between tests' channels)
            ("grpc.use_local_subchannel_pool", 1)]
    opts.extend(options)
    return grpc.insecure_channel("%s:%d" % (demo.host, demo.port), options=opts)


@pytest.fixture(scope="session")
def protos():
    return load_stubs()


@pytest.fixture(scope="session")
def _grpc_channels():
    """One channel per demo process (closing a grpcio channel costs ~0.2 s, so they are shared
    by the tests and closed at the end of the session, before the demo is stopped)."""
    chans = {}
    yield chans
    for ch in chans.values():
        ch.close()


@pytest.fixture
def channel(demo, _grpc_channels):
    """A channel to the shared demo (a fresh one if the demo was restarted after a crash)."""
    key = (demo.host, demo.port, demo.proc.pid)
    ch = _grpc_channels.get(key)
    if ch is None:
        ch = make_channel(demo)
        try:
            grpc.channel_ready_future(ch).result(timeout=TIMEOUT)
        except grpc.FutureTimeoutError:
            ch.close()
            raise AssertionError("could not connect a gRPC channel to %s:%d\n%s"
                                 % (demo.host, demo.port, demo.stderr_tail()))
        _grpc_channels[key] = ch
    return ch


@pytest.fixture
def stub(protos, channel):
    return protos.pb_grpc.GRPCInferenceServiceStub(channel)


@pytest.fixture
def health(protos, channel):
    return protos.health_grpc.HealthStub(channel)


def raw_method(ch, path):
    """A unary method with bytes in / bytes out (no stubs): for unknown methods and malformed
    messages."""
    return ch.unary_unary(path, request_serializer=lambda b: b,
                          response_deserializer=lambda b: b)


# ------------------------------------------------------------------------------------------
# Tensor codecs
# ------------------------------------------------------------------------------------------
# datatype -> struct code (BF16 is handled as its raw 16-bit pattern, BYTES separately)
STRUCT = {"BOOL": "?", "UINT8": "B", "UINT16": "H", "UINT32": "I", "UINT64": "Q",
          "INT8": "b", "INT16": "h", "INT32": "i", "INT64": "q", "FP16": "e", "BF16": "H",
          "FP32": "f", "FP64": "d"}
ELEM_SIZE = {"BOOL": 1, "UINT8": 1, "UINT16": 2, "UINT32": 4, "UINT64": 8, "INT8": 1,
             "INT16": 2, "INT32": 4, "INT64": 8, "FP16": 2, "BF16": 2, "FP32": 4, "FP64": 8}
# datatype -> InferTensorContents field (FP16/BF16 have none)
TYPED_FIELD = {"BOOL": "bool_contents", "UINT8": "uint_contents", "UINT16": "uint_contents",
               "UINT32": "uint_contents", "UINT64": "uint64_contents", "INT8": "int_contents",
               "INT16": "int_contents", "INT32": "int_contents", "INT64": "int64_contents",
               "FP32": "fp32_contents", "FP64": "fp64_contents", "BYTES": "bytes_contents"}
ALL_DATATYPES = ["BOOL", "UINT8", "UINT16", "UINT32", "UINT64", "INT8", "INT16", "INT32",
                 "INT64", "FP16", "BF16", "FP32", "FP64", "BYTES"]


def encode_bytes_elems(elems):
    return b"".join(struct.pack("<I", len(e)) + e for e in elems)


def decode_bytes_elems(raw):
    out, i = [], 0
    while i < len(raw):
        assert i + 4 <= len(raw), "truncated BYTES length prefix at offset %d in %r" % (i, raw)
        (n,) = struct.unpack_from("<I", raw, i)
        i += 4
        assert i + n <= len(raw), "BYTES element of %d bytes overruns at %d in %r" % (n, i, raw)
        out.append(raw[i:i + n])
        i += n
    return out


def encode_raw(dt, values):
    """values: Python numbers (BF16: 16-bit patterns; BYTES: bytes) -> LE raw bytes."""
    if dt == "BYTES":
        return encode_bytes_elems(values)
    return struct.pack("<%d%s" % (len(values), STRUCT[dt]), *values)


def decode_raw(dt, raw):
    if dt == "BYTES":
        return decode_bytes_elems(raw)
    size = ELEM_SIZE[dt]
    assert len(raw) % size == 0, "%s raw content of %d bytes" % (dt, len(raw))
    return list(struct.unpack("<%d%s" % (len(raw) // size, STRUCT[dt]), raw))


def f32_bits(x):
    return struct.pack("<f", x)


# ------------------------------------------------------------------------------------------
# Requests and responses
# ------------------------------------------------------------------------------------------
def add_input(req, name, datatype, shape, raw=None, typed=None, field=None):
    """Append an input; raw -> raw_input_contents (in input order), typed -> contents.<field>."""
    t = req.inputs.add()
    t.name = name
    t.datatype = datatype
    t.shape.extend(shape)
    if typed is not None:
        getattr(t.contents, field or TYPED_FIELD[datatype]).extend(typed)
    if raw is not None:
        req.raw_input_contents.append(raw)
    return t


def simple_rows(rows):
    a = [[r * 100 + i for i in range(16)] for r in range(rows)]
    b = [[(i * 7 - 50) for i in range(16)] for _ in range(rows)]
    return a, b


def simple_request(pb, rows=1, req_id=None, typed=False, outputs=None, model="simple"):
    a, b = simple_rows(rows)
    req = pb.ModelInferRequest(model_name=model)
    if req_id is not None:
        req.id = req_id
    fa, fb = sum(a, []), sum(b, [])
    if typed:
        add_input(req, "INPUT0", "INT32", [rows, 16], typed=fa)
        add_input(req, "INPUT1", "INT32", [rows, 16], typed=fb)
    else:
        add_input(req, "INPUT0", "INT32", [rows, 16], raw=encode_raw("INT32", fa))
        add_input(req, "INPUT1", "INT32", [rows, 16], raw=encode_raw("INT32", fb))
    for o in outputs or ():
        req.outputs.add().name = o
    return req, fa, fb


def wrap32(x):
    return (x + 2 ** 31) % 2 ** 32 - 2 ** 31


def slow_request(pb, ms, req_id=None):
    req = pb.ModelInferRequest(model_name="slow")
    if req_id is not None:
        req.id = req_id
    add_input(req, "INPUT0", "INT32", [1], raw=encode_raw("INT32", [ms]))
    return req


def outputs_of(resp):
    """{name: (datatype, shape, raw bytes)} from raw_output_contents (one per output, in order)."""
    assert len(resp.raw_output_contents) == len(resp.outputs), \
        "%d raw_output_contents for %d outputs:\n%s" % (len(resp.raw_output_contents),
                                                        len(resp.outputs), short(resp))
    res = {}
    for o, raw in zip(resp.outputs, resp.raw_output_contents):
        assert o.name not in res, "output %s twice:\n%s" % (o.name, short(resp))
        res[o.name] = (o.datatype, list(o.shape), raw)
    return res


def short(msg, limit=1500):
    """A protobuf message as text, raw contents abbreviated."""
    text = str(msg)
    return text if len(text) <= limit else text[:limit] + "... (%d chars)" % len(text)


def expect_rpc_error(fn, code, *needles, **kw):
    """Call fn(**kw); it must fail with `code` and details containing every needle. Returns the
    RpcError."""
    try:
        resp = fn(**kw)
    except grpc.RpcError as e:
        assert e.code() == code, "expected %s, got %s: %r" % (code, e.code(), e.details())
        details = e.details() or ""
        for n in needles:
            assert n in details, "details %r do not mention %r (%s)" % (details, n, code)
        return e
    raise AssertionError("expected %s, got a response:\n%s" % (code, short(resp)))


# ------------------------------------------------------------------------------------------
# h2c with curl / raw sockets
# ------------------------------------------------------------------------------------------
class H2Result:
    def __init__(self, status, headers, body, elapsed, http_version, cmd):
        self.status = status
        self.headers = headers  # list of (lower name, value): response headers, then trailers
        self.body = body
        self.elapsed = elapsed
        self.http_version = http_version
        self.cmd = cmd

    def header(self, name):
        for k, v in self.headers:
            if k == name:
                return v
        return None

    def __repr__(self):
        return "<h2 %s status=%s headers=%r body=%r %.3fs\n  cmd: %s>" % (
            self.http_version, self.status, self.headers, self.body[:500], self.elapsed,
            " ".join(self.cmd))


def grpc_frame(msg, flag=0):
    return bytes([flag]) + struct.pack(">I", len(msg)) + msg


def curl_h2(demo, path, data=None, headers=(), method=None, timeout=10.0):
    """One request over HTTP/2 prior knowledge with curl. data: bytes (POSTed as is)."""
    curl = shutil.which("curl")
    if curl is None:
        pytest.fail("curl is not installed", pytrace=False)
    with tempfile.TemporaryDirectory() as td:
        hdr_file = os.path.join(td, "headers")
        body_file = os.path.join(td, "body")
        cmd = [curl, "-s", "-S", "--http2-prior-knowledge", "-D", hdr_file, "-o", body_file,
               "-w", "%{http_version}", "--max-time", str(timeout)]
        for h in headers:
            cmd += ["-H", h]
        if data is not None:
            data_file = os.path.join(td, "data")
            with open(data_file, "wb") as f:
                f.write(data)
            cmd += ["--data-binary", "@" + data_file]
        if method:
            cmd += ["-X", method]
        cmd.append(demo.url(path))
        t0 = time.monotonic()
        res = subprocess.run(cmd, capture_output=True, timeout=timeout + 5)
        elapsed = time.monotonic() - t0
        assert res.returncode == 0, "curl failed (%d): %s\n%s" % (
            res.returncode, " ".join(cmd), res.stderr.decode("utf-8", "replace"))
        with open(hdr_file, "rb") as f:
            head = f.read().decode("latin-1")
        with open(body_file, "rb") as f:
            body = f.read()
    status, headers_out = None, []
    for line in head.split("\r\n"):
        if not line:
            continue
        if line.startswith("HTTP/"):
            status = int(line.split()[1])
            continue
        k, _, v = line.partition(":")
        headers_out.append((k.strip().lower(), v.strip()))
    return H2Result(status, headers_out, body, elapsed, res.stdout.decode().strip(), cmd)


_NGHTTP_HDR = re.compile(r"recv \(stream_id=(\d+)\) (:?[^:]+): (.*)$")
_NGHTTP_FRAME = re.compile(r"(send|recv) (\w+) frame <length=(\d+), flags=0x([0-9a-f]+), "
                           r"stream_id=(\d+)>")


def nghttp_h2(demo, path, data=None, headers=(), timeout=5.0):
    """One request with nghttp (nghttp2-client), for responses that arrive before the request
    body was sent (a gRPC call refused from its headers alone): curl 7.88 can hang in that race,
    nghttp does not. Returns an H2Result (body empty: only the headers, trailers and the frames
    are kept, in .frames as (direction, type, length, flags, stream))."""
    nghttp = shutil.which("nghttp")
    if nghttp is None:
        pytest.fail("nghttp (Debian: nghttp2-client) is not installed", pytrace=False)
    with tempfile.TemporaryDirectory() as td:
        cmd = [nghttp, "-v", "-n", "-t", str(int(math.ceil(timeout)))]
        for h in headers:
            cmd += ["-H", h]
        if data is not None:
            data_file = os.path.join(td, "data")
            with open(data_file, "wb") as f:
                f.write(data)
            cmd += ["-d", data_file]
        cmd.append(demo.url(path))
        t0 = time.monotonic()
        res = subprocess.run(cmd, capture_output=True, timeout=timeout + 5)
        elapsed = time.monotonic() - t0
    out = res.stdout.decode("utf-8", "replace")
    status, hdrs, frames = None, [], []
    for line in out.splitlines():
        line = line.strip()
        m = _NGHTTP_HDR.search(line)
        if m:
            k, v = m.group(2).strip().lower(), m.group(3).strip()
            if k == ":status":
                status = int(v)
            else:
                hdrs.append((k, v))
            continue
        m = _NGHTTP_FRAME.search(line)
        if m:
            frames.append((m.group(1), m.group(2), int(m.group(3)), int(m.group(4), 16),
                           int(m.group(5))))
    assert res.returncode == 0 and status is not None, "nghttp failed (%d): %s\n%s\n%s" % (
        res.returncode, " ".join(cmd), out[-3000:], res.stderr.decode("utf-8", "replace"))
    r = H2Result(status, hdrs, b"", elapsed, "2", cmd)
    r.frames = frames
    return r


H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
FRAME_NAMES = {0: "DATA", 1: "HEADERS", 2: "PRIORITY", 3: "RST_STREAM", 4: "SETTINGS",
               5: "PUSH_PROMISE", 6: "PING", 7: "GOAWAY", 8: "WINDOW_UPDATE", 9: "CONTINUATION"}


def h2_frame(ftype, flags, stream_id, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([ftype, flags]) + \
        struct.pack(">I", stream_id & 0x7FFFFFFF) + payload


def parse_frames(data):
    """[(type, flags, stream, payload)] of the complete frames in data."""
    frames, i = [], 0
    while i + 9 <= len(data):
        n = int.from_bytes(data[i:i + 3], "big")
        if i + 9 + n > len(data):
            break
        ftype, flags = data[i + 3], data[i + 4]
        sid = int.from_bytes(data[i + 5:i + 9], "big") & 0x7FFFFFFF
        frames.append((ftype, flags, sid, data[i + 9:i + 9 + n]))
        i += 9 + n
    return frames


def read_until_closed(sock, timeout):
    """Everything the peer sends until it closes; (data, closed?)."""
    deadline = time.monotonic() + timeout
    data = b""
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return data, False
        sock.settimeout(left)
        try:
            chunk = sock.recv(65536)
        except socket.timeout:
            return data, False
        except ConnectionResetError:
            return data, True
        if not chunk:
            return data, True
        data += chunk

