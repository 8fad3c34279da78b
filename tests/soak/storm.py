"""A storm for the sanitizers (issue #34): one demo, started here with --threads 2 (two loops, one
group: models, statistics and the shared memory registry are shared), and for SECONDS, at once:

  churn     unload / load of simple_int8 over REST and over gRPC (the two loops load and unload
            at once), identity_int16 over gRPC, a config override now and then, the index
  stats     GET /metrics, /v2/models/stats, /v2/models/{m}/stats (the churned model too) and
            gRPC ModelStatistics, in loops
  infer     V2 infer over HTTP/1.1 (keep-alive and fresh connections) and gRPC, on simple
            (answers checked) and on the churned simple_int8 (checked when it answers, 404 /
            NOT_FOUND while unloaded); gRPC calls on the slow model cancelled midway
  sse       /custom/sse clients that read it all (checked), read slowly, stop reading and close,
            stop reading until the server's send timeout cuts them, and HTTP/2 streams closed or
            reset midway
  gzip      gzip- and deflate-coded infer bodies (answers checked), corrupt and truncated ones
            (400), and bombs (60 MiB of spaces in 60 KB: 413 at --max-body-bytes, or 503 when
            the receiving budget is spent)
  shm       slow requests (REST and gRPC) with an input or an output in a POSIX shm region
            whose object is truncated to 0 before or during the request (400 naming the shrunk
            region, or a right answer), or unregistered while the request runs
  features  the features of issue 29/30 at once, on two loops: ensembles (simple_ensemble, the
            fan-out/fan-in fan_ensemble), bls_simple (a backend's nested requests), cost_cached
            (response cache hits on a few rows, misses on fresh ones) and slow_fan_ensemble cut
            by its deadline (504), while the trace extension's global and per-model settings
            change under them (levels, rates, counts)
  rss       the demo's VmRSS every second

Then SIGTERM. The demo must exit 0 with nothing in its stderr from a sanitizer (ThreadSanitizer,
AddressSanitizer, LeakSanitizer, UBSan's "runtime error:"), every answer checked must be right
and every status one the kind allows. Prints a summary (requests per kind, statuses seen, peak
RSS); exits 1 otherwise, after saving the demo's whole stderr to
/tmp/storm-report-<sanitizer>-<time>.log when there is a report or a crash.

    storm.py [--demo PATH | --build-dir DIR] [SECONDS]      (default 120; BUILD_DIR as soak.sh)

The sanitizer options come from the environment (scripts/storm.sh sets them).
"""
import argparse
import collections
import datetime
import gzip
import json
import os
import random
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))

import grpc  # noqa: E402
import requests  # noqa: E402

import h2raw  # noqa: E402
from grpc_stubs import add_input, encode_raw, load_stubs  # noqa: E402

T = 30.0  # every client timeout: the TSan demo is several times slower than a release one
SLOW_MS = 300
CHURNED = "simple_int8"
REPORT_RE = re.compile(r"WARNING: ThreadSanitizer|ERROR: AddressSanitizer|ERROR: LeakSanitizer|"
                       r"LeakSanitizer|runtime error:|ERROR: ThreadSanitizer")
DEMO_FLAGS = ["--threads", "2", "--shared-memory", "--listen", "127.0.0.1:0",
              "--drain-timeout-ms", "5000",
              "--load-delay-ms", "20",            # loads wait on a timer: ops overlap
              "--send-timeout-ms", "3000",        # SSE clients that stop reading are cut
              "--max-queued-stream-bytes", "65536", "--max-queued-conn-bytes", "262144",
              "--max-body-bytes", "8000000",      # a bomb stops at 8 MB decoded (413)
              "--max-receiving-bytes", str(32 << 20)]  # ... or finds the budget spent (503)

# ---- bookkeeping -------------------------------------------------------------------------------
lock = threading.Lock()
seen = collections.defaultdict(collections.Counter)  # kind -> outcome -> n
unexpected = collections.defaultdict(collections.Counter)
samples = []  # a few unexpected outcomes, with what was said
STOP = [0.0]


def running():
    return time.monotonic() < STOP[0]


def note(kind, outcome, allowed, detail=""):
    """Count outcome for kind; one outside allowed is an error of the storm."""
    outcome = str(outcome)
    with lock:
        seen[kind][outcome] += 1
        if outcome not in allowed:
            unexpected[kind][outcome] += 1
            if len(samples) < 40:
                samples.append("%s: %s %s" % (kind, outcome, str(detail)[:300]))


