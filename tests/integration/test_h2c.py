"""HTTP/2 cleartext (prior knowledge) on the same port as HTTP/1.1: the REST routes over h2c
(curl), gRPC content-type and compression handling, protocol garbage, both protocols at once,
and an h2load smoke run."""
import json
import re
import shutil
import socket
import subprocess
import threading
import time

import grpc
import pytest

from grpc_stubs import (FRAME_NAMES, H2_PREFACE, SERVICE, curl_h2, decode_raw, grpc_frame,
                        h2_frame, make_channel, nghttp_h2, outputs_of, parse_frames, read_until_closed,
                        simple_request, slow_request)
from grpc_stubs import _grpc_channels, channel, protos, stub  # noqa: F401 (fixtures)
from isvtest import RawConn, http_request, simple_body

T = 5.0
GRPC_HDRS = ["content-type: application/grpc", "te: trailers"]


# ------------------------------------------------------------------------------------------
# REST over h2c
# ------------------------------------------------------------------------------------------
def test_curl_has_http2():
    out = subprocess.run(["curl", "-V"], capture_output=True, text=True).stdout
    assert "HTTP2" in out, "curl without HTTP/2 support:\n" + out


def test_rest_health_over_h2c(demo):
    r = curl_h2(demo, "/v2/health/ready")
    assert r.http_version == "2", r
    assert r.status == 200, r
    assert json.loads(r.body) == {"ready": True}, r
    assert "application/json" in (r.header("content-type") or ""), r
    r = curl_h2(demo, "/v2/health/live")
    assert (r.status, json.loads(r.body)) == (200, {"live": True}), r


def test_rest_model_metadata_over_h2c(demo):
    r = curl_h2(demo, "/v2/models/simple")
    assert r.http_version == "2" and r.status == 200, r
    body = json.loads(r.body)
    assert body["name"] == "simple", r
    assert [(i["name"], i["datatype"], i["shape"]) for i in body["inputs"]] == \
        [("INPUT0", "INT32", [-1, 16]), ("INPUT1", "INT32", [-1, 16])], r


def test_rest_infer_over_h2c(demo):
    body = simple_body(rows=2, req_id="h2-infer")
    r = curl_h2(demo, "/v2/models/simple/infer", data=json.dumps(body).encode(),
                headers=["content-type: application/json"])
    assert r.http_version == "2" and r.status == 200, r
    resp = json.loads(r.body)
    assert resp["id"] == "h2-infer" and resp["model_name"] == "simple", r
    outs = {o["name"]: o for o in resp["outputs"]}
    a = sum(body["inputs"][0]["data"], [])
    b = sum(body["inputs"][1]["data"], [])
    flat = lambda x: sum(x, []) if x and isinstance(x[0], list) else x  # noqa: E731
    assert outs["OUTPUT0"]["shape"] == [2, 16]
    assert flat(outs["OUTPUT0"]["data"]) == [x + y for x, y in zip(a, b)], r
    assert flat(outs["OUTPUT1"]["data"]) == [x - y for x, y in zip(a, b)], r


def test_rest_errors_over_h2c(demo):
    r = curl_h2(demo, "/v2/models/no_such_model")
    assert r.status == 404 and "error" in json.loads(r.body), r
    r = curl_h2(demo, "/v2/models/simple/infer", data=b"{not json",
                headers=["content-type: application/json"])
    assert r.status == 400 and "error" in json.loads(r.body), r
    r = curl_h2(demo, "/v2/models/loading/ready")
    assert r.status == 503 and json.loads(r.body) == {"ready": False}, r


def test_rest_large_body_over_h2c(demo):
    """A JSON body far larger than the h2 flow-control windows (64 KiB initial)."""
    n = 200000
    body = {"inputs": [{"name": "INPUT0", "datatype": "INT32", "shape": [1, n],
                        "data": list(range(n))}]}
    r = curl_h2(demo, "/v2/models/identity_int32/infer", data=json.dumps(body).encode(),
                headers=["content-type: application/json"])
    assert r.status == 200, r
    out = json.loads(r.body)["outputs"][0]
    assert out["shape"] == [1, n]
    data = out["data"]
    data = sum(data, []) if data and isinstance(data[0], list) else data
    assert data == list(range(n))


# ------------------------------------------------------------------------------------------
# gRPC content-type, compression
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("ctype", ["application/grpc+json", "application/grpcx",
                                   "application/grpc-web"])
