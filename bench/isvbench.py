#!/usr/bin/python3
"""Client side of the libinferserve benchmark harness (driven by bench/run.sh).

Subcommands (every one bounded in time; loopback only):

  gen DIR                  protoc --python_out from proto/ into DIR/pb; writes DIR/simple.grpc,
                           DIR/big.grpc (as Python protobuf lays it out: the tensor at offset 43)
                           and DIR/big-aligned.grpc (an `id` pads the tensor to a 16-byte offset):
                           gRPC length-prefixed ModelInferRequest messages for h2load -d, and
                           DIR/grps.grpc (a GrpsMessage, str_data "hello grps") and
                           DIR/tf.grpc (TF Serving's PredictRequest for `simple`); prints
                           JSON facts (sizes, raw-contents offsets)
  check PORT DIR           one REST and one gRPC `simple` infer against the demo, and one grps
                           Predict of each (str_data echoed, status.code 200): verifies the
                           answers, prints JSON with the response body sizes (for nginx)
  large PORT DIR MODE N    16 MiB FP32 identity round trips (MODE json | binary | grpc |
                           grpc-aligned | shm | shm-grpc); prints JSON: per-iteration seconds,
                           MB/s, status. shm: input and output in two POSIX shared memory regions
                           registered with the demo (Triton's system shared memory), the request
                           over REST (shm) or gRPC (shm-grpc) carries only their names; also
                           timed: the client's own copies into and out of the regions
  idle PORT PID N PROTO    opens N idle connections (PROTO h1 | h1req | h2), prints JSON with the
                           demo's VmRSS / VmHWM before and after and KiB per connection
  parse KIND FILE [k=v]..  wrk / h2load / json output -> one JSON line (k=v pairs merged in;
                           log=PATH for h2load's --log-file percentiles)
  targets RESULTS.jsonl    the ids of the missed targets, one a line (run.sh profiles those)
  report RESULTS.jsonl     the Markdown section appended to bench/RESULTS.md

MB = 10^6 bytes. "payload" = the tensor bytes (16 MiB) counted once per round trip.
"""
import json
import os
import random
import shutil
import socket
import struct
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROTO_DIR = os.path.join(REPO, "proto")
MIB = 1 << 20
BIG_ELEMS = 4194304  # [1, 4194304] FP32 = 16 MiB
TIMEOUT = 60.0


def die(msg):
    print("isvbench: " + msg, file=sys.stderr)
    sys.exit(1)


def compile_proto(d, name):
    """protoc --python_out of proto/NAME.proto into DIR/pb (once); puts DIR/pb on sys.path."""
    pbdir = os.path.join(d, "pb")
    if not os.path.exists(os.path.join(pbdir, name + "_pb2.py")):
        os.makedirs(pbdir, exist_ok=True)
        protoc = shutil.which("protoc") or die("protoc not found (apt-get install protobuf-compiler)")
        subprocess.run([protoc, "-I" + PROTO_DIR, "--python_out=" + pbdir,
                        os.path.join(PROTO_DIR, name + ".proto")], check=True, timeout=60)
    if pbdir not in sys.path:
        sys.path.insert(0, pbdir)


def load_pb(d):
    compile_proto(d, "grpc_predict_v2")
    import grpc_predict_v2_pb2 as pb  # noqa: E402
    return pb


def load_grps_pb(d):
    compile_proto(d, "grps")
    import grps_pb2 as gpb  # noqa: E402
    return gpb


def load_tfs_pb(d):
    for name in ("tensorflow_core", "tensorflow_error", "tensorflow_serving"):
        compile_proto(d, name)
    import tensorflow_serving_pb2 as tpb  # noqa: E402
    return tpb


GRPS_TEXT = "hello grps"  # the payload of bench/grps_predict.lua too


def grps_request(gpb):
    return gpb.GrpsMessage(str_data=GRPS_TEXT).SerializeToString()


def grpc_frame(msg):
    return b"\0" + struct.pack(">I", len(msg)) + msg


SIMPLE_IN0 = list(range(1, 17))
SIMPLE_IN1 = [1] * 16


def simple_request(pb):
    req = pb.ModelInferRequest(model_name="simple")
    for name in ("INPUT0", "INPUT1"):
        t = req.inputs.add()
        t.name, t.datatype = name, "INT32"
        t.shape.extend([1, 16])
    req.raw_input_contents.append(struct.pack("<16i", *SIMPLE_IN0))
    req.raw_input_contents.append(struct.pack("<16i", *SIMPLE_IN1))
    return req.SerializeToString()


def tf_request(tpb):
    """TF Serving's PredictRequest for `simple`: the same inputs as simple_request, as
    tensor_content."""
    req = tpb.PredictRequest()
    req.model_spec.name = "simple"
    for name, vals in (("INPUT0", SIMPLE_IN0), ("INPUT1", SIMPLE_IN1)):
        t = req.inputs[name]
        t.dtype = 3  # DT_INT32
        t.tensor_shape.dim.add(size=1)
        t.tensor_shape.dim.add(size=16)
        t.tensor_content = struct.pack("<16i", *vals)
    return req.SerializeToString()