def exc_name(e):
    return "exc:" + type(e).__name__


class Target:
    host = "127.0.0.1"
    port = 0


def url(path):
    return "http://%s:%d%s" % (Target.host, Target.port, path)


def guarded(name, fn):
    """A worker: an exception that escapes is counted (and is an error), never silent."""
    def run():
        while running():
            try:
                fn()
            except Exception as e:  # noqa: BLE001
                note("escaped_" + name, exc_name(e), (), repr(e))
                time.sleep(0.2)
    return name, run


def jdata(resp):
    try:
        return resp.json()
    except ValueError:
        return None


def err_text(resp):
    j = jdata(resp)
    return j.get("error", "") if isinstance(j, dict) else resp.text[:200]


# ---- repository churn --------------------------------------------------------------------------
def churn_rest():
    s = requests.Session()
    while running():
        r = s.post(url("/v2/repository/models/%s/unload" % CHURNED), json={}, timeout=T)
        note("repo_unload_rest", r.status_code, ("200",), r.text)
        time.sleep(random.uniform(0, 0.05))
        body = {}
        if random.random() < 0.2:
            body = {"parameters": {"config": json.dumps({"max_batch_size": random.randint(1, 8)})}}
        r = s.post(url("/v2/repository/models/%s/load" % CHURNED), json=body, timeout=T)
        note("repo_load_rest", r.status_code, ("200",), r.text)
        if random.random() < 0.2:
            r = s.post(url("/v2/repository/index"), json={}, timeout=T)
            ok = r.status_code == 200 and isinstance(jdata(r), list)
            note("repo_index_rest", r.status_code if ok else "bad", ("200",), r.text)
        time.sleep(random.uniform(0, 0.05))
        if random.random() < 0.1:  # a fresh connection: the other loop, maybe
            s.close()
            s = requests.Session()
    s.close()


def churn_grpc(pb):
    with grpc.insecure_channel("%s:%d" % (Target.host, Target.port)) as ch:
        stub = pb.pb_grpc.GRPCInferenceServiceStub(ch)
        while running():
            model = CHURNED if random.random() < 0.7 else "identity_int16"
            for op, req in (("unload", pb.pb.RepositoryModelUnloadRequest(model_name=model)),
                            ("load", pb.pb.RepositoryModelLoadRequest(model_name=model))):
                fn = stub.RepositoryModelUnload if op == "unload" else stub.RepositoryModelLoad
                try:
                    fn(req, timeout=T)
                    note("repo_%s_grpc" % op, "grpc:OK", ("grpc:OK",))
                except grpc.RpcError as e:
                    note("repo_%s_grpc" % op, "grpc:" + e.code().name, (), e.details())
                time.sleep(random.uniform(0, 0.08))
            if random.random() < 0.2:
                try:
                    stub.RepositoryIndex(pb.pb.RepositoryIndexRequest(ready=True), timeout=T)
                    note("repo_index_grpc", "grpc:OK", ("grpc:OK",))
                except grpc.RpcError as e:
                    note("repo_index_grpc", "grpc:" + e.code().name, (), e.details())


# ---- metrics and statistics --------------------------------------------------------------------
def stats_rest():
    s = requests.Session()
    paths = [("metrics", "/metrics"), ("stats_all", "/v2/models/stats"),
             ("stats_churned", "/v2/models/%s/stats" % CHURNED),
             ("stats_churned", "/v2/models/%s/versions/1/stats" % CHURNED),
             ("stats_simple", "/v2/models/simple/stats"), ("stats_slow", "/v2/models/slow/stats")]
    while running():
        kind, path = random.choice(paths)
        r = s.get(url(path), timeout=T)
        if kind == "metrics":
            ok = r.status_code == 200 and b"isv_inferences_total" in r.content
            note(kind, r.status_code if ok else "bad", ("200",), r.text[:200])
        elif kind == "stats_churned":  # 404 while it is unloaded
            note(kind, r.status_code, ("200", "404"), r.text)
        else:
            ok = r.status_code == 200 and "model_stats" in (jdata(r) or {})
            note(kind, r.status_code if ok else "bad", ("200",), r.text)
        if random.random() < 0.05:
            s.close()
            s = requests.Session()
        time.sleep(0.005)
    s.close()