def test_grpc_content_type_mismatch_415(demo, protos, ctype):
    # refused from the headers alone: nghttp copes with the answer arriving before the body
    msg = protos.pb.ServerLiveRequest().SerializeToString()
    r = nghttp_h2(demo, SERVICE + "ServerLive", data=grpc_frame(msg),
                  headers=["content-type: " + ctype, "te: trailers"])
    assert r.status == 415, r


@pytest.mark.parametrize("ctype", ["application/grpc", "application/grpc+proto"])
def test_grpc_content_types_accepted(demo, protos, ctype):
    msg = protos.pb.ServerLiveRequest().SerializeToString()
    r = curl_h2(demo, SERVICE + "ServerLive", data=grpc_frame(msg),
                headers=["content-type: " + ctype, "te: trailers"])
    assert r.status == 200 and r.header("grpc-status") == "0", r
    assert r.body[:5] == b"\x00" + (len(r.body) - 5).to_bytes(4, "big"), r
    assert protos.pb.ServerLiveResponse.FromString(r.body[5:]).live is True, r


@pytest.mark.parametrize("algo", [grpc.Compression.Gzip, grpc.Compression.Deflate])
def test_grpc_compressed_calls_grpcio(stub, protos, algo):
    # grpcio compresses the request (grpc-encoding + the flag): inflated before decoding
    req, fa, fb = simple_request(protos.pb)
    resp = stub.ModelInfer(req, timeout=T, compression=algo)
    out = outputs_of(resp)
    assert decode_raw("INT32", out["OUTPUT0"][2]) == [a + b for a, b in zip(fa, fb)]
    # and on a stream, several messages each inflated in order
    reqs = [simple_request(protos.pb, req_id="s%d" % i)[0] for i in range(3)]
    got = list(stub.ModelStreamInfer(iter(reqs), timeout=T, compression=algo))
    assert [r.infer_response.id for r in got] == ["s0", "s1", "s2"], got
    assert all(r.error_message == "" for r in got), got


def test_grpc_unknown_encoding_is_unimplemented(demo, protos):
    """grpc-encoding br -> UNIMPLEMENTED, and grpc-accept-encoding lists what works."""
    msg = protos.pb.ServerLiveRequest().SerializeToString()
    r = nghttp_h2(demo, SERVICE + "ServerLive", data=grpc_frame(msg, flag=1),
                  headers=GRPC_HDRS + ["grpc-encoding: br"])
    assert r.status == 200, r
    assert r.header("grpc-status") == "12", r
    assert r.header("grpc-accept-encoding") == "identity,deflate,gzip", r


def test_grpc_compressed_flag_on_undecodable_data(demo, protos):
    """gzip announced, the flag set, but the bytes are not gzip: INTERNAL (gRPC's rule)."""
    msg = protos.pb.ModelMetadataRequest(name="simple").SerializeToString()
    r = curl_h2(demo, SERVICE + "ModelMetadata", data=grpc_frame(msg, flag=1),
                headers=GRPC_HDRS + ["grpc-encoding: gzip"])
    assert r.status == 200, r
    assert r.header("grpc-status") == "13", r
    assert "cannot decompress" in r.header("grpc-message"), r


def test_grpc_compressed_flag_without_encoding(demo, protos):
    """Flag byte 1 on a message of a call that announced no encoding: refused, never decoded."""
    msg = protos.pb.ModelMetadataRequest(name="simple").SerializeToString()
    r = curl_h2(demo, SERVICE + "ModelMetadata", data=grpc_frame(msg, flag=1),
                headers=GRPC_HDRS)
    assert r.status == 200, r
    assert r.header("grpc-status") == "13", r  # INTERNAL, per gRPC's spec
    assert r.body == b"", r


def test_grpc_identity_encoding_accepted(demo, protos):
    msg = protos.pb.ServerLiveRequest().SerializeToString()
    r = curl_h2(demo, SERVICE + "ServerLive", data=grpc_frame(msg),
                headers=GRPC_HDRS + ["grpc-encoding: identity"])
    assert r.header("grpc-status") == "0", r


def test_grpc_message_split_and_truncated(demo, protos):
    """A truncated message (prefix says more than was sent, then END_STREAM) is an error, not a
    hang; trailing bytes after a complete message make a unary call fail too."""
    msg = protos.pb.ModelMetadataRequest(name="simple").SerializeToString()
    r = curl_h2(demo, SERVICE + "ModelMetadata", data=grpc_frame(msg)[:-3], headers=GRPC_HDRS)
    assert r.header("grpc-status") not in (None, "0"), r
    r = curl_h2(demo, SERVICE + "ModelMetadata", data=grpc_frame(msg) + grpc_frame(msg),
                headers=GRPC_HDRS)
    assert r.header("grpc-status") == "3", r  # two messages on a unary call: INVALID_ARGUMENT


