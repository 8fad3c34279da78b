"""Bulk checks: every FP16/BF16 value, random FP32/FP64 bit patterns, large tensors, many
concurrent clients, big pipelined responses, clients that vanish mid-request."""
import json
import math
import random
import socket
import struct
import threading
import time

import requests

from isvtest import (ROUNDERS, TIMEOUT, RawConn, flatten, http_request, loads_raw, ok_json,
                     outputs_by_name, post_json, same_float, shortest_repr, show, sig_digits,
                     simple_body, slow_body, tensor)


def _float_roundtrip(demo, dt, values):
    """Send values (already exact in dt) as shortest double text; every value must come back
    as the same value of dt, written no longer than its shortest text in dt."""
    rnd = ROUNDERS[dt]
    items = []
    for v in values:
        if math.isnan(v):
            items.append("NaN")
        elif math.isinf(v):
            items.append("Infinity" if v > 0 else "-Infinity")
        else:
            items.append(repr(v))
    text = ('{"inputs":[{"name":"INPUT0","datatype":"%s","shape":[1,%d],"data":[%s]}]}'
            % (dt, len(values), ",".join(items)))
    r = post_json(demo, "/v2/models/identity_%s/infer" % dt.lower(), text, timeout=30)
    assert r.status_code == 200, show(r)
    out = outputs_by_name(loads_raw(r.content.decode("utf-8")))["OUTPUT0"]
    got = flatten(out["data"])
    assert len(got) == len(values)
    wrong, long_ = [], []
    for v, t in zip(values, got):
        if math.isnan(v):
            if t != "NaN":
                wrong.append((v, t))
            continue
        if math.isinf(v):
            if t != ("Infinity" if v > 0 else "-Infinity"):
                wrong.append((v, t))
            continue
        if not same_float(rnd(float(t)), v):
            wrong.append((v, t))
        elif sig_digits(t) > sig_digits(shortest_repr(v, rnd)):
            long_.append((v, t, shortest_repr(v, rnd)))
    assert not wrong, "%s: %d values changed, e.g. (sent, got) %r" % (dt, len(wrong), wrong[:10])
    assert not long_, "%s: %d values not written shortest, e.g. (value, got, shortest) %r" % (
        dt, len(long_), long_[:10])


def test_every_fp16_value(demo):
    vals = []
    nan_seen = False
    for bits in range(0x10000):
        v = struct.unpack("<e", struct.pack("<H", bits))[0]
        if math.isnan(v):
            if nan_seen:
                continue
            nan_seen = True
        vals.append(v)
    _float_roundtrip(demo, "FP16", vals)


def test_every_bf16_value(demo):
    vals = []
    nan_seen = False
    for bits in range(0x10000):
        v = struct.unpack("<f", struct.pack("<I", bits << 16))[0]
        if math.isnan(v):
            if nan_seen:
                continue
            nan_seen = True
        vals.append(v)
    _float_roundtrip(demo, "BF16", vals)


def test_random_fp32_bit_patterns(demo):
    rng = random.Random(1234)
    vals = []
    while len(vals) < 20000:
        v = struct.unpack("<f", struct.pack("<I", rng.getrandbits(32)))[0]
        if not math.isnan(v):
            vals.append(v)
    _float_roundtrip(demo, "FP32", vals)


def test_random_fp64_bit_patterns(demo):
    rng = random.Random(5678)
    vals = []
    while len(vals) < 20000:
        v = struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0]
        if not math.isnan(v):
            vals.append(v)
    vals += [5e-324, -5e-324, 2.2250738585072009e-308, 1.7976931348623157e308, 0.0, -0.0]
    _float_roundtrip(demo, "FP64", vals)