def stats_grpc(pb):
    with grpc.insecure_channel("%s:%d" % (Target.host, Target.port)) as ch:
        stub = pb.pb_grpc.GRPCInferenceServiceStub(ch)
        while running():
            name = random.choice(["", CHURNED, "simple", "identity_int16"])
            try:
                stub.ModelStatistics(pb.pb.ModelStatisticsRequest(name=name), timeout=T)
                note("stats_grpc", "grpc:OK", ("grpc:OK",))
            except grpc.RpcError as e:  # an unloaded model: NOT_FOUND
                allowed = ("grpc:NOT_FOUND",) if name in (CHURNED, "identity_int16") else ()
                note("stats_grpc", "grpc:" + e.code().name, allowed, e.details())
            time.sleep(0.005)


# ---- plain inference ---------------------------------------------------------------------------
A = list(range(16))
B = [i * 7 - 50 for i in range(16)]
A8 = [i * 9 - 60 for i in range(16)]
B8 = [100 - i * 13 for i in range(16)]


def wrap8(x):
    return (x + 128) % 256 - 128


def simple_json(dt="INT32", a=A, b=B):
    return {"inputs": [{"name": "INPUT0", "datatype": dt, "shape": [1, 16], "data": a},
                       {"name": "INPUT1", "datatype": dt, "shape": [1, 16], "data": b}]}


def simple_ok(j, a=A, b=B, wrap=lambda x: x):
    try:
        outs = {o["name"]: o["data"] for o in j["outputs"]}
        return (outs["OUTPUT0"] == [wrap(x + y) for x, y in zip(a, b)] and
                outs["OUTPUT1"] == [wrap(x - y) for x, y in zip(a, b)])
    except (KeyError, TypeError):
        return False


def infer_rest():
    s = requests.Session()
    while running():
        if random.random() < 0.5:
            r = s.post(url("/v2/models/simple/infer"), json=simple_json(), timeout=T)
            good = r.status_code == 200 and simple_ok(jdata(r))
            note("infer_rest_simple", "200" if good else "wrong:%d" % r.status_code, ("200",),
                 r.text)
        else:
            r = s.post(url("/v2/models/%s/infer" % CHURNED), json=simple_json("INT8", A8, B8),
                       timeout=T)
            if r.status_code == 200:
                good = simple_ok(jdata(r), A8, B8, wrap8)
                note("infer_rest_churned", "200" if good else "wrong", ("200",), r.text)
            else:
                # unloaded: 404; being loaded again: 503 "... is not ready"
                note("infer_rest_churned", r.status_code, ("404", "503"), r.text)
        if random.random() < 0.1:
            s.close()
            s = requests.Session()
    s.close()


def int8_request(pb, model):
    req = pb.pb.ModelInferRequest(model_name=model)
    add_input(req, "INPUT0", "INT8", [1, 16], raw=struct.pack("<16b", *A8))
    add_input(req, "INPUT1", "INT8", [1, 16], raw=struct.pack("<16b", *B8))
    return req


def int32_request(pb):
    req = pb.pb.ModelInferRequest(model_name="simple")
    add_input(req, "INPUT0", "INT32", [1, 16], raw=encode_raw("INT32", A))
    add_input(req, "INPUT1", "INT32", [1, 16], raw=encode_raw("INT32", B))
    return req


def grpc_outputs(resp, fmt):
    return {o.name: list(struct.unpack(fmt, raw))
            for o, raw in zip(resp.outputs, resp.raw_output_contents)}


def infer_grpc(pb):
    with grpc.insecure_channel("%s:%d" % (Target.host, Target.port)) as ch:
        stub = pb.pb_grpc.GRPCInferenceServiceStub(ch)
        while running():
            roll = random.random()
            if roll < 0.45:
                try:
                    o = grpc_outputs(stub.ModelInfer(int32_request(pb), timeout=T), "<16i")
                    good = (o.get("OUTPUT0") == [x + y for x, y in zip(A, B)] and
                            o.get("OUTPUT1") == [x - y for x, y in zip(A, B)])
                    note("infer_grpc_simple", "grpc:OK" if good else "wrong", ("grpc:OK",), o)
                except grpc.RpcError as e:
                    note("infer_grpc_simple", "grpc:" + e.code().name, (), e.details())
            elif roll < 0.9:
                try:
                    o = grpc_outputs(stub.ModelInfer(int8_request(pb, CHURNED), timeout=T),
                                     "<16b")
                    good = (o.get("OUTPUT0") == [wrap8(x + y) for x, y in zip(A8, B8)] and
                            o.get("OUTPUT1") == [wrap8(x - y) for x, y in zip(A8, B8)])
                    note("infer_grpc_churned", "grpc:OK" if good else "wrong", ("grpc:OK",), o)
                except grpc.RpcError as e:
                    note("infer_grpc_churned", "grpc:" + e.code().name,
                         ("grpc:NOT_FOUND", "grpc:UNAVAILABLE"), e.details())
            else:  # a slow call cancelled midway
                req = pb.pb.ModelInferRequest(model_name="slow")
                add_input(req, "INPUT0", "INT32", [1], raw=encode_raw("INT32", [SLOW_MS]))
                fut = stub.ModelInfer.future(req, timeout=T)
                time.sleep(random.uniform(0.01, 0.2))
                fut.cancel()
                note("infer_grpc_cancelled", "cancelled", ("cancelled",))