def big_tensor():
    # deterministic, not compressible-looking, every value a finite float32
    rnd = random.Random(1)
    return struct.pack("<1024f", *[rnd.uniform(-1, 1) for _ in range(1024)]) * (BIG_ELEMS // 1024)


def big_request(pb, data, pad_id=None):
    req = pb.ModelInferRequest(model_name="identity_fp32")
    if pad_id:
        req.id = pad_id
    t = req.inputs.add()
    t.name, t.datatype = "INPUT0", "FP32"
    t.shape.extend([1, BIG_ELEMS])
    req.raw_input_contents.append(data)
    return req.SerializeToString()


def raw_offset(msg, data):
    """Offset of the tensor bytes inside the serialized message (the server's buffer is
    malloc'd, so offset % 4 decides whether FP32 raw contents can be used in place)."""
    return msg.find(data[:4096])


def aligned_big_request(pb, data):
    for n in range(0, 8):
        m = big_request(pb, data, "a" * n if n else None)
        if raw_offset(m, data) % 16 == 0:
            return m
    die("could not align the raw contents")


def cmd_gen(d):
    pb = load_pb(d)
    s = simple_request(pb)
    with open(os.path.join(d, "simple.grpc"), "wb") as f:
        f.write(grpc_frame(s))
    data = big_tensor()
    b = big_request(pb, data)
    with open(os.path.join(d, "big.grpc"), "wb") as f:
        f.write(grpc_frame(b))
    a = aligned_big_request(pb, data)
    with open(os.path.join(d, "big-aligned.grpc"), "wb") as f:
        f.write(grpc_frame(a))
    g = grps_request(load_grps_pb(d))
    with open(os.path.join(d, "grps.grpc"), "wb") as f:
        f.write(grpc_frame(g))
    with open(os.path.join(d, "tf.grpc"), "wb") as f:
        f.write(grpc_frame(tf_request(load_tfs_pb(d))))
    print(json.dumps({"simple_msg_bytes": len(s), "grps_msg_bytes": len(g), "big_msg_bytes": len(b),
                      "big_raw_offset": raw_offset(b, data),
                      "big_aligned_raw_offset": raw_offset(a, data)}))


# ---- raw HTTP/1.1 ----------------------------------------------------------------------------

class H1:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def request(self, method, path, body=b"", headers=(), into=None):
        head = "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: %d\r\n" % (method, path, len(body))
        head += "".join("%s: %s\r\n" % h for h in headers) + "\r\n"
        self.s.sendall(head.encode() + body if len(body) < 65536 else head.encode())
        if len(body) >= 65536:
            self.s.sendall(body)
        return self.response(into)

    def response(self, into=None):
        while b"\r\n\r\n" not in self.buf:
            chunk = self.s.recv(65536)
            if not chunk:
                raise IOError("connection closed before the response head")
            self.buf += chunk
        head, rest = self.buf.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        hdrs = {}
        for ln in lines[1:]:
            k, v = ln.split(":", 1)
            hdrs[k.strip().lower()] = v.strip()
        n = int(hdrs.get("content-length", "0"))
        if into is None or len(into) < n:
            into = bytearray(n)
        mv = memoryview(into)
        got = min(len(rest), n)
        mv[:got] = rest[:got]
        self.buf = rest[got:]
        while got < n:
            k = self.s.recv_into(mv[got:n])
            if k == 0:
                raise IOError("connection closed inside the response body")
            got += k
        return status, hdrs, mv[:n]

    def close(self):
        self.s.close()


def grpc_channel(port):
    import grpc
    opts = [("grpc.max_send_message_length", 256 * MIB), ("grpc.max_receive_message_length", 256 * MIB)]
    return grpc.insecure_channel("127.0.0.1:%d" % port, options=opts)


def cmd_check(port, d):
    pb = load_pb(d)
    out = {}
    c = H1(port)
    body = json.dumps({"inputs": [
        {"name": "INPUT0", "shape": [1, 16], "datatype": "INT32", "data": SIMPLE_IN0},
        {"name": "INPUT1", "shape": [1, 16], "datatype": "INT32", "data": SIMPLE_IN1}]}).encode()
    st, _, resp = c.request("POST", "/v2/models/simple/infer", body, [("Content-Type", "application/json")])
    j = json.loads(bytes(resp))
    o = {x["name"]: x["data"] for x in j["outputs"]}
    if st != 200 or o["OUTPUT0"] != [a + b for a, b in zip(SIMPLE_IN0, SIMPLE_IN1)]:
        die("REST simple answered %d %r" % (st, bytes(resp)[:200]))
    out["rest_response_bytes"] = len(resp)
    c.close()
    ch = grpc_channel(port)
    call = ch.unary_unary("/inference.GRPCInferenceService/ModelInfer")
    raw = call(simple_request(pb), timeout=10)
    r = pb.ModelInferResponse.FromString(raw)
    got = dict(zip([x.name for x in r.outputs], r.raw_output_contents))
    if struct.unpack("<16i", got["OUTPUT1"]) != tuple(a - b for a, b in zip(SIMPLE_IN0, SIMPLE_IN1)):
        die("gRPC simple answered wrong data")
    out["grpc_response_msg_bytes"] = len(raw)
    out["grpc_response_body_bytes"] = len(raw) + 5  # with the gRPC length prefix
    # grps Predict on the default model (echo): str_data comes back, status.code 200
    gpb = load_grps_pb(d)
    c = H1(port)
    st, _, resp = c.request("POST", "/grps/v1/infer/predict", json.dumps({"str_data": GRPS_TEXT}).encode(),
                            [("Content-Type", "application/json")])
    j = json.loads(bytes(resp))
    if st != 200 or j.get("str_data") != GRPS_TEXT or j.get("status", {}).get("code") != 200:
        die("grps REST predict answered %d %r" % (st, bytes(resp)[:200]))
    out["grps_rest_response_bytes"] = len(resp)
    c.close()
    raw = ch.unary_unary("/grps.protos.v1.GrpsService/Predict")(grps_request(gpb), timeout=10)
    r = gpb.GrpsMessage.FromString(raw)
    if r.str_data != GRPS_TEXT or r.status.code != 200:
        die("grps gRPC Predict answered %r" % raw[:200])
    out["grps_grpc_response_msg_bytes"] = len(raw)
    ch.close()
    print(json.dumps(out))


# ---- 16 MiB round trips ----------------------------------------------------------------------

def read_status(pid):
    r = {}
    with open("/proc/%d/status" % pid) as f:
        for ln in f:
            if ln.startswith(("VmRSS:", "VmHWM:")):
                r[ln.split(":")[0]] = int(ln.split()[1])
    return r


def cpu_ns(pid):
    """CPU time of every thread of pid, ns (scheduler accounting)."""
    total = 0
    for t in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/schedstat" % (pid, t)) as f:
                total += int(f.read().split()[0])
        except OSError:
            pass
    return total


def reset_hwm(pid):
    try:
        with open("/proc/%d/clear_refs" % pid, "w") as f:
            f.write("5")  # resets VmHWM to the current RSS (Linux >= 4.0)
        return True
    except OSError:
        return False


def float_text(data):
    # data is one 4 KiB tile repeated (big_tensor): format the tile once.
    # 9 significant digits always round-trip a float32.
    tile = ",".join("%.9g" % v for v in struct.unpack("<1024f", data[:4096]))
    return ",".join([tile] * (len(data) // 4096))


def cmd_large(port, d, mode, iters, pid):
    pb = load_pb(d) if mode.startswith("grpc") or mode == "shm-grpc" else None
    data = big_tensor()
    res = {"mode": mode, "payload_bytes": len(data), "iters": iters}
    times = []
    cpu = [0]

    ccpu = [0.0]  # this client's own CPU time (all its threads) during the timed calls

    def timed(fn):
        c0 = cpu_ns(pid) if pid else 0
        p0 = time.process_time()
        t0 = time.perf_counter()
        r = fn()
        dt = time.perf_counter() - t0
        ccpu[0] += time.process_time() - p0
        if pid:
            cpu[0] += cpu_ns(pid) - c0
        return r, dt
    if pid:
        res["hwm_reset"] = reset_hwm(pid)
        res["rss_before_kib"] = read_status(pid).get("VmRSS")
    if mode == "json":
        t0 = time.perf_counter()
        body = ('{"inputs":[{"name":"INPUT0","shape":[1,%d],"datatype":"FP32","data":[%s]}]}'
                % (BIG_ELEMS, float_text(data))).encode()
        res["gen_seconds"] = round(time.perf_counter() - t0, 2)
        res["request_bytes"] = len(body)
        c = H1(port)
        into = bytearray(len(body) + 4096)
        for i in range(iters + 1):  # the first one is a warm-up, and verified
            (st, _, resp), dt = timed(lambda: c.request(
                "POST", "/v2/models/identity_fp32/infer", body, [("Content-Type", "application/json")],
                into))
            if st != 200:
                die("json: status %d %r" % (st, bytes(resp[:300])))
            if i == 0:
                cpu[0] = 0
                ccpu[0] = 0.0
                res["response_bytes"] = len(resp)
                j = json.loads(bytes(resp))
                back = j["outputs"][0]["data"]
                if len(back) != BIG_ELEMS or struct.pack("<1024f", *back[:1024]) != data[:4096]:
                    die("json: the identity answer differs from the input")
            else:
                times.append(dt)
        c.close()
    elif mode == "binary":
        # KServe binary tensor extension: JSON header + raw bytes, Inference-Header-Content-Length
        hdr = json.dumps({"inputs": [{"name": "INPUT0", "shape": [1, BIG_ELEMS], "datatype": "FP32",
                                      "parameters": {"binary_data_size": len(data)}}],
                          "outputs": [{"name": "OUTPUT0", "parameters": {"binary_data": True}}]}).encode()
        body = hdr + data
        res["request_bytes"] = len(body)
        c = H1(port)
        into = bytearray(len(data) + 65536)
        for i in range(iters + 1):  # the first one is a warm-up, and verified
            # no Content-Type, as tritonclient sends it
            (st, h, resp), dt = timed(lambda: c.request(
                "POST", "/v2/models/identity_fp32/infer", body,
                [("Inference-Header-Content-Length", str(len(hdr)))], into))
            res["status"] = st
            if st != 200:
                die("binary: status %d %r" % (st, bytes(resp[:300])))
            if i == 0:
                cpu[0] = 0
                ccpu[0] = 0.0
                hl = int(h["inference-header-content-length"])
                res["response_bytes"] = len(resp)
                j = json.loads(bytes(resp[:hl]))
                if (j["outputs"][0]["parameters"]["binary_data_size"] != len(data)
                        or resp[hl:] != data):
                    die("binary: the identity answer differs from the input")
            else:
                times.append(dt)
        res["implemented"] = True
        c.close()
    elif mode in ("grpc", "grpc-aligned"):
        msg = big_request(pb, data) if mode == "grpc" else aligned_big_request(pb, data)
        res["raw_offset_in_message"] = raw_offset(msg, data)
        res["raw_in_place"] = raw_offset(msg, data) % 4 == 0
        ch = grpc_channel(port)
        call = ch.unary_unary("/inference.GRPCInferenceService/ModelInfer")
        for i in range(iters + 1):
            raw, dt = timed(lambda: call(msg, timeout=TIMEOUT))
            if i == 0:
                cpu[0] = 0
                ccpu[0] = 0.0
                r = pb.ModelInferResponse.FromString(raw)
                if r.raw_output_contents[0] != data:
                    die("grpc: the identity answer differs from the input")
            else:
                times.append(dt)
        ch.close()
    elif mode in ("shm", "shm-grpc"):
        from multiprocessing import shared_memory
        n = len(data)
        sin = shared_memory.SharedMemory(create=True, size=n)
        sout = shared_memory.SharedMemory(create=True, size=n)
        c = H1(port)
        try:
            for name, s in (("bench_in", sin), ("bench_out", sout)):
                c.request("POST", "/v2/systemsharedmemory/region/%s/unregister" % name)
                b = json.dumps({"key": "/" + s.name, "offset": 0, "byte_size": n}).encode()
                st, _, resp = c.request("POST", "/v2/systemsharedmemory/region/%s/register" % name,
                                        b, [("Content-Type", "application/json")])
                if st != 200:
                    die("shm: register %s: status %d %r" % (name, st, bytes(resp[:300])))
            sin.buf[:n] = data
            pin = {"shared_memory_region": "bench_in", "shared_memory_byte_size": n}
            pout = {"shared_memory_region": "bench_out", "shared_memory_byte_size": n}
            if mode == "shm":
                body = json.dumps({"inputs": [{"name": "INPUT0", "shape": [1, BIG_ELEMS],
                                               "datatype": "FP32", "parameters": pin}],
                                   "outputs": [{"name": "OUTPUT0", "parameters": pout}]}).encode()
                res["request_bytes"] = len(body)

                def call():
                    st, _, resp = c.request("POST", "/v2/models/identity_fp32/infer", body,
                                            [("Content-Type", "application/json")])
                    if st != 200:
                        die("shm: status %d %r" % (st, bytes(resp[:300])))
                    return resp
            else:
                req = pb.ModelInferRequest(model_name="identity_fp32")
                t = req.inputs.add(name="INPUT0", datatype="FP32", shape=[1, BIG_ELEMS])
                t.parameters["shared_memory_region"].string_param = "bench_in"
                t.parameters["shared_memory_byte_size"].int64_param = n
                o = req.outputs.add(name="OUTPUT0")
                o.parameters["shared_memory_region"].string_param = "bench_out"
                o.parameters["shared_memory_byte_size"].int64_param = n
                msg = req.SerializeToString()
                res["request_bytes"] = len(msg)
                ch = grpc_channel(port)
                gcall = ch.unary_unary("/inference.GRPCInferenceService/ModelInfer")

                def call():
                    return gcall(msg, timeout=TIMEOUT)
            copies = []
            for i in range(iters + 1):
                resp, dt = timed(call)
                if i == 0:
                    cpu[0] = 0
                    ccpu[0] = 0.0
                    res["response_bytes"] = len(resp)
                    if bytes(sout.buf[:n]) != data:
                        die("shm: the identity answer in the output region differs from the input")
                    sout.buf[:n] = bytes(n)
                else:
                    times.append(dt)
                    # what a client that holds its tensor elsewhere adds: one copy in, one out
                    t0 = time.perf_counter()
                    sin.buf[:n] = data
                    out = bytes(sout.buf[:n])
                    copies.append(time.perf_counter() - t0)
                    del out
            copies.sort()
            res["client_copies_median_s"] = round(copies[len(copies) // 2], 5)
            if mode == "shm-grpc":
                ch.close()
            for name in ("bench_in", "bench_out"):
                c.request("POST", "/v2/systemsharedmemory/region/%s/unregister" % name)
        finally:
            c.close()
            for s in (sin, sout):
                s.close()
                s.unlink()
    else:
        die("unknown mode " + mode)
    if pid:
        st = read_status(pid)
        res["rss_after_kib"] = st.get("VmRSS")
        res["hwm_kib"] = st.get("VmHWM")
    if pid and times:
        res["cpu_ms_per_rt"] = round(cpu[0] / len(times) / 1e6, 2)
    if times:
        res["client_cpu_ms_per_rt"] = round(ccpu[0] / len(times) * 1e3, 2)
    times.sort()
    res["seconds"] = [round(t, 5) for t in times]
    res["median_s"] = times[len(times) // 2]
    res["mb_per_s"] = round(len(data) / res["median_s"] / 1e6, 1)
    res["mb_per_s_both_directions"] = round(2 * len(data) / res["median_s"] / 1e6, 1)
    if "client_copies_median_s" in res:
        res["mb_per_s_with_client_copies"] = round(
            len(data) / (res["median_s"] + res["client_copies_median_s"]) / 1e6, 1)
    print(json.dumps(res))


# ---- idle connections ------------------------------------------------------------------------

H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


def fd_count(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def cmd_idle(port, pid, n, proto):
    # one warm-up connection+request so that lazy first-use allocations are not counted
    w = H1(port)
    w.request("GET", "/v2/health/live")
    w.close()
    time.sleep(0.3)
    base_fds = fd_count(pid)
    before = read_status(pid)
    socks = []
    try:
        for _ in range(n):
            s = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
            socks.append(s)
            if proto == "h1req":
                s.sendall(b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n")
            elif proto == "h2":
                s.sendall(H2_PREFACE + b"\0\0\0\x04\0\0\0\0\0")  # preface + empty SETTINGS
        if proto in ("h1req", "h2"):
            for s in socks:  # the server's answer (HTTP/1.1 response, or its SETTINGS)
                if not s.recv(4096):
                    die("connection closed by the server")
        deadline = time.time() + 20
        while fd_count(pid) < base_fds + n and time.time() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)
        after = read_status(pid)
        fds = fd_count(pid) - base_fds
    finally:
        for s in socks:
            s.close()
    print(json.dumps({"proto": proto, "connections": n, "server_fds_added": fds,
                      "rss_before_kib": before["VmRSS"], "rss_after_kib": after["VmRSS"],
                      "hwm_after_kib": after["VmHWM"],
                      "kib_per_conn": round((after["VmRSS"] - before["VmRSS"]) / n, 2)}))


# ---- parsing the load generators' output -----------------------------------------------------

def to_ms(tok):
    """'3.32ms' / '950.00us' / '1.02s' / '120us' -> milliseconds."""
    import re
    m = re.match(r"([0-9.]+)(us|ms|s|m)$", tok.strip())
    if not m:
        return None
    v = float(m.group(1))
    return {"us": v / 1000, "ms": v, "s": v * 1000, "m": v * 60000}[m.group(2)]


def parse_wrk(text):
    import re
    r = {}
    m = re.search(r"Requests/sec:\s*([0-9.]+)", text)
    r["rps"] = float(m.group(1)) if m else None
    for pct in ("50", "75", "90", "99"):
        m = re.search(r"^\s*%s%%\s+(\S+)" % pct, text, re.M)
        r["p%s_ms" % pct] = to_ms(m.group(1)) if m else None
    m = re.search(r"^\s*Latency\s+(\S+)\s+(\S+)\s+(\S+)", text, re.M)
    if m:
        r["mean_ms"], r["sd_ms"], r["max_ms"] = (to_ms(x) for x in m.groups())
    m = re.search(r"(\d+) requests in ([0-9.]+\w+)", text)
    r["requests"] = int(m.group(1)) if m else 0
    m = re.search(r"Non-2xx or 3xx responses:\s*(\d+)", text)
    r["non2xx"] = int(m.group(1)) if m else 0
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text)
    r["socket_errors"] = sum(int(x) for x in m.groups()) if m else 0
    return r


def parse_h2load(text, log=None):
    import re
    r = {}
    m = re.search(r"finished in ([0-9.]+)s, ([0-9.]+) req/s", text)
    r["seconds"], r["rps"] = (float(m.group(1)), float(m.group(2))) if m else (None, None)
    m = re.search(r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, "
                  r"(\d+) failed, (\d+) errored, (\d+) timeout", text)
    if m:
        r["requests"], r["succeeded"] = int(m.group(1)), int(m.group(4))
        r["failed"] = int(m.group(5)) + int(m.group(6)) + int(m.group(7))
    m = re.search(r"status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", text)
    if m:
        r["non2xx"] = sum(int(x) for x in m.groups()[1:])
    m = re.search(r"time for request:\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)", text)
    if m:
        r["min_ms"], r["max_ms"], r["mean_ms"], r["sd_ms"] = (to_ms(x) for x in m.groups())
    if log and os.path.exists(log):
        lat = []
        with open(log) as f:
            for ln in f:
                p = ln.split("\t")
                if len(p) >= 3:
                    lat.append(int(p[2]))
        lat.sort()
        if lat:
            r["log_requests"] = len(lat)
            for q in (50, 99):
                r["p%d_ms" % q] = lat[min(len(lat) - 1, int(len(lat) * q / 100))] / 1000
    return r


def cmd_parse(kind, path, kv):
    with open(path) as f:
        text = f.read()
    extra = {}
    for a in kv:
        k, v = a.split("=", 1)
        try:
            v = json.loads(v)
        except ValueError:
            pass
        extra[k] = v
    if kind == "wrk":
        r = parse_wrk(text)
    elif kind == "h2load":
        r = parse_h2load(text, extra.pop("log", None))
    elif kind == "json":
        r = json.loads(text.strip().splitlines()[-1])
    else:
        die("unknown parse kind " + kind)
    r.update(extra)
    print(json.dumps(r))


# ---- the report --------------------------------------------------------------------------------

TARGET_RATIO = 0.60
TARGET_GBPS = 1.0
TARGET_SHM_GBPS = 5.0
TARGET_KIB = 16.0


def load_results(path):
    rows = []
    with open(path) as f:
        for ln in f:
            ln = ln.strip()
            if ln:
                rows.append(json.loads(ln))
    return rows


def pick(rows, **kw):
    return [r for r in rows if all(r.get(k) == v for k, v in kw.items())]


def one(rows, **kw):
    x = pick(rows, **kw)
    return x[-1] if x else None


def targets(rows):
    """[(id, description, measured text, met: True/False/None)]"""
    out = []
    top = max([r["conc"] for r in pick(rows, kind="wrk")] or [64])
    d, n = one(rows, kind="wrk", server="demo", conc=top), one(rows, kind="wrk", server="nginx", conc=top)
    if d and n and d.get("rps") and n.get("rps"):
        q = d["rps"] / n["rps"]
        out.append(("rest", "V2 REST `simple`, wrk c%d >= 60%% of nginx" % top,
                    "%.0f / %.0f req/s = %.0f%%" % (d["rps"], n["rps"], 100 * q), q >= TARGET_RATIO))
    else:
        out.append(("rest", "V2 REST `simple` >= 60% of nginx", "not measured", False))
    top = max([r["conc"] for r in pick(rows, kind="h2load", m=1)] or [64])
    d = one(rows, kind="h2load", server="demo", conc=top, m=1)
    n = one(rows, kind="h2load", server="nginx", conc=top, m=1)
    if d and n and d.get("rps") and n.get("rps"):
        q = d["rps"] / n["rps"]
        out.append(("grpc", "gRPC `simple`, h2load -c%d -m1 >= 60%% of nginx h2c" % top,
                    "%.0f / %.0f req/s = %.0f%%" % (d["rps"], n["rps"], 100 * q), q >= TARGET_RATIO))
    else:
        out.append(("grpc", "gRPC `simple` >= 60% of nginx h2c", "not measured", False))
    b = one(rows, kind="large", mode="binary")
    if b and b.get("implemented"):
        out.append(("binary", "16 MiB HTTP binary round trip >= 1 GB/s",
                    "%.2f GB/s" % (b["mb_per_s"] / 1000), b["mb_per_s"] / 1000 >= TARGET_GBPS))
    else:
        out.append(("binary", "16 MiB HTTP binary round trip >= 1 GB/s",
                    "not implemented (HTTP %s)" % (b.get("status") if b else "?"), False))
    for mode, how in (("shm", "REST"), ("shm-grpc", "gRPC")):
        sm = one(rows, kind="large", mode=mode)
        if sm and sm.get("mb_per_s"):
            out.append((mode, "16 MiB system shared memory round trip (%s) >= 5 GB/s" % how,
                        "%.2f GB/s" % (sm["mb_per_s"] / 1000), sm["mb_per_s"] / 1000 >= TARGET_SHM_GBPS))
    g = [r for r in pick(rows, kind="large_h2load") + pick(rows, kind="large") if
         str(r.get("mode", "")).startswith("grpc") and r.get("mb_per_s")]
    if g:
        best = max(g, key=lambda r: r["mb_per_s"])
        out.append(("large", "16 MiB gRPC raw round trip >= 1 GB/s",
                    "best %.2f GB/s (%s, %s)" % (best["mb_per_s"] / 1000, best["mode"],
                                                 best.get("client", "python grpcio")),
                    best["mb_per_s"] / 1000 >= TARGET_GBPS))
    else:
        out.append(("large", "16 MiB gRPC raw round trip >= 1 GB/s", "not measured", False))
    for proto, label in (("h1req", "HTTP/1.1 keep-alive (after one request)"), ("h1", "HTTP/1.1 (accepted, no request)"),
                         ("h2", "h2c (preface + SETTINGS exchanged)")):
        i = one(rows, kind="idle", proto=proto)
        if i:
            out.append(("idle-" + proto, "<= 16 KiB RSS per idle connection: " + label,
                        "%.1f KiB" % i["kib_per_conn"], i["kib_per_conn"] <= TARGET_KIB))
    return out


def f(x, fmt="%.0f"):
    return "—" if x is None else fmt % x


def cpu_txt(r):
    if r.get("cpu_pct") is None:
        return "—"
    per = ""
    if r.get("rps"):
        per = " (%.1f)" % (float(r["cpu_pct"]) / 100 / r["rps"] * 1e6)
    return "%.0f%%%s" % (float(r["cpu_pct"]), per)


def cmd_targets(path):
    for tid, _, _, met in targets(load_results(path)):
        if met is False:
            print(tid)


def cmd_report(path):
    rows = load_results(path)
    meta = one(rows, kind="meta") or {}
    P = []
    P.append("## Run %s — commit %s" % (meta.get("date", "?"), meta.get("commit", "?")))
    P.append("")
    P.append("- Command: `%s`" % meta.get("command", "?"))
    P.append("- Machine: %s CPUs (`nproc`), %s; Linux %s; %s" % (
        meta.get("nproc"), meta.get("cpu"), meta.get("kernel"), meta.get("os", "")))
    P.append("- Build: `%s` (buildtype %s); pinning: server `taskset -c %s`, load generator "
             "`taskset -c %s`" % (meta.get("build"), meta.get("buildtype"), meta.get("server_cpu"),
                                  meta.get("load_cpu")))
    P.append("- Tools: %s" % meta.get("tools", "?"))
    end = one(rows, kind="meta_end") or {}
    P.append("- Load average (1/5/15 min): at start %s; at end %s; duration %s s" % (
        meta.get("loadavg", "?"), end.get("loadavg", "?"), end.get("elapsed", "?")))
    P.append("  (the `load1` column is read just before each load run; it climbs during the run because "
             "the benchmark itself keeps both cores busy)")
    if meta.get("busy_note"):
        P.append("- **Note:** " + meta["busy_note"])
    P.append("")
    # HTTP/1.1
    W = pick(rows, kind="wrk")
    if W:
        P.append("### HTTP/1.1 — wrk, V2 REST infer `simple` (16+16 INT32), keep-alive, %s s per run"
                 % meta.get("duration"))
        P.append("")
        P.append("| connections | demo req/s | p50 ms | p99 ms | demo CPU (µs/req) | nginx req/s | p50 ms "
                 "| p99 ms | nginx CPU (µs/req) | demo/nginx req/s | load1 |")
        P.append("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for c in sorted({r["conc"] for r in W}):
            d, n = one(W, server="demo", conc=c) or {}, one(W, server="nginx", conc=c) or {}
            q = d["rps"] / n["rps"] if d.get("rps") and n.get("rps") else None
            bad = ""
            if d.get("non2xx") or d.get("socket_errors"):
                bad = " (%s non-2xx, %s socket errors)" % (d.get("non2xx"), d.get("socket_errors"))
            P.append("| %d | %s%s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                c, f(d.get("rps")), bad, f(d.get("p50_ms"), "%.3f"), f(d.get("p99_ms"), "%.3f"),
                cpu_txt(d), f(n.get("rps")), f(n.get("p50_ms"), "%.3f"),
                f(n.get("p99_ms"), "%.3f"), cpu_txt(n), f(q and 100 * q, "%.0f%%"),
                d.get("load1", "")))
        P.append("")
        P.append("nginx: `return 200` with a %s-byte body (the size of the demo's `simple` answer), "
                 "one worker, same wrk script. CPU = server CPU time / wall time of the run "
                 "(100%% = its one core saturated; below that, the server waited for the client "
                 "or for the core, which other processes may share), and the server's CPU time "
                 "per request (µs) — the figure least disturbed by other load." % meta.get("rest_body_bytes"))
        P.append("")
    T = pick(rows, kind="wrk_tfs")
    if T:
        P.append("### HTTP/1.1 — wrk, TF Serving REST `:predict` on `simple` (one instance by name, "
                 "the same numbers), beside V2's")
        P.append("")
        P.append("| connections | TF predict req/s | p50 ms | p99 ms | demo CPU (µs/req) | V2 infer "
                 "req/s | V2 CPU (µs/req) | TF / V2 req/s |")
        P.append("|---:|---:|---:|---:|---:|---:|---:|---:|")
        for c in sorted({r["conc"] for r in T}):
            t, v = one(T, conc=c) or {}, one(W or [], server="demo", conc=c) or {}
            q = t["rps"] / v["rps"] if t.get("rps") and v.get("rps") else None
            bad = ""
            if t.get("non2xx") or t.get("socket_errors"):
                bad = " (%s non-2xx, %s socket errors)" % (t.get("non2xx"), t.get("socket_errors"))
            P.append("| %d | %s%s | %s | %s | %s | %s | %s | %s |" % (
                c, f(t.get("rps")), bad, f(t.get("p50_ms"), "%.3f"), f(t.get("p99_ms"), "%.3f"),
                cpu_txt(t), f(v.get("rps")), cpu_txt(v), f(q and 100 * q, "%.0f%%")))
        P.append("")
    H = pick(rows, kind="h2load")
    if H:
        P.append("### gRPC — h2load, ModelInfer `simple` (pre-encoded, raw_input_contents), %s s per run "
                 "after 1 s warm-up" % meta.get("duration"))
        P.append("")
        P.append("| clients × streams | demo req/s | p50 ms | p99 ms | mean ± sd ms | max ms | demo CPU (µs/req) "
                 "| nginx h2c req/s | p50 ms | p99 ms | nginx CPU (µs/req) | demo/nginx req/s | load1 |")
        P.append("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for c, m in sorted({(r["conc"], r["m"]) for r in H}, key=lambda x: (x[0] * x[1], x[1])):
            d, n = one(H, server="demo", conc=c, m=m) or {}, one(H, server="nginx", conc=c, m=m) or {}
            q = d["rps"] / n["rps"] if d.get("rps") and n.get("rps") else None
            bad = ""
            if d.get("failed") or d.get("non2xx"):
                bad = " (%s failed, %s non-2xx)" % (d.get("failed"), d.get("non2xx"))
            P.append("| %d × %d | %s%s | %s | %s | %s ± %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                c, m, f(d.get("rps")), bad, f(d.get("p50_ms"), "%.3f"), f(d.get("p99_ms"), "%.3f"),
                f(d.get("mean_ms"), "%.3f"), f(d.get("sd_ms"), "%.3f"), f(d.get("max_ms"), "%.2f"),
                cpu_txt(d), f(n.get("rps")), f(n.get("p50_ms"), "%.3f"),
                f(n.get("p99_ms"), "%.3f"), cpu_txt(n), f(q and 100 * q, "%.0f%%"),
                d.get("load1", "")))
        P.append("")
        P.append("h2load 1.52 prints only min/max/mean/sd; p50/p99 are computed from its "
                 "`--log-file` (per-request times of the measured period). nginx h2c reference: "
                 "`return 200` with a %s-byte body (the demo's gRPC answer incl. the 5-byte prefix) "
                 "plus a `grpc-status` trailer (`add_trailer`), so both send HEADERS + DATA + "
                 "trailing HEADERS." % meta.get("grpc_body_bytes"))
        P.append("")
    GW, GH = pick(rows, kind="wrk_grps"), pick(rows, kind="h2load_grps")
    if GW or GH:
        P.append("### grps — Predict str_data (echo)")
        P.append("")
        P.append("The demo's default grps model `echo` answers the payload it got: `{\"str_data\":\"hello "
                 "grps\"}` to `POST /grps/v1/infer/predict` (wrk, bench/grps_predict.lua) and a "
                 "GrpsMessage with str_data = \"hello grps\" to `grps.protos.v1.GrpsService/Predict` "
                 "(h2load, the same settings as ModelInfer above), beside V2's `simple` rows of the "
                 "same run (a different model and payload: 16+16 INT32 in, 2×16 INT32 out).")
        P.append("")
    if GW:
        P.append("| connections | grps HTTP req/s | p50 ms | p99 ms | demo CPU (µs/req) | V2 REST "
                 "req/s | V2 CPU (µs/req) | grps / V2 req/s |")
        P.append("|---:|---:|---:|---:|---:|---:|---:|---:|")
        for c in sorted({r["conc"] for r in GW}):
            t, v = one(GW, conc=c) or {}, one(W or [], server="demo", conc=c) or {}
            q = t["rps"] / v["rps"] if t.get("rps") and v.get("rps") else None
            bad = ""
            if t.get("non2xx") or t.get("socket_errors"):
                bad = " (%s non-2xx, %s socket errors)" % (t.get("non2xx"), t.get("socket_errors"))
            P.append("| %d | %s%s | %s | %s | %s | %s | %s | %s |" % (
                c, f(t.get("rps")), bad, f(t.get("p50_ms"), "%.3f"), f(t.get("p99_ms"), "%.3f"),
                cpu_txt(t), f(v.get("rps")), cpu_txt(v), f(q and 100 * q, "%.0f%%")))
        P.append("")
    if GH:
        P.append("| clients × streams | grps gRPC req/s | p50 ms | p99 ms | demo CPU (µs/req) | V2 "
                 "ModelInfer req/s | V2 CPU (µs/req) | grps / V2 req/s |")
        P.append("|---:|---:|---:|---:|---:|---:|---:|---:|")
        for c, m in sorted({(r["conc"], r["m"]) for r in GH}, key=lambda x: (x[0] * x[1], x[1])):
            t, v = one(GH, conc=c, m=m) or {}, one(H or [], server="demo", conc=c, m=m) or {}
            q = t["rps"] / v["rps"] if t.get("rps") and v.get("rps") else None
            bad = ""
            if t.get("failed") or t.get("non2xx"):
                bad = " (%s failed, %s non-2xx)" % (t.get("failed"), t.get("non2xx"))
            P.append("| %d × %d | %s%s | %s | %s | %s | %s | %s | %s |" % (
                c, m, f(t.get("rps")), bad, f(t.get("p50_ms"), "%.3f"), f(t.get("p99_ms"), "%.3f"),
                cpu_txt(t), f(v.get("rps")), cpu_txt(v), f(q and 100 * q, "%.0f%%")))
        P.append("")
    L = pick(rows, kind="large") + pick(rows, kind="large_h2load")
    mc = one(rows, kind="memcpy")
    if L or mc:
        P.append("### Large tensors — 16 MiB FP32 `identity_fp32` [1, 4194304] round trip")
        P.append("")
        P.append("| path | client | answer | round trip (median) | MB/s (payload once) | MB/s (both "
                 "directions) | demo CPU per round trip | payload / demo CPU time | client CPU per "
                 "round trip | demo VmHWM | notes |")
        P.append("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|")
        for r in L:
            notes = []
            if r.get("mode") == "json":
                notes.append("request %.1f MB, response %.1f MB of JSON text" % (
                    r.get("request_bytes", 0) / 1e6, r.get("response_bytes", 0) / 1e6))
            if r.get("mode") == "binary":
                notes.append("request %d bytes (JSON header + tensor), Inference-Header-Content-"
                             "Length; body read in place, tensor used in place, output written "
                             "by reference" % r.get("request_bytes", 0))
            if str(r.get("mode", "")).startswith("shm"):
                notes.append("input and output in two registered POSIX shared memory regions; "
                             "request %d bytes, response %d bytes (names and sizes only); with the "
                             "client's own copy in and copy out (%.1f ms): %s MB/s" % (
                                 r.get("request_bytes", 0), r.get("response_bytes", 0),
                                 1000 * r.get("client_copies_median_s", 0),
                                 f(r.get("mb_per_s_with_client_copies"))))
            if "raw_offset_in_message" in r or "raw_offset" in r:
                off = r.get("raw_offset_in_message", r.get("raw_offset"))
                notes.append("raw contents at message offset %s (the message buffer is "
                             "end-aligned, so the last raw tensor is used in place either way)"
                             % off)
            status = ("HTTP %s" % r["status"]) if "status" in r else "OK"
            if r.get("kind") == "large_h2load":
                status = "%s/%s 2xx" % (r.get("succeeded"), r.get("requests"))
            mbps, mbps2 = f(r.get("mb_per_s")), f(r.get("mb_per_s_both_directions"))
            cms = r.get("cpu_ms_per_rt")
            per_cpu = "n/a" if not cms else f(16777216 / (cms / 1000) / 1e6)
            P.append("| %s | %s | %s | %s ms | %s | %s | %s | %s | %s | %s | %s |" % (
                r.get("mode"), r.get("client", "python (%s)" % ("grpcio" if str(r.get("mode")).startswith("grpc") else "raw socket")),
                status, f(r.get("median_s") and r["median_s"] * 1000, "%.1f"), mbps, mbps2,
                f(cms, "%.1f ms"), per_cpu, f(r.get("client_cpu_ms_per_rt"), "%.1f ms"),
                f(r.get("hwm_kib") and r["hwm_kib"] / 1024, "%.1f MiB"), "; ".join(notes)))
        if mc:
            P.append("| memcpy 16 MiB (reference) | bench/memcpy_bw.c | — | %.3f ms | %s | — | — | — | — | — | one "
                     "core, both buffers pre-faulted |" % (mc["ms_per_copy"], f(mc["gb_per_s"] * 1000)))
            if mc.get("fresh_ms_per_copy"):
                P.append("| memcpy 16 MiB into fresh memory | bench/memcpy_bw.c | — | %.3f ms | %s | — | — "
                         "| — | — | — | mmap + copy + munmap: 4 KiB page faults |" % (
                             mc["fresh_ms_per_copy"], f(mc["fresh_gb_per_s"] * 1000)))
            if mc.get("fresh_thp_ms_per_copy"):
                P.append("| memcpy 16 MiB into fresh huge pages | bench/memcpy_bw.c | — | %.3f ms | %s | — "
                         "| — | — | — | — | as above, 2 MiB-aligned + madvise(MADV_HUGEPAGE) |" % (
                             mc["fresh_thp_ms_per_copy"], f(mc["fresh_thp_gb_per_s"] * 1000)))
        P.append("")
        P.append("MB/s = 16,777,216 tensor bytes / median round-trip time (10^6 bytes/s); 'both "
                 "directions' counts the tensor going up and coming back. 'demo CPU' is the demo's "
                 "CPU time per round trip (all threads, scheduler accounting); payload / that time "
                 "is what the server side could sustain on a core of its own; 'client CPU' is the "
                 "load generator's (when it is close to the round trip, the client is the "
                 "bottleneck — h2load and grpcio are; bench/grpc_rt.c is a lean C client that "
                 "is not). h2load rows: median from its --log-file; `-f 4M` makes h2load "
                 "advertise SETTINGS_MAX_FRAME_SIZE 4 MiB as grpcio does (the answer then comes in "
                 "1 MiB DATA frames; h2load still sends 16 KiB ones). VmHWM is reset "
                 "(`/proc/PID/clear_refs` = 5) before each path, so it is that path's peak.")
        P.append("")
    I = pick(rows, kind="idle")
    if I:
        P.append("### Memory — %s idle connections to a fresh demo" % I[0]["connections"])
        P.append("")
        P.append("| connections | RSS before | RSS with them open | KiB per connection | VmHWM |")
        P.append("|---|---:|---:|---:|---:|")
        names = {"h1": "HTTP/1.1, accepted, nothing sent", "h1req": "HTTP/1.1 keep-alive, after one "
                 "GET /v2/health/live each", "h2": "h2c, preface + SETTINGS exchanged"}
        for r in I:
            P.append("| %s | %d KiB | %d KiB | %.1f | %d KiB |" % (
                names.get(r["proto"], r["proto"]), r["rss_before_kib"], r["rss_after_kib"],
                r["kib_per_conn"], r["hwm_after_kib"]))
        P.append("")
        P.append("User-space RSS only (VmRSS of the demo); the kernel's socket memory is not in it.")
        P.append("")
    T = targets(rows)
    P.append("### Targets")
    P.append("")
    P.append("| target | measured | |")
    P.append("|---|---|---|")
    for _, desc, meas, met in T:
        P.append("| %s | %s | %s |" % (desc, meas, "met" if met else "**missed**"))
    P.append("")
    PR = pick(rows, kind="profile")
    for p in PR:
        P.append("### Profile: %s" % p["title"])
        P.append("")
        P.append("`%s`" % p["command"])
        P.append("")
        try:
            with open(p["file"]) as fh:
                txt = fh.read().rstrip()
        except OSError:
            txt = "(profile output missing)"
        P.append("```")
        P.append(txt)
        P.append("```")
        P.append("")
    print("\n".join(P))


def main(a):
    if len(a) >= 2 and a[0] == "gen":
        return cmd_gen(a[1])
    if len(a) >= 3 and a[0] == "check":
        return cmd_check(int(a[1]), a[2])
    if len(a) >= 5 and a[0] == "large":
        return cmd_large(int(a[1]), a[2], a[3], int(a[4]), int(a[5]) if len(a) > 5 else 0)
    if len(a) >= 5 and a[0] == "idle":
        return cmd_idle(int(a[1]), int(a[2]), int(a[3]), a[4])
    if len(a) >= 3 and a[0] == "parse":
        return cmd_parse(a[1], a[2], a[3:])
    if len(a) == 2 and a[0] == "targets":
        return cmd_targets(a[1])
    if len(a) == 2 and a[0] == "report":
        return cmd_report(a[1])
    print(__doc__, file=sys.stderr)
    sys.exit(2)


if __name__ == "__main__":
    main(sys.argv[1:])
