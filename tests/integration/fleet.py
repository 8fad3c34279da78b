"""Helpers for the fleet tests (test_deploy_haproxy.py, test_deploy_nginx.py): demo replicas on
fixed loopback ports (so that a replica can be restarted where its balancer expects it), free
ports, wrk and gRPC load that count every failure, and per-replica request counts from
/metrics.

Everything talks over TCP to real processes: inferserve-demo, haproxy or nginx, wrk, grpcio.
"""
import os
import re
import signal
import socket
import subprocess
import tempfile
import threading
import time

import grpc
import requests

from grpc_stubs import decode_raw, load_stubs, outputs_of, simple_request, slow_request
from isvtest import Demo

# Generous: the machine has 2 cores shared with other work.
STEP_TIMEOUT = 20.0

WRK_LUA = """\
-- V2 REST infer of the `simple` model, keep-alive; a short pause per request keeps the load
-- modest on a shared machine (wrk counts non-2xx answers and socket errors itself)
wrk.method = "POST"
wrk.path = "/v2/models/simple/infer"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"inputs":[' ..
  '{"name":"INPUT0","shape":[1,16],"datatype":"INT32","data":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]},' ..
  '{"name":"INPUT1","shape":[1,16],"datatype":"INT32","data":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]}]}'
function delay()
  return 2
end
"""


def free_ports(n):
    """n distinct free TCP ports on 127.0.0.1 (bound together, then released)."""
    socks, ports = [], []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
            ports.append(s.getsockname()[1])
    finally:
        for s in socks:
            s.close()
    return ports


def wait_for(pred, what, timeout=STEP_TIMEOUT, interval=0.05):
    deadline = time.monotonic() + timeout
    while True:
        last = pred()
        if last:
            return last
        if time.monotonic() > deadline:
            raise AssertionError("timed out after %.0f s waiting for %s" % (timeout, what))
        time.sleep(interval)


class Replica:
    """One inferserve-demo listening on exactly 127.0.0.1:port (and the ephemeral port Demo
    always adds, unused here)."""

    def __init__(self, name, port, extra=()):
        self.name, self.port, self.extra = name, port, tuple(extra)
        self.demo = None
        self.start()

    def start(self):
        # the old process just exited: its port can be taken again at once (libuv binds with
        # SO_REUSEADDR), but a slow machine may still be tearing it down, so retry briefly
        deadline = time.monotonic() + STEP_TIMEOUT
        while True:
            try:
                self.demo = Demo(extra_args=("--listen", "127.0.0.1:%d" % self.port) + self.extra)
                break
            except RuntimeError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        wait_for(lambda: ("127.0.0.1:%d" % self.port) in " ".join(self.demo.lines),
                 "%s to listen on %d" % (self.name, self.port))

    def url(self, path):
        return "http://127.0.0.1:%d%s" % (self.port, path)

    def get(self, path):
        return requests.get(self.url(path), timeout=5.0)

    def set_offline(self):
        r = self.get("/grps/v1/health/offline")
        assert r.status_code == 200, r.text
        r = self.get("/v2/health/ready")
        assert r.status_code == 503, "offline replica still ready: %d %s" % (r.status_code, r.text)

    def served(self):
        """{protocol: successful `simple` requests} from this replica's /metrics."""
        text = self.get("/metrics").text
        out = {}
        for m in re.finditer(r'^isv_requests_total\{model="simple",version="1",'
                             r'protocol="([a-z0-9_]+)",outcome="success"\} (\d+)$', text, re.M):
            out[m.group(1)] = out.get(m.group(1), 0) + int(m.group(2))
        return out

    def stop(self, timeout=STEP_TIMEOUT):
        """SIGTERM; returns the exit code (None when it had to be killed)."""
        return self.demo.stop(signal.SIGTERM, timeout)

    def describe(self, rc):
        return self.demo.describe_exit(rc)


def start_process(args, what, cwd=None, env=None):
    """A foreground helper process (haproxy, nginx) with stdout+stderr in a temporary file."""
    log = tempfile.TemporaryFile()
    proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, cwd=cwd, env=env)
    proc.log = log
    proc.what = what
    return proc


def process_log(proc, n=6000):
    proc.log.seek(0)
    return proc.log.read()[-n:].decode("utf-8", "replace")