# ---- Server-Sent Events ------------------------------------------------------------------------
def sse_request(n, extra=""):
    return ("POST /custom/sse?n=%d%s HTTP/1.1\r\nHost: storm\r\nContent-Length: 0\r\n"
            "Connection: close\r\n\r\n" % (n, extra)).encode()


def dechunk(body):
    out, rest = b"", body
    while rest:
        size_line, rest = rest.split(b"\r\n", 1)
        size = int(size_line, 16)
        if size == 0:
            break
        out += rest[:size]
        rest = rest[size + 2:]
    return out


def events_ok(body, n):
    events = [e for e in body.split(b"\n\n") if e.startswith(b"data: ")]
    want = [b"data: %d" % i for i in range(n)] + [b"data: [DONE]"]
    return events == want


def sse_socket(small_window):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if small_window:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.settimeout(T)
    s.connect((Target.host, Target.port))
    return s


def read_all(s, pause_every=0, pause=0.0):
    got, k = b"", 0
    while True:
        chunk = s.recv(65536)
        if not chunk:
            return got
        got += chunk
        k += 1
        if pause_every and k % pause_every == 0:
            time.sleep(pause)


def sse_once(mode):
    if mode == "full":
        n = random.randint(50, 800)
        with sse_socket(False) as s:
            s.sendall(sse_request(n))
            raw = read_all(s)
        head, _, body = raw.partition(b"\r\n\r\n")
        good = head.startswith(b"HTTP/1.1 200") and events_ok(dechunk(body), n)
        note("sse_full", "200" if good else "wrong", ("200",), raw[:200])
    elif mode == "slow":
        n = random.randint(200, 1500)
        with sse_socket(True) as s:
            s.sendall(sse_request(n, "&pad=100"))
            raw = read_all(s, 4, 0.01)
        head, _, body = raw.partition(b"\r\n\r\n")
        events = [e.split(b" ")[1] for e in dechunk(body).split(b"\n\n") if e.startswith(b"data")]
        good = head.startswith(b"HTTP/1.1 200") and events == \
            [b"%d" % i for i in range(n)] + [b"[DONE]"]
        note("sse_slow", "200" if good else "wrong", ("200",), raw[:200])
    elif mode == "stop":  # reads a little, stops reading, closes before any timeout
        with sse_socket(True) as s:
            s.sendall(sse_request(100000, "&pad=1000"))
            s.recv(random.choice([1, 4096, 65536]))
            time.sleep(random.uniform(0, 1.0))
        note("sse_stop", "closed", ("closed",))
    elif mode == "stuck":  # never reads again: the send timeout (3 s) cuts it
        with sse_socket(True) as s:
            s.sendall(sse_request(100000, "&pad=4000"))
            s.recv(1)
            time.sleep(6.0)
            # what was queued, then the end of the connection; reading makes progress again,
            # so a stream the server did not cut goes on: 64 MiB of it is "not cut"
            cut, got, deadline = False, 0, time.monotonic() + 20
            try:
                while got < (64 << 20) and time.monotonic() < deadline:
                    chunk = s.recv(1 << 20)
                    if not chunk:
                        cut = True
                        break
                    got += len(chunk)
            except OSError:
                cut = True
        # not_cut is allowed: under a sanitizer and the storm's load the producer may not have
        # filled the socket buffers within the 6 s — nothing queued, nothing to cut (the cut
        # itself is checked where it is deterministic: tests/integration/test_backpressure.py)
        note("sse_stuck", "cut" if cut else "not_cut", ("cut", "not_cut"))
    elif mode == "h2":  # an HTTP/2 stream: read some, then RST_STREAM or close
        with h2raw.H2Conn(Target, settings={h2raw.INITIAL_WINDOW_SIZE: 16384},
                          auto_window=random.random() < 0.5, timeout=T) as c:
            sid = c.request(h2raw.rest_headers(Target, "POST", "/custom/sse?n=100000&pad=500"))
            c.pump(random.uniform(0.05, 0.5))
            if random.random() < 0.5:
                c.rst(sid)
                c.pump(0.05)
        note("sse_h2", "closed", ("closed",))