@pytest.mark.parametrize("method", ["GET", "PUT"])
def test_grpc_call_must_be_post(demo, method):
    """gRPC over HTTP/2 (PROTOCOL-HTTP2.md): Method -> ":method POST". A GET/PUT carrying a
    valid gRPC message is not a gRPC call; grpc-go answers 405 with grpc-status INTERNAL.
    It must not be served as a successful call."""
    r = curl_h2(demo, SERVICE + "ServerLive", data=grpc_frame(b""), method=method,
                headers=GRPC_HDRS)
    assert r.status != 200 or r.header("grpc-status") not in (None, "0"), \
        "a %s was served as a successful gRPC call: %r" % (method, r)


# ------------------------------------------------------------------------------------------
# Raw-socket HTTP/2 edge cases
# ------------------------------------------------------------------------------------------
def _goaway_and_close(demo, payload, what):
    with socket.create_connection((demo.host, demo.port), timeout=T) as s:
        s.sendall(payload)
        data, closed = read_until_closed(s, 3.0)
    frames = parse_frames(data)
    names = [FRAME_NAMES.get(f[0], f[0]) for f in frames]
    assert closed, "%s: connection still open after 3 s; frames %r" % (what, names)
    return frames, names


def _assert_everyone_served(demo, stub, pb):
    assert stub.ServerLive(pb.ServerLiveRequest(), timeout=T).live
    with RawConn(demo) as c:
        c.send(http_request("GET", "/v2/health/live"))
        assert c.read_response().status == 200
    r = curl_h2(demo, "/v2/health/ready")
    assert r.status == 200, r


@pytest.mark.parametrize("garbage", [
    b"this is not an HTTP/2 frame at all\r\n\r\n" * 4,
    b"\xff" * 64,
    h2_frame(1, 0x4, 1, b"\x82"),  # HEADERS before SETTINGS
])
def test_garbage_after_preface_closes_connection(demo, stub, protos, garbage):
    frames, names = _goaway_and_close(demo, H2_PREFACE + garbage, "garbage %r" % garbage[:20])
    assert "GOAWAY" in names, "no GOAWAY before the close; frames %r" % names
    _assert_everyone_served(demo, stub, protos.pb)


def test_oversized_frame_closes_connection(demo, stub, protos):
    settings = h2_frame(4, 0, 0)
    big = h2_frame(0, 0, 1, b"\x00" * 20000)  # DATA > 16384 (SETTINGS_MAX_FRAME_SIZE default)
    frames, names = _goaway_and_close(demo, H2_PREFACE + settings + big, "oversized frame")
    goaways = [f for f in frames if f[0] == 7]
    assert goaways, names
    code = int.from_bytes(goaways[0][3][4:8], "big")
    assert code in (1, 6), "GOAWAY error code %d (want PROTOCOL_ERROR 1 or FRAME_SIZE_ERROR 6)" \
        % code
    _assert_everyone_served(demo, stub, protos.pb)


def test_truncated_preface_then_close(demo, stub, protos):
    with socket.create_connection((demo.host, demo.port), timeout=T) as s:
        s.sendall(H2_PREFACE[:10])
    with socket.create_connection((demo.host, demo.port), timeout=T) as s:
        s.sendall(H2_PREFACE + h2_frame(4, 0, 0))  # then disconnect without a word
    _assert_everyone_served(demo, stub, protos.pb)


def test_ping_answered(demo):
    with socket.create_connection((demo.host, demo.port), timeout=T) as s:
        s.sendall(H2_PREFACE + h2_frame(4, 0, 0) + h2_frame(6, 0, 0, b"12345678"))
        deadline = time.monotonic() + T
        data = b""
        while time.monotonic() < deadline:
            s.settimeout(max(0.01, deadline - time.monotonic()))
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
            if any(f[0] == 6 and f[1] & 1 for f in parse_frames(data)):
                break
    acks = [f for f in parse_frames(data) if f[0] == 6 and f[1] & 1]
    assert acks and acks[0][3] == b"12345678", parse_frames(data)
    assert parse_frames(data)[0][0] == 4, "the server's first frame must be SETTINGS"