def stop_process(proc, sig=signal.SIGTERM, timeout=STEP_TIMEOUT):
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode


def wait_port(port, what, timeout=STEP_TIMEOUT, proc=None):
    def up():
        if proc is not None and proc.poll() is not None:
            raise AssertionError("%s exited (%s) before listening on %d:\n%s"
                                 % (what, proc.returncode, port, process_log(proc)))
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1.0).close()
            return True
        except OSError:
            return False
    wait_for(up, "%s to listen on %d" % (what, port), timeout)


class WrkLoad:
    """wrk against REST infer in the background, at most `seconds`; result() stops it and
    parses its report."""

    def __init__(self, url, seconds=120, connections=4, workdir=None):
        self.script = os.path.join(workdir or tempfile.gettempdir(), "fleet_infer.lua")
        with open(self.script, "w") as f:
            f.write(WRK_LUA)
        self.args = ["wrk", "-t1", "-c%d" % connections, "-d%ds" % seconds, "--timeout", "10s",
                     "-s", self.script, url]
        self.proc = subprocess.Popen(self.args, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.seconds = seconds

    def result(self):
        """Stop wrk (SIGINT: it stops and prints its report, requests still in flight are not
        counted either way) and parse the report."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        out, _ = self.proc.communicate(timeout=self.seconds + 60)
        text = out.decode("utf-8", "replace")
        m = re.search(r"(\d+) requests in", text)
        assert self.proc.returncode == 0 and m, "wrk failed (%s):\n%s" % (self.proc.returncode,
                                                                          text)
        sock = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)",
                         text)
        non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
        return {"requests": int(m.group(1)),
                "socket_errors": sum(int(x) for x in sock.groups()) if sock else 0,
                "read_errors": int(sock.group(2)) if sock else 0,
                "non2xx": int(non2xx.group(1)) if non2xx else 0,
                "report": text}

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


class GrpcLoad:
    """`threads` threads sending ModelInfer(simple) through one channel until stop(), and
    `slow_threads` more sending `slow` calls of slow_ms each (so that a drained replica has
    requests in flight); every RPC error and every wrong answer is kept, with its time
    (time.monotonic()), in errors."""

    def __init__(self, port, threads=4, slow_threads=4, slow_ms=300):
        self.pb = load_stubs().pb
        self.channel = grpc.insecure_channel("127.0.0.1:%d" % port,
                                             options=[("grpc.use_local_subchannel_pool", 1)])
        grpc.channel_ready_future(self.channel).result(timeout=STEP_TIMEOUT)
        self.stub = load_stubs().pb_grpc.GRPCInferenceServiceStub(self.channel)
        self.ok = 0
        self.errors = []
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.slow_ok = 0
        self.threads = [threading.Thread(target=self._run, daemon=True) for _ in range(threads)]
        self.threads += [threading.Thread(target=self._run_slow, args=(slow_ms,), daemon=True)
                         for _ in range(slow_threads)]
        for t in self.threads:
            t.start()

    def _run(self):
        req, a, b = simple_request(self.pb)
        want0 = [x + y for x, y in zip(a, b)]
        while not self.stopping.is_set():
            try:
                resp = self.stub.ModelInfer(req, timeout=30.0)
                got = decode_raw("INT32", outputs_of(resp)["OUTPUT0"][2])
                err = None if got == want0 else "wrong OUTPUT0 %r" % got
            except grpc.RpcError as e:
                err = "%s: %s" % (e.code(), e.details())
            except Exception as e:  # a malformed answer is a failure too
                err = repr(e)
            with self.lock:
                if err is None:
                    self.ok += 1
                else:
                    self.errors.append((time.monotonic(), err))
            time.sleep(0.002)

    def _run_slow(self, ms):
        req = slow_request(self.pb, ms)
        while not self.stopping.is_set():
            try:
                self.stub.ModelInfer(req, timeout=30.0)
                err = None
            except grpc.RpcError as e:
                err = "slow: %s: %s" % (e.code(), e.details())
            with self.lock:
                if err is None:
                    self.slow_ok += 1
                else:
                    self.errors.append((time.monotonic(), err))

    def stop(self):
        self.stopping.set()
        for t in self.threads:
            t.join(60)
        self.channel.close()
        return self.ok, self.errors
