"""Compressed bodies (Triton's request/response compression: Content-Encoding and
Accept-Encoding, gzip and deflate) and Triton's raw binary request (Inference-Header-Content-
Length: 0), against the demo with python-requests, curl (HTTP/1.1 --compressed, and h2c) and
raw sockets."""
import gzip
import json
import struct
import subprocess
import zlib

import pytest
import requests

from grpc_stubs import curl_h2
from isvtest import (RawConn, assert_error, http_request, ok_json, outputs_by_name, show,
                     simple_body)

TIMEOUT = 10.0
SIMPLE = "/v2/models/simple/infer"


def raw_deflate(data):
    c = zlib.compressobj(wbits=-15)
    return c.compress(data) + c.flush()


CODERS = {
    "gzip": gzip.compress,
    "deflate": zlib.compress,  # RFC 1950, what the RFC calls deflate (tritonclient's too)
}


def check_simple(body):
    # simple_body(): INPUT0 = 0..15, INPUT1 = 1s; simple adds and subtracts
    out = outputs_by_name(body)
    assert out["OUTPUT0"]["data"] == [i + 1 for i in range(16)], body
    assert out["OUTPUT1"]["data"] == [i - 1 for i in range(16)], body


@pytest.mark.parametrize("coding,coder", [("gzip", gzip.compress), ("deflate", zlib.compress),
                                          ("deflate", raw_deflate), ("x-gzip", gzip.compress),
                                          ("GZIP", gzip.compress)])
def test_coded_request_body(demo, coding, coder):
    body = json.dumps(simple_body()).encode()
    r = requests.post(demo.url(SIMPLE), data=coder(body), timeout=TIMEOUT,
                      headers={"Content-Encoding": coding, "Content-Type": "application/json"})
    check_simple(ok_json(r))
    # requests asks for "gzip, deflate" by default, and gets it (decoded for us)
    assert r.headers["Content-Encoding"] == "gzip", show(r)


@pytest.mark.parametrize("coding", ["gzip", "deflate"])
def test_coded_response_body(demo, coding):
    body = json.dumps(simple_body()).encode()
    r = requests.post(demo.url(SIMPLE), data=body, timeout=TIMEOUT,
                      headers={"Accept-Encoding": coding}, stream=True)
    assert r.status_code == 200, show(r)
    assert r.headers["Content-Encoding"] == coding, r.headers
    raw = r.raw.read(decode_content=False)
    plain = gzip.decompress(raw) if coding == "gzip" else zlib.decompress(raw)
    assert int(r.headers["Content-Length"]) == len(raw)
    check_simple(json.loads(plain))


def test_no_coding_unless_accepted(demo):
    body = json.dumps(simple_body()).encode()
    for ae in ["identity", "br", "gzip;q=0, deflate;q=0"]:
        r = requests.post(demo.url(SIMPLE), data=body, timeout=TIMEOUT,
                          headers={"Accept-Encoding": ae})
        assert "Content-Encoding" not in r.headers, (ae, r.headers)
        check_simple(ok_json(r))


def test_coded_binary_response_keeps_the_json_length(demo):
    # both ways coded: a binary request body and binary outputs
    head = json.dumps({"inputs": [
        {"name": "INPUT0", "datatype": "INT32", "shape": [1, 16],
         "parameters": {"binary_data_size": 64}},
        {"name": "INPUT1", "datatype": "INT32", "shape": [1, 16],
         "parameters": {"binary_data_size": 64}}],
        "parameters": {"binary_data_output": True}}).encode()
    a = struct.pack("<16i", *range(16))
    b = struct.pack("<16i", *([1] * 16))
    r = requests.post(demo.url(SIMPLE), data=gzip.compress(head + a + b), timeout=TIMEOUT,
                      stream=True,
                      headers={"Inference-Header-Content-Length": str(len(head)),
                               "Content-Type": "application/octet-stream",
                               "Content-Encoding": "gzip", "Accept-Encoding": "gzip"})
    assert r.status_code == 200, show(r)
    assert r.headers["Content-Encoding"] == "gzip"
    plain = gzip.decompress(r.raw.read(decode_content=False))
    hl = int(r.headers["Inference-Header-Content-Length"])
    meta = json.loads(plain[:hl])
    sizes = [o["parameters"]["binary_data_size"] for o in meta["outputs"]]
    assert sizes == [64, 64] and len(plain) == hl + 128, meta
    assert list(struct.unpack("<16i", plain[hl:hl + 64])) == [i + 1 for i in range(16)]
    assert list(struct.unpack("<16i", plain[hl + 64:])) == [i - 1 for i in range(16)]