def test_client_disconnect_mid_grpc_call(demo, stub, protos):
    """A slow call in flight on its own connection, then the client closes the channel: the
    server drops the call (its late answer goes nowhere) and keeps serving."""
    ch = make_channel(demo)
    s2 = protos.pb_grpc.GRPCInferenceServiceStub(ch)
    fut = s2.ModelInfer.future(slow_request(protos.pb, 300), timeout=T)
    time.sleep(0.1)
    ch.close()
    assert fut.cancelled() or fut.exception() is not None
    time.sleep(0.35)
    _assert_everyone_served(demo, stub, protos.pb)


# ------------------------------------------------------------------------------------------
# HTTP/1.1 and h2c on the same port at the same time
# ------------------------------------------------------------------------------------------
def test_http1_and_h2c_together(demo, stub, protos):
    pb = protos.pb
    with RawConn(demo) as h1:
        h1.send(http_request("GET", "/v2/health/ready"))
        assert h1.read_response().status == 200
        # a slow gRPC call in flight while HTTP/1.1 keeps working on its keep-alive connection
        slow = stub.ModelInfer.future(slow_request(pb, 500, req_id="slow"), timeout=T)
        for _ in range(5):
            h1.send(http_request("POST", "/v2/models/simple/infer", json.dumps(simple_body())))
            resp = h1.read_response()
            assert resp.status == 200, resp
            req, fa, fb = simple_request(pb)
            out = outputs_of(stub.ModelInfer(req, timeout=T))["OUTPUT0"][2]
            assert len(out) == 64
        assert not slow.done(), "HTTP/1.1 and fast gRPC calls waited for the slow gRPC call"
        # concurrent h2 REST (curl) and HTTP/1.1 pipelined requests
        results = {}
        th = threading.Thread(target=lambda: results.update(c=curl_h2(demo, "/v2/models/simple")))
        th.start()
        h1.send(http_request("GET", "/v2/health/live") * 3)
        for _ in range(3):
            assert h1.read_response().status == 200
        th.join(T)
        assert results["c"].status == 200 and results["c"].http_version == "2", results
        assert slow.result().id == "slow"
        h1.send(http_request("GET", "/v2/health/live"))
        assert h1.read_response().status == 200


def test_http1_upgrade_h2c_ignored(demo):
    """An HTTP/1.1 request carrying `Upgrade: h2c` is answered over HTTP/1.1 (the upgrade is
    optional and ignored) and the connection stays HTTP/1.1 (test_security.py has the rest)."""
    with RawConn(demo) as c:
        c.send(http_request("GET", "/v2/health/live",
                            headers={"Connection": "Upgrade, HTTP2-Settings", "Upgrade": "h2c",
                                     "HTTP2-Settings": "AAMAAABkAAQAoAAAAAIAAAAA"}))
        r = c.read_response()
        assert r.status == 200 and r.json() == {"live": True}, r
        c.send(http_request("GET", "/v2/health/live"))
        r = c.read_response()
        assert r.status == 200 and r.json() == {"live": True}, r


# ------------------------------------------------------------------------------------------
# h2load smoke
# ------------------------------------------------------------------------------------------
def test_h2load_smoke(demo):
    h2load = shutil.which("h2load")
    if h2load is None:
        pytest.fail("h2load (Debian: nghttp2-client) is not installed", pytrace=False)
    cmd = [h2load, "-n", "200", "-c", "4", "-m", "10", demo.url("/v2/health/live")]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    out = res.stdout + res.stderr
    m = re.search(r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, "
                  r"(\d+) failed, (\d+) errored", out)
    assert m, "unexpected h2load output (%d):\n%s" % (res.returncode, out)
    assert int(m.group(4)) == 200, out
    assert int(m.group(5)) == 0 and int(m.group(6)) == 0, out
    assert re.search(r"status codes: (\d+) 2xx", out).group(1) == "200", out


def test_h2load_infer_post(demo, tmp_path):
    body = tmp_path / "body.json"
    body.write_text(json.dumps(simple_body(rows=2)))
    cmd = ["h2load", "-n", "100", "-c", "2", "-m", "8", "-d", str(body),
           "-H", "content-type: application/json", demo.url("/v2/models/simple/infer")]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    out = res.stdout + res.stderr
    m = re.search(r"(\d+) succeeded", out)
    assert m and int(m.group(1)) == 100, out
    assert re.search(r"status codes: (\d+) 2xx", out).group(1) == "100", out