def test_large_int64_tensor(demo):
    rng = random.Random(42)
    n = 200000
    vals = [rng.randint(-2**63, 2**63 - 1) for _ in range(n)]
    r = post_json(demo, "/v2/models/identity_int64/infer",
                  {"inputs": [tensor("INPUT0", "INT64", [4, n // 4], vals)]}, timeout=30)
    out = outputs_by_name(ok_json(r))["OUTPUT0"]
    assert out["shape"] == [4, n // 4]
    assert flatten(out["data"]) == vals


def test_large_bytes_tensor(demo):
    rng = random.Random(7)
    alphabet = "abc é日😀\"\\\n\t\u0000"
    vals = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40))) for _ in range(20000)]
    r = post_json(demo, "/v2/models/identity_bytes/infer",
                  {"inputs": [tensor("INPUT0", "BYTES", [100, 200], vals)]}, timeout=30)
    out = outputs_by_name(ok_json(r))["OUTPUT0"]
    assert flatten(out["data"]) == vals


def test_zero_element_tensor(demo):
    r = post_json(demo, "/v2/models/identity_int32/infer",
                  {"inputs": [tensor("INPUT0", "INT32", [0, 3], [])]})
    out = outputs_by_name(ok_json(r))["OUTPUT0"]
    assert out["shape"] == [0, 3] and flatten(out["data"]) == [], show(r)


def test_many_concurrent_clients(demo):
    errors = []

    def client(k):
        try:
            with requests.Session() as s:
                for j in range(10):
                    rid = "c%d-%d" % (k, j)
                    body = simple_body(rows=1 + (j % 3), req_id=rid)
                    r = s.post(demo.url("/v2/models/simple/infer"), data=json.dumps(body),
                               headers={"Content-Type": "application/json"}, timeout=TIMEOUT)
                    b = ok_json(r)
                    assert b["id"] == rid, show(r)
                    o = outputs_by_name(b)["OUTPUT0"]
                    assert o["shape"] == [1 + (j % 3), 16], show(r)
        except Exception as e:  # collected
            errors.append(repr(e))

    threads = [threading.Thread(target=client, args=(k,)) for k in range(32)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors, errors[:5]


def test_many_connections_open_at_once(demo):
    conns = [RawConn(demo) for _ in range(200)]
    try:
        for i, c in enumerate(conns):
            c.send(http_request("GET", "/v2/health/live"))
        for c in conns:
            assert c.read_response().status == 200
    finally:
        for c in conns:
            c.close()


def test_pipelined_large_responses_with_slow_reader(demo):
    n = 30000
    vals = list(range(n))
    body = json.dumps({"inputs": [tensor("INPUT0", "INT32", [1, n], vals)]}).encode()
    with RawConn(demo, timeout=15) as c:
        c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        c.send(b"".join(http_request("POST", "/v2/models/identity_int32/infer", body)
                        for _ in range(20)))
        time.sleep(0.3)  # let the server fill the socket and hit backpressure
        for _ in range(20):
            r = c.read_response(timeout=15)
            assert r.status == 200, r
            assert flatten(outputs_by_name(r.json())["OUTPUT0"]["data"]) == vals


def test_client_disconnects_mid_request(demo):
    # 1) vanishes while a slow backend is running; 2) vanishes mid-body; 3) mid-headers.
    body = json.dumps(slow_body(demo, 150)).encode()
    c = RawConn(demo)
    c.send(http_request("POST", "/v2/models/slow/infer", body))
    time.sleep(0.03)
    c.close()
    c = RawConn(demo)
    full = http_request("POST", "/v2/models/simple/infer", json.dumps(simple_body()).encode())
    c.send(full[:len(full) - 20])
    c.close()
    c = RawConn(demo)
    c.send(b"GET /v2/health/li")
    c.close()
    # RST instead of FIN
    c = RawConn(demo)
    c.send(http_request("POST", "/v2/models/slow/infer", body))
    c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    c.close()
    time.sleep(0.3)  # the slow requests finish with nobody to answer
    r = requests.post(demo.url("/v2/models/simple/infer"), data=json.dumps(simple_body()),
                      headers={"Content-Type": "application/json"}, timeout=TIMEOUT)
    ok_json(r)
    assert demo.alive(), demo.describe_exit(demo.proc.returncode)


def test_client_disconnects_while_reading_large_response(demo):
    n = 200000
    body = json.dumps({"inputs": [tensor("INPUT0", "INT64", [1, n], [2**62] * n)]}).encode()
    for _ in range(3):
        c = RawConn(demo)
        c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        c.send(http_request("POST", "/v2/models/identity_int64/infer", body))
        c.sock.settimeout(5)
        c.sock.recv(1000)  # the response has started
        c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        c.close()
    time.sleep(0.1)
    assert requests.get(demo.url("/v2/health/live"), timeout=TIMEOUT).status_code == 200
    assert demo.alive(), demo.describe_exit(demo.proc.returncode)
