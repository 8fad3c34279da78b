"""The soak's own clients (scripts/soak.sh runs wrk and h2load beside them): for SECONDS, against
the demo at HOST:PORT, several threads at once —

  big      16 MiB binary-extension round trips over HTTP/1.1; every answer compared byte for byte
  grpc     ModelInfer with grpcio; every answer checked
  probes   GET /v2/health/live every 200 ms: none may fail
  cuts     requests abandoned midway (half a body, then close; a gRPC call cancelled)
  attacks  at a low rate, the attacks of issue 10: Upgrade + a byte, CONNECT, a header block
           that never ends, HPACK amplification, a body trickled under the minimum rate, an
           answer never read, an oversized chunk, 1,025 inputs
  rss      the demo's VmRSS every second

Prints one JSON line of counts; exits 1 when a completed answer was wrong or a probe failed.
"""
import json
import os
import socket
import struct
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))

import h2raw  # noqa: E402
from grpc_stubs import add_input, load_stubs, simple_request  # noqa: E402

HOST, PORT, SECONDS, PID = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
STOP = time.monotonic() + SECONDS
counts = {}
lock = threading.Lock()


class Target:
    host, port = HOST, PORT


def count(key, n=1):
    with lock:
        counts[key] = counts.get(key, 0) + n


def running():
    return time.monotonic() < STOP


def http(method, path, body=b"", headers=None):
    h = {"Host": "soak", "Content-Length": str(len(body))}
    h.update(headers or {})
    head = "%s %s HTTP/1.1\r\n" % (method, path) + "".join("%s: %s\r\n" % kv for kv in h.items())
    return head.encode() + b"\r\n" + body


def read_response(s, timeout=30.0):
    """(status, headers dict, body) of one response with Content-Length."""
    s.settimeout(timeout)
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = s.recv(1 << 20)
        if not chunk:
            raise ConnectionError("closed before the head")
        buf += chunk
    head, body = buf.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    hdrs = {k.strip().lower(): v.strip() for k, v in (l.split(":", 1) for l in lines[1:])}
    n = int(hdrs.get("content-length", "0"))
    while len(body) < n:
        chunk = s.recv(1 << 22)
        if not chunk:
            raise ConnectionError("closed inside the body")
        body += chunk
    return status, hdrs, body