def test_curl_compressed(demo):
    # curl --compressed sends Accept-Encoding and decodes what comes back
    body = json.dumps(simple_body())
    res = subprocess.run(["curl", "-sS", "--compressed", "-D", "-", "-H",
                          "Content-Type: application/json", "--data-binary", body,
                          demo.url(SIMPLE)], capture_output=True, timeout=TIMEOUT + 5)
    assert res.returncode == 0, res.stderr
    head, _, payload = res.stdout.partition(b"\r\n\r\n")
    assert b"content-encoding: " in head.lower(), head
    check_simple(json.loads(payload))


def test_coded_request_over_h2c(demo):
    body = gzip.compress(json.dumps(simple_body()).encode())
    res = curl_h2(demo, SIMPLE, data=body, headers=["content-encoding: gzip",
                                                     "content-type: application/json"])
    assert res.status == 200, res
    check_simple(json.loads(res.body))
    bad = curl_h2(demo, SIMPLE, data=b"not gzip", headers=["content-encoding: gzip"])
    assert bad.status == 400 and b"not valid gzip data" in bad.body, bad


def test_corrupt_and_truncated_bodies_are_400(demo):
    good = gzip.compress(json.dumps(simple_body()).encode())
    for data, needle in [(good[:-6], "ends before the end of the compressed stream"),
                         (good + b"junk", "bytes follow the end of the compressed stream"),
                         (b"{\"inputs\": []}", "not valid gzip data")]:
        r = requests.post(demo.url(SIMPLE), data=data, timeout=TIMEOUT,
                          headers={"Content-Encoding": "gzip"})
        assert_error(r, 400, "Content-Encoding gzip", needle)


def test_decoded_size_is_bounded(start_demo):
    # a zip bomb: 64 MiB of zeros in ~64 KB; the server's body limit stops it at 1 MB
    d = start_demo("--max-body-bytes", "1000000")
    bomb = gzip.compress(b"\0" * (64 << 20), compresslevel=9)
    assert len(bomb) < 1000000
    r = requests.post(d.url(SIMPLE), data=bomb, timeout=30, headers={"Content-Encoding": "gzip"})
    assert_error(r, 413, "exceeds the server's limit of 1000000 bytes")
    # the same limit as a plain body: just under it decodes
    ok = json.dumps(simple_body()).encode()
    r = requests.post(d.url(SIMPLE), data=gzip.compress(ok), timeout=TIMEOUT,
                      headers={"Content-Encoding": "gzip"})
    check_simple(ok_json(r))


def test_other_routes_get_plain_bodies_too(demo):
    # decoding happens before routing: TF Serving's predict and a custom route see plain JSON
    r = requests.post(demo.url("/v1/models/half_plus_three:predict"), timeout=TIMEOUT,
                      data=gzip.compress(b'{"instances": [1.0, 2.0]}'),
                      headers={"Content-Encoding": "gzip"})
    assert r.status_code == 200, show(r)
    assert r.json()["predictions"] == [3.5, 4.0], show(r)


@pytest.mark.parametrize("coding", ["br", "compress", "gzip, gzip", "zstd"])
def test_unknown_codings_are_415(demo, coding):
    body = json.dumps(simple_body()).encode()
    with RawConn(demo) as c:
        c.send(http_request("POST", SIMPLE, body, headers={"Content-Encoding": coding}))
        r = c.read_response()
        assert r.status == 415, r
        assert ("Content-Encoding '%s' is not supported: send gzip, deflate or identity" % coding
                in r.json()["error"]), r


# --- Triton's raw binary request: Inference-Header-Content-Length: 0 ----------------------

def test_raw_binary_request(demo):
    # half_plus_three: one input x FP32 [-1] — the shape deduced from the byte count
    raw = struct.pack("<3f", 1.0, 2.0, 5.0)
    r = requests.post(demo.url("/v2/models/half_plus_three/infer"), data=raw, timeout=TIMEOUT,
                      headers={"Inference-Header-Content-Length": "0",
                               "Content-Type": "application/octet-stream"})
    y = outputs_by_name(ok_json(r))["y"]
    assert y["shape"] == [3] and y["data"] == [3.5, 4.0, 5.5], show(r)
    # compressed as well
    r = requests.post(demo.url("/v2/models/half_plus_three/infer"), data=gzip.compress(raw),
                      timeout=TIMEOUT, headers={"Inference-Header-Content-Length": "0",
                                                "Content-Encoding": "gzip"})
    assert outputs_by_name(ok_json(r))["y"]["data"] == [3.5, 4.0, 5.5], show(r)