def sse_worker(modes):
    def sse():
        while running():
            mode = random.choice(modes)
            try:
                sse_once(mode)
            except (OSError, h2raw.ConnectionClosed) as e:
                allowed = () if mode in ("full", "slow") else (exc_name(e),)
                note("sse_" + mode, exc_name(e), allowed, repr(e))
            time.sleep(0.02)
    return sse


# ---- coded bodies ------------------------------------------------------------------------------
def raw_deflate(data):
    c = zlib.compressobj(6, zlib.DEFLATED, -15)
    return c.compress(data) + c.flush()


BOMB = gzip.compress(b" " * (60 << 20), compresslevel=9)


def coded():
    s = requests.Session()
    plain = json.dumps(simple_json()).encode()
    good = gzip.compress(plain)
    cases = [("gzip_ok", "gzip", good), ("deflate_ok", "deflate", zlib.compress(plain)),
             ("deflate_ok", "deflate", raw_deflate(plain)),
             ("gzip_corrupt", "gzip", good[:len(good) // 2]),
             ("gzip_corrupt", "gzip", good[:20] + bytes(b ^ 0x55 for b in good[20:40]) + good[40:]),
             ("gzip_corrupt", "gzip", good + b"junk"), ("gzip_corrupt", "gzip", b"not gzip"),
             ("gzip_bomb", "gzip", BOMB)]
    while running():
        kind, coding, data = random.choice(cases)
        try:
            r = s.post(url("/v2/models/simple/infer"), data=data, timeout=T,
                       headers={"Content-Encoding": coding, "Content-Type": "application/json"})
        except requests.ConnectionError as e:
            # a bomb answered 413 and the connection closed while the client still sent
            note(kind, "reset", ("reset",) if kind == "gzip_bomb" else (), repr(e))
            s.close()
            s = requests.Session()
            continue
        if kind.endswith("_ok"):
            ok = r.status_code == 200 and simple_ok(jdata(r))
            # the bombs of the other thread may hold the receiving budget: 503
            note(kind, r.status_code if r.status_code != 200 or ok else "wrong", ("200", "503"),
                 r.text)
        elif kind == "gzip_corrupt":
            note(kind, r.status_code, ("400", "503"), r.text)
        else:
            note(kind, r.status_code, ("413", "503"), r.text)
        if random.random() < 0.2:
            s.close()
            s = requests.Session()
    s.close()


# ---- shared memory shrinks ---------------------------------------------------------------------
SHM = "/v2/systemsharedmemory"


def shm_worker(pb, proto, wid):
    """One slow request per turn with its input, its output or both in a fresh region; the
    object is truncated to 0 before the request, during it, or never; or the region is
    unregistered while the request runs."""
    counter = [0]
    conn = {}  # "sess", "ch", "stub": made anew by each run of shm()

    def register(region, key):
        sess, stub = conn["sess"], conn["stub"]
        if proto == "rest":
            r = sess.post(url("%s/region/%s/register" % (SHM, region)), timeout=T,
                          json={"key": key, "offset": 0, "byte_size": 128})
            return r.status_code == 200, r.text
        try:
            stub.SystemSharedMemoryRegister(pb.pb.SystemSharedMemoryRegisterRequest(
                name=region, key=key, offset=0, byte_size=128), timeout=T)
            return True, ""
        except grpc.RpcError as e:
            return False, e.details()

    def unregister(region, side=False):
        sess, stub = conn["sess"], conn["stub"]
        if proto == "rest":  # a Session is one thread's: the side thread posts on its own
            r = (requests if side else sess).post(url("%s/region/%s/unregister" % (SHM, region)), timeout=T)
            return r.status_code == 200
        try:
            stub.SystemSharedMemoryUnregister(
                pb.pb.SystemSharedMemoryUnregisterRequest(name=region), timeout=T)
            return True
        except grpc.RpcError:
            return False

    def why(bad_request, msg, otherwise):
        if bad_request and "was shrunk below" in msg:
            return "shrunk"
        if bad_request and re.search(r"Unable to find (system )?shared memory region", msg):
            return "unregistered"
        return otherwise

    def infer(region, in_shm, out_shm):
        """('ok', value or None) | ('shrunk', msg) | (other status, msg)"""
        sess, stub = conn["sess"], conn["stub"]
        if proto == "rest":
            inp = {"name": "INPUT0", "datatype": "INT32", "shape": [1]}
            if in_shm:
                inp["parameters"] = {"shared_memory_region": region, "shared_memory_byte_size": 4}
            else:
                inp["data"] = [SLOW_MS]
            body = {"inputs": [inp]}
            if out_shm:
                body["outputs"] = [{"name": "OUTPUT0", "parameters": {
                    "shared_memory_region": region, "shared_memory_byte_size": 4,
                    "shared_memory_offset": 64}}]
            r = sess.post(url("/v2/models/slow/infer"), json=body, timeout=T)
            if r.status_code == 200:
                o = jdata(r)["outputs"][0]
                return "ok", (o.get("data") or [None])[0]
            msg = err_text(r)
            return why(r.status_code == 400, msg, str(r.status_code)), msg
        req = pb.pb.ModelInferRequest(model_name="slow")
        t = add_input(req, "INPUT0", "INT32", [1],
                      raw=None if in_shm else encode_raw("INT32", [SLOW_MS]))
        if in_shm:
            t.parameters["shared_memory_region"].string_param = region
            t.parameters["shared_memory_byte_size"].int64_param = 4
        if out_shm:
            o = req.outputs.add()
            o.name = "OUTPUT0"
            o.parameters["shared_memory_region"].string_param = region
            o.parameters["shared_memory_byte_size"].int64_param = 4
            o.parameters["shared_memory_offset"].int64_param = 64
        try:
            resp = stub.ModelInfer(req, timeout=T)
        except grpc.RpcError as e:
            return why(e.code() == grpc.StatusCode.INVALID_ARGUMENT, e.details() or "",
                       "grpc:" + e.code().name), e.details()
        raw = resp.raw_output_contents  # an output in a region has no contents here
        return "ok", (struct.unpack("<i", raw[0])[0] if raw and len(raw[0]) == 4 else None)

    def one():
        counter[0] += 1
        name = "isv-storm-%d-%s%d-%d" % (os.getpid(), proto, wid, counter[0])
        path, key, region = "/dev/shm/" + name, "/" + name, name
        in_shm, out_shm = random.choice([(True, False), (False, True), (True, True)])
        how = random.choice(["before", "during", "during", "during", "never", "unregister"])
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
        try:
            os.ftruncate(fd, 4096)
            os.pwrite(fd, struct.pack("<i", SLOW_MS), 0)
            ok, why = register(region, key)
            if not ok:
                note("shm_%s_register" % proto, "refused", (), why)
                return
            if how == "before":
                os.ftruncate(fd, 0)
            side = None
            if how in ("during", "unregister"):
                delay = random.uniform(0, (SLOW_MS + 100) / 1000.0)
                act = (lambda: os.ftruncate(fd, 0)) if how == "during" else \
                    (lambda: unregister(region, side=True))
                side = threading.Thread(target=lambda: (time.sleep(delay), act()))
                side.start()
            outcome, detail = infer(region, in_shm, out_shm)
            if side:
                side.join()
            kind = "shm_%s_%s" % (proto, how)
            if outcome == "ok":
                if out_shm:  # written into the region (still mapped after an unregister)
                    got = os.pread(fd, 4, 64)
                    value = struct.unpack("<i", got)[0] if len(got) == 4 else None
                    good = value == SLOW_MS or (how == "during" and value is None)
                else:
                    good = detail == SLOW_MS
                note(kind, "ok" if good else "wrong", ("ok",), detail)
            else:
                # truncated before: a shm input or output cannot be used. During: either.
                # Unregistered during: the request found the region, or did not
                allowed = {"before": ("shrunk",), "during": ("shrunk",),
                           "unregister": ("unregistered",)}.get(how, ())
                note(kind, outcome, allowed, detail)
            unregister(region)
        finally:
            os.close(fd)
            os.unlink(path)

    def shm():
        conn["sess"] = requests.Session()
        conn["ch"] = grpc.insecure_channel("%s:%d" % (Target.host, Target.port))
        conn["stub"] = pb.pb_grpc.GRPCInferenceServiceStub(conn["ch"])
        try:
            while running():
                one()
        finally:
            conn["sess"].close()
            conn["ch"].close()
    return shm


# ---- the demo ----------------------------------------------------------------------------------
# ---- issue 29/30 features: ensembles, nested requests, the response cache, trace settings ----
SEQ16 = list(range(16))
ONES16 = [1] * 16


def features():
    s = requests.Session()
    while running():
        k = random.random()
        if k < 0.25:
            model = random.choice(("simple_ensemble", "bls_simple"))
            r = s.post(url("/v2/models/%s/infer" % model), json={"inputs": [
                {"name": "INPUT0", "datatype": "INT32", "shape": [1, 16], "data": SEQ16},
                {"name": "INPUT1", "datatype": "INT32", "shape": [1, 16], "data": ONES16}]},
                timeout=T)
            note("features_" + model, r.status_code, ("200",), r.text)
        elif k < 0.4:
            r = s.post(url("/v2/models/fan_ensemble/infer"), json={"inputs": [
                {"name": "INPUT", "datatype": "FP32", "shape": [1, 16], "data": SEQ16}]},
                timeout=T)
            good = r.status_code == 200 and jdata(r)["outputs"][0]["data"] == \
                [2 * x + x * x for x in SEQ16]
            note("features_fan", "200" if good else "wrong:%d" % r.status_code, ("200",), r.text)
        elif k < 0.7:
            row = [random.choice((1.0, 2.0)) if random.random() < 0.7 else random.random()
                   for _ in range(4)]  # mostly a few rows (hits), some fresh ones (misses)
            r = s.post(url("/v2/models/cost_cached/infer"), json={"inputs": [
                {"name": "INPUT0", "datatype": "FP32", "shape": [1, 4], "data": row}]}, timeout=T)
            note("features_cache", r.status_code, ("200",), r.text)
        elif k < 0.75:
            r = s.post(url("/v2/models/slow_fan_ensemble/infer"), json={"inputs": [
                {"name": "INPUT0", "datatype": "INT32", "shape": [1], "data": [2000]}],
                "parameters": {"timeout": random.choice((50000, 200000))}}, timeout=T)
            note("features_deadline", r.status_code, ("504",), r.text)
        else:
            target = random.choice(("/v2/trace/setting", "/v2/models/simple/trace/setting",
                                    "/v2/models/fan_ensemble/trace/setting"))
            body = random.choice(({"trace_level": ["TIMESTAMPS"], "trace_rate": "1"},
                                  {"trace_level": ["OFF"]}, {"trace_rate": "3", "trace_count": "5"},
                                  {"trace_level": None, "trace_rate": None}))
            r = s.post(url(target), json=body, timeout=T)
            note("features_trace_setting", r.status_code, ("200",), r.text)
    s.close()


def rss_of(pid, field="VmRSS:"):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith(field):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def sanitizer_name():
    env = os.environ
    if "TSAN_OPTIONS" in env:
        return "tsan"
    if "ASAN_OPTIONS" in env:
        return "asan"
    return "nosan"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("seconds", nargs="?", type=float, default=120.0)
    ap.add_argument("--build-dir", default=os.environ.get("BUILD_DIR", "build-tsan"))
    ap.add_argument("--demo", help="the demo binary (default BUILD_DIR/examples/demo/...)")
    ap.add_argument("--report-dir", default="/tmp")
    args = ap.parse_args()
    demo = args.demo or os.path.join(ROOT, args.build_dir, "examples", "demo", "inferserve-demo")
    if not os.path.exists(demo):
        print("storm: no demo at %s (scripts/storm.sh builds it)" % demo)
        return 2
    pb = load_stubs()
    work = tempfile.mkdtemp(prefix="isv-storm-")
    errlog = os.path.join(work, "demo.stderr")
    with open(errlog, "wb") as ef:
        proc = subprocess.Popen([demo] + DEMO_FLAGS, stdout=subprocess.PIPE, stderr=ef,
                                stdin=subprocess.DEVNULL)
    lines = []
    port_found = threading.Event()

    def read_stdout():
        for raw in proc.stdout:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            lines.append(line)
            m = re.search(r"listening on ([0-9.]+):(\d+)", line)
            if m and not port_found.is_set():
                Target.host, Target.port = m.group(1), int(m.group(2))
                port_found.set()
        port_found.set()
    threading.Thread(target=read_stdout, daemon=True).start()
    if not port_found.wait(60) or not Target.port:
        proc.kill()
        proc.wait()
        print("storm: the demo did not start:\n" + open(errlog, errors="replace").read()[-4000:])
        return 1

    started = time.monotonic()
    STOP[0] = started + args.seconds
    rss = []

    def sample_rss():
        while running() and proc.poll() is None:
            v = rss_of(proc.pid)
            if v:
                rss.append(v)
            time.sleep(1.0)

    workers = [guarded("churn_rest", churn_rest), guarded("churn_grpc", lambda: churn_grpc(pb)),
               guarded("stats_rest", stats_rest), guarded("stats_rest", stats_rest),
               guarded("stats_grpc", lambda: stats_grpc(pb)),
               guarded("infer_rest", infer_rest), guarded("infer_rest", infer_rest),
               guarded("infer_grpc", lambda: infer_grpc(pb)),
               guarded("sse", sse_worker(["full", "slow", "stop"])),
               guarded("sse", sse_worker(["full", "stop", "stuck", "h2"])),
               guarded("sse", sse_worker(["slow", "stop", "h2"])),
               guarded("coded", coded), guarded("coded", coded),
               guarded("shm_rest", shm_worker(pb, "rest", 0)),
               guarded("shm_rest", shm_worker(pb, "rest", 1)),
               guarded("shm_grpc", shm_worker(pb, "grpc", 0)),
               guarded("features", features), guarded("features", features),
               ("rss", sample_rss)]
    threads = [threading.Thread(target=w, name=n, daemon=True) for n, w in workers]
    for t in threads:
        t.start()
    errors = []
    for t in threads:
        t.join(max(0.0, STOP[0] - time.monotonic()) + 90)
        if t.is_alive():
            errors.append("client thread %s did not finish" % t.name)

    alive = proc.poll() is None
    peak = rss_of(proc.pid, "VmHWM:") if alive else None
    if not alive:
        errors.append("the demo died during the storm: exit %r" % proc.returncode)
    else:
        try:
            live = requests.get(url("/v2/health/live"), timeout=T).status_code
        except requests.RequestException as e:
            live = exc_name(e)
        if live != 200:
            errors.append("after the storm /v2/health/live answered %s" % live)
        proc.send_signal(signal.SIGTERM)
    try:
        rc = proc.wait(120)
    except subprocess.TimeoutExpired:
        proc.kill()
        rc = proc.wait()
        errors.append("the demo did not exit within 120 s of SIGTERM (killed)")
    elapsed = time.monotonic() - started
    stderr = open(errlog, "rb").read().decode("utf-8", "replace")
    reports = REPORT_RE.findall(stderr)
    if rc != 0:
        errors.append("the demo exited %d%s" % (rc, " (signal %d)" % -rc if rc < 0 else ""))
    if reports:
        errors.append("%d sanitizer report line(s): %s" % (
            len(reports), ", ".join("%s x%d" % kv for kv in collections.Counter(reports).items())))
    saved = None
    if reports or rc != 0 or not alive:
        saved = os.path.join(args.report_dir, "storm-report-%s-%s.log" % (
            sanitizer_name(), datetime.datetime.now().strftime("%Y%m%d-%H%M%S")))
        shutil.copyfile(errlog, saved)
    if unexpected:
        errors.append("unexpected outcomes: %s" % json.dumps(
            {k: dict(v) for k, v in unexpected.items()}, sort_keys=True))

    total = sum(sum(c.values()) for c in seen.values())
    print("storm: %s, %.0f s (%.0f s of load), demo %s %s" % (
        sanitizer_name(), elapsed, args.seconds, demo, " ".join(DEMO_FLAGS)))
    print("storm: %d requests" % total)
    for kind in sorted(seen):
        c = seen[kind]
        print("  %-24s %7d  %s" % (kind, sum(c.values()),
                                   " ".join("%s=%d" % kv for kv in sorted(c.items()))))
    print("storm: demo VmHWM %s KiB, VmRSS samples max %s KiB (first %s, last %s)" % (
        peak, max(rss) if rss else None, rss[0] if rss else None, rss[-1] if rss else None))
    print("storm: demo exit %s, %d sanitizer report line(s)" % (rc, len(reports)))
    for s in samples[:20]:
        print("  unexpected: " + s)
    if saved:
        print("storm: the demo's stderr is saved in %s" % saved)
    tail = stderr.strip().splitlines()[-30:]
    if errors and tail:
        print("storm: the demo's stderr ends:\n  " + "\n  ".join(tail))
    shutil.rmtree(work, ignore_errors=True)
    for e in errors:
        print("storm: FAILED: " + e)
    if not errors:
        print("storm: ok")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