# ---- big round trips ---------------------------------------------------------------------
def big():
    n = 16 << 20
    payload = bytes(range(256)) * (n // 256)
    head = json.dumps({"inputs": [{"name": "INPUT0", "shape": [1, n], "datatype": "UINT8",
                                   "parameters": {"binary_data_size": n}}],
                       "parameters": {"binary_data_output": True}}).encode()
    req = http("POST", "/v2/models/identity_uint8/infer", head + payload,
               {"Inference-Header-Content-Length": str(len(head)),
                "Content-Type": "application/octet-stream"})
    while running():
        with socket.create_connection((HOST, PORT)) as s:
            for _ in range(4):
                if not running():
                    break
                s.sendall(req)
                status, hdrs, body = read_response(s)
                jl = int(hdrs.get("inference-header-content-length", "-1"))
                if status == 200 and jl >= 0 and body[jl:] == payload:
                    count("big_ok")
                else:
                    count("big_wrong")


# ---- gRPC --------------------------------------------------------------------------------
def grpc_calls():
    import grpc
    protos = load_stubs()
    ch = grpc.insecure_channel("%s:%d" % (HOST, PORT))
    stub = protos.pb_grpc.GRPCInferenceServiceStub(ch)
    while running():
        req, a, b = simple_request(protos.pb, rows=2)
        try:
            resp = stub.ModelInfer(req, timeout=10)
            out = struct.unpack("<32i", resp.raw_output_contents[0])
            if list(out) == [x + y for x, y in zip(a, b)]:
                count("grpc_ok")
            else:
                count("grpc_wrong")
        except grpc.RpcError as e:
            count("grpc_error_%s" % e.code().name)
        # a cancelled one now and then
        fut = stub.ModelInfer.future(
            protos.pb.ModelInferRequest(model_name="slow", inputs=[protos.pb.ModelInferRequest
                                                                    .InferInputTensor(
                                                                        name="INPUT0",
                                                                        datatype="INT32",
                                                                        shape=[1])],
                                        raw_input_contents=[struct.pack("<i", 300)]),
            timeout=10)
        time.sleep(0.05)
        fut.cancel()
        count("grpc_cancelled")
    ch.close()


# ---- probes ------------------------------------------------------------------------------
def probes():
    worst = 0.0
    while running():
        t0 = time.monotonic()
        try:
            with socket.create_connection((HOST, PORT), timeout=10) as s:
                s.sendall(http("GET", "/v2/health/live"))
                status, _, body = read_response(s, timeout=10)
            ok = status == 200 and body == b'{"live":true}'
        except OSError:
            ok = False
        worst = max(worst, time.monotonic() - t0)
        count("probe_ok" if ok else "probe_failed")
        time.sleep(0.2)
    with lock:
        counts["probe_worst_ms"] = int(worst * 1000)


# ---- abandoned requests ------------------------------------------------------------------
def cuts():
    body = json.dumps({"inputs": [{"name": "INPUT0", "shape": [1, 16], "datatype": "INT32",
                                   "data": list(range(16))},
                                  {"name": "INPUT1", "shape": [1, 16], "datatype": "INT32",
                                   "data": list(range(16))}]}).encode()
    while running():
        try:
            with socket.create_connection((HOST, PORT)) as s:  # half a body, then gone
                s.sendall(http("POST", "/v2/models/simple/infer", body)[:-len(body) // 2])
            with socket.create_connection((HOST, PORT)) as s:  # gone while it is answered
                s.sendall(http("POST", "/v2/models/slow/infer", json.dumps(
                    {"inputs": [{"name": "INPUT0", "shape": [1], "datatype": "INT32",
                                 "data": [200]}]}).encode()))
                time.sleep(0.05)
            count("cuts")
        except OSError:
            count("cuts_refused")
        time.sleep(0.05)


# ---- attacks -----------------------------------------------------------------------------
def attack_once(kind):
    if kind == "upgrade":
        with socket.create_connection((HOST, PORT)) as s:
            s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\nX")
            time.sleep(0.1)
    elif kind == "connect":
        with socket.create_connection((HOST, PORT)) as s:
            s.sendall(b"CONNECT x:443 HTTP/1.1\r\nHost: x:443\r\n\r\n\x16\x03\x01")
            time.sleep(0.1)
    elif kind == "open_header_block":
        with h2raw.H2Conn(Target) as c:
            c.pump(0.05)
            c.send(h2raw.frame(h2raw.HEADERS, 0, 1, h2raw.hpack_encode(
                h2raw.rest_headers(Target, "GET", "/v2/health/live"))))
            time.sleep(0.5)
    elif kind == "hpack":
        with h2raw.H2Conn(Target) as c:
            block = h2raw.hpack_encode(h2raw.rest_headers(Target, "GET", "/v2/health/live"))
            block += b"\x40\x05x-big" + h2raw.hpack_int(4000, 7) + b"v" * 4000 + b"\xbe" * 2000
            for sid in (1, 3, 5, 7, 9):
                c.send(h2raw.frame(h2raw.HEADERS, h2raw.END_HEADERS | h2raw.END_STREAM, sid,
                                   block if sid == 1 else b"\xbe" * 2000))
            c.wait_closed(2.0)
    elif kind == "trickle":
        with socket.create_connection((HOST, PORT)) as s:
            s.sendall(b"POST /v2/models/simple/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n")
            for _ in range(5):
                s.sendall(b"{")
                time.sleep(0.3)
    elif kind == "unread":
        with socket.create_connection((HOST, PORT)) as s:
            n = 4 << 20
            head = json.dumps({"inputs": [{"name": "INPUT0", "shape": [1, n],
                                           "datatype": "UINT8",
                                           "parameters": {"binary_data_size": n}}],
                               "parameters": {"binary_data_output": True}}).encode()
            s.sendall(http("POST", "/v2/models/identity_uint8/infer", head + b"\0" * n,
                           {"Inference-Header-Content-Length": str(len(head)),
                            "Content-Type": "application/octet-stream"}))
            time.sleep(1.0)  # never reads its 4 MiB answer
    elif kind == "chunk":
        with socket.create_connection((HOST, PORT)) as s:
            s.sendall(b"POST /v2/models/simple/infer HTTP/1.1\r\nHost: x\r\n"
                      b"Transfer-Encoding: chunked\r\n\r\nFFFFFFFF\r\n")
            s.settimeout(5)
            s.recv(4096)
    elif kind == "inputs":
        with socket.create_connection((HOST, PORT)) as s:
            body = json.dumps({"inputs": [{"name": "x%d" % i, "shape": [1], "datatype": "INT8",
                                           "data": [1]} for i in range(1025)]}).encode()
            s.sendall(http("POST", "/v2/models/simple/infer", body))
            status, _, _ = read_response(s, timeout=10)
            if status != 400:
                count("attack_inputs_not_400")


def attacks():
    kinds = ["upgrade", "connect", "open_header_block", "hpack", "trickle", "unread", "chunk",
             "inputs"]
    i = 0
    while running():
        kind = kinds[i % len(kinds)]
        i += 1
        try:
            attack_once(kind)
            count("attack_" + kind)
        except (OSError, h2raw.ConnectionClosed, AssertionError):
            count("attack_" + kind)  # the server cutting an attacker off is a success
        time.sleep(0.2)


# ---- RSS ---------------------------------------------------------------------------------
rss = []


def sample_rss():
    while running():
        try:
            with open("/proc/%d/status" % PID) as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        rss.append(int(line.split()[1]))
        except OSError:
            break
        time.sleep(1.0)


def main():
    threads = [threading.Thread(target=f, name=f.__name__, daemon=True)
               for f in (big, grpc_calls, probes, cuts, attacks, sample_rss)]
    for t in threads:
        t.start()
    errors = []
    for t in threads:
        t.join(SECONDS + 60)
        if t.is_alive():
            errors.append("thread %s did not finish" % t.name)
    # RSS flat after warm-up: the last quarter may not exceed the second quarter's peak by more
    # than 10% + 64 MiB (caches and ASan's quarantine fill during the first half)
    q = len(rss) // 4
    if q >= 2:
        before, after = max(rss[q:2 * q]), max(rss[3 * q:])
        counts["rss_kib_q2_max"], counts["rss_kib_q4_max"] = before, after
        if after > before * 1.10 + 64 * 1024:
            errors.append("RSS grew after warm-up: %d -> %d KiB" % (before, after))
    for k in ("big_wrong", "grpc_wrong", "probe_failed", "attack_inputs_not_400"):
        if counts.get(k):
            errors.append("%s: %d" % (k, counts[k]))
    for k in ("big_ok", "grpc_ok", "probe_ok"):
        if not counts.get(k):
            errors.append("no %s at all" % k)
    counts["errors"] = errors
    print(json.dumps(counts, sort_keys=True))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