def test_raw_binary_request_errors(demo):
    hdr = {"Inference-Header-Content-Length": "0"}
    r = requests.post(demo.url(SIMPLE), data=b"\0" * 128, headers=hdr, timeout=TIMEOUT)
    assert_error(r, 400, "raw binary request", "exactly one input", "'simple' has 2")
    r = requests.post(demo.url("/v2/models/identity_fp32/infer"), data=b"\0" * 8, headers=hdr,
                      timeout=TIMEOUT)
    assert_error(r, 400, "raw input 'INPUT0'", "more than one variable-size dimension")
    r = requests.post(demo.url("/v2/models/half_plus_three/infer"), data=b"\0" * 6, headers=hdr,
                      timeout=TIMEOUT)
    assert_error(r, 400, "raw input 'x': 6 bytes are not a whole number of 4-byte rows of FP32")
    # BYTES: only as the one element of a [1] input (simple_identity's is [-1])
    r = requests.post(demo.url("/v2/models/simple_identity/infer"), data=b"abc", headers=hdr,
                      timeout=TIMEOUT)
    assert_error(r, 400, "raw BYTES input 'INPUT0' needs a model input of shape [1]")


# --- issue #34: decoded bytes are bounded like received ones; a coding list is one list -------

def test_two_content_encoding_lines_are_one_list(demo):
    # "Content-Encoding: gzip" twice is "gzip, gzip" (RFC 9110 §5.3): refused, not decoded once
    body = gzip.compress(json.dumps(simple_body()).encode())
    head = ("POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            "Content-Encoding: gzip\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n"
            % (SIMPLE, len(body)))
    with RawConn(demo) as c:
        c.send(head.encode() + body)
        r = c.read_response()
        assert r.status == 415, r
        assert "is not supported" in r.json()["error"], r


def test_gzip_members_follow_one_another(demo):
    # RFC 1952 §2.2: a gzip body may be several members; it decodes to their concatenation
    text = json.dumps(simple_body()).encode()
    half = len(text) // 2
    data = gzip.compress(text[:half]) + gzip.compress(text[half:])
    r = requests.post(demo.url(SIMPLE), data=data, timeout=TIMEOUT,
                      headers={"Content-Encoding": "gzip"})
    check_simple(ok_json(r))
    r = requests.post(demo.url(SIMPLE), data=data + b"\0\0\0", timeout=TIMEOUT,
                      headers={"Content-Encoding": "gzip"})
    assert_error(r, 400, "not another gzip member")


def peak_rss_mb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    raise AssertionError("no VmHWM for %d" % pid)


def test_decoded_bytes_count_against_the_receiving_budget(start_demo):
    # 24 bodies of ~60 KB at once, each decoding to 60 MiB: with a receiving budget of 64 MiB,
    # what they decode to at any moment is bounded by it (the rest are refused 503 as their
    # decoded bytes come out), not 24 x 60 MiB (the demo peaked at 2.6 GB before)
    d = start_demo("--max-receiving-bytes", str(64 << 20), "--threads", "1")
    bomb = gzip.compress(b" " * (60 << 20), compresslevel=9)
    assert len(bomb) < 100000
    before = peak_rss_mb(d.proc.pid)
    statuses = []

    def one():
        r = requests.post(d.url(SIMPLE), data=bomb, timeout=60,
                          headers={"Content-Encoding": "gzip"})
        statuses.append(r.status_code)

    import threading
    ts = [threading.Thread(target=one) for _ in range(24)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    grown = peak_rss_mb(d.proc.pid) - before
    assert len(statuses) == 24 and set(statuses) <= {400, 503}, statuses
    assert 503 in statuses, statuses
    # 64 MiB of decoded bodies at a time plus the allocator's and (under ASan) the
    # quarantine's slack; 984c632 grew by 1,442 MiB in this very test
    assert grown < 512, "peak RSS grew by %.0f MiB" % grown
    # the budget is whole again: a plain request of the same size is received
    r = requests.post(d.url(SIMPLE), data=gzip.compress(json.dumps(simple_body()).encode()),
                      timeout=TIMEOUT, headers={"Content-Encoding": "gzip"})
    check_simple(ok_json(r))
