"""Helpers shared by the integration tests: the demo process, raw HTTP/1.1, JSON with raw
number tokens, float rounding to FP32/FP16/BF16 and assertion helpers with informative messages.

Everything here talks to a real `inferserve-demo` process over TCP; nothing links the library.
"""
import json
import math
import os
import re
import select
import signal
import socket
import struct
import subprocess
import tempfile
import threading
import time

import requests

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DEFAULT_DEMO = os.path.join(REPO_ROOT, "build", "examples", "demo", "inferserve-demo")
LISTEN_RE = re.compile(r"listening on (\S+):(\d+)")

# Short network timeouts keep a hung server from hanging the suite.
TIMEOUT = 5.0


def demo_path():
    return os.environ.get("INFERSERVE_DEMO", DEFAULT_DEMO)


# ------------------------------------------------------------------------------------------
# The demo process
# ------------------------------------------------------------------------------------------
class Demo:
    """One running inferserve-demo. stdout is drained by a thread (lines kept), stderr goes to
    a temporary file so that it can be shown when something fails."""

    def __init__(self, extra_args=(), start_timeout=10.0, env=None, binary=None):
        path = binary or demo_path()
        if not os.path.exists(path):
            raise RuntimeError(
                "demo binary not found at %s (build it: meson setup build; ninja -C build, "
                "or set INFERSERVE_DEMO)" % path)
        self.args = [path, "--listen", "127.0.0.1:0"] + list(extra_args)
        self.stderr_file = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(self.args, stdout=subprocess.PIPE, stderr=self.stderr_file,
                                     stdin=subprocess.DEVNULL,
                                     env=dict(os.environ, **env) if env else None)
        self.lines = []
        self._port_found = threading.Event()
        self.port = None
        self.host = "127.0.0.1"
        self._reader = threading.Thread(target=self._read_stdout, daemon=True)
        self._reader.start()
        if not self._port_found.wait(start_timeout) or self.port is None:
            rc = self.proc.poll()
            if rc is None:
                self.proc.kill()
                self.proc.wait()
            raise RuntimeError("demo %r did not print its listening line within %.0f s "
                               "(exit code %r)\nstdout: %r\nstderr: %s"
                               % (self.args, start_timeout, rc, self.lines, self.stderr_tail()))
        self.base = "http://%s:%d" % (self.host, self.port)

    def _read_stdout(self):
        for raw in self.proc.stdout:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            self.lines.append(line)
            m = LISTEN_RE.search(line)
            if m and self.port is None:
                self.host = m.group(1)
                self.port = int(m.group(2))
                self._port_found.set()
        self._port_found.set()  # EOF: wake the waiter, port may still be None

    def stderr_tail(self, n=4000):
        try:
            self.stderr_file.seek(0)
            data = self.stderr_file.read()
        except (OSError, ValueError):
            return "<stderr unavailable>"
        return data[-n:].decode("utf-8", "replace")

    def alive(self):
        return self.proc.poll() is None

    def url(self, path):
        return self.base + path

    def send_signal(self, sig):
        self.proc.send_signal(sig)

    def stop(self, sig=signal.SIGTERM, timeout=10.0):
        """Send sig and wait; returns the exit code (None if it had to be killed)."""
        if self.proc.poll() is not None:
            return self.proc.returncode
        self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return None

    def wait_exit(self, timeout=10.0):
        """Wait (without signalling) for the process to exit; returns the exit code, or None
        after killing it when it did not exit in time."""
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return None

    def describe_exit(self, rc):
        if rc is None:
            what = "did not exit within the timeout (killed)"
        elif rc < 0:
            what = "died from signal %d" % -rc
        else:
            what = "exited with code %d" % rc
        return "demo %s %s; stderr tail:\n%s" % (" ".join(self.args), what, self.stderr_tail())

    def stop_and_check(self, sig=signal.SIGTERM, timeout=10.0):
        rc = self.stop(sig, timeout)
        assert rc == 0, self.describe_exit(rc)


# ------------------------------------------------------------------------------------------
# JSON helpers
# ------------------------------------------------------------------------------------------
def loads_raw(text):
    """Parse JSON keeping every number and NaN/Infinity token as its raw text (str)."""
    return json.loads(text, parse_float=str, parse_int=str, parse_constant=str)


def flatten(x):
    if isinstance(x, list):
        out = []
        for e in x:
            out.extend(flatten(e))
        return out
    return [x]


def show(resp):
    """A short description of a requests.Response for assertion messages."""
    body = resp.content[:2000]
    try:
        body = body.decode("utf-8")
    except UnicodeDecodeError:
        pass
    return "%s %s -> %d %s\nheaders: %s\nbody: %r" % (
        resp.request.method, resp.request.url, resp.status_code, resp.reason,
        dict(resp.headers), body)


def strict_json(resp):
    """The body as JSON; the body must be valid UTF-8 and valid JSON (NaN tokens allowed)."""
    try:
        text = resp.content.decode("utf-8")
    except UnicodeDecodeError as e:
        raise AssertionError("body is not valid UTF-8 (%s)\n%s" % (e, show(resp)))
    try:
        return json.loads(text)
    except ValueError as e:
        raise AssertionError("body is not valid JSON (%s)\n%s" % (e, show(resp)))


def ok_json(resp, status=200):
    assert resp.status_code == status, "expected %d\n%s" % (status, show(resp))
    return strict_json(resp)


def assert_error(resp, status, *needles):
    """The response is `status` with body {"error": "<message>"} and the message contains
    every needle (case-sensitive). Returns the message."""
    assert resp.status_code == status, "expected %d\n%s" % (status, show(resp))
    ctype = resp.headers.get("Content-Type", "")
    assert "application/json" in ctype, "error Content-Type %r is not JSON\n%s" % (ctype, show(resp))
    body = strict_json(resp)
    assert isinstance(body, dict), "error body is not an object\n%s" % show(resp)
    msg = body.get("error")
    assert isinstance(msg, str) and msg, "no non-empty \"error\" string\n%s" % show(resp)
    for n in needles:
        assert n in msg, "error message %r does not mention %r\n%s" % (msg, n, show(resp))
    return msg


# ------------------------------------------------------------------------------------------
# HTTP helpers (requests)
# ------------------------------------------------------------------------------------------
JSON_HDR = {"Content-Type": "application/json"}


def free_port():
    """A TCP port nothing listens on at 127.0.0.1 now (bound to port 0, then closed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(demo, path, **kw):
    kw.setdefault("timeout", TIMEOUT)
    return requests.get(demo.url(path), **kw)


def post_json(demo, path, obj, **kw):
    """POST obj (a dict, serialised by Python's json, which writes NaN/Infinity as bare
    tokens) or a str (sent verbatim)."""
    kw.setdefault("timeout", TIMEOUT)
    body = obj if isinstance(obj, (str, bytes)) else json.dumps(obj)
    if isinstance(body, str):
        body = body.encode("utf-8")
    headers = dict(JSON_HDR)
    headers.update(kw.pop("headers", {}))
    return requests.post(demo.url(path), data=body, headers=headers, **kw)


def infer(demo, model, inputs, version=None, outputs=None, req_id=None, parameters=None, **kw):
    body = {"inputs": inputs}
    if outputs is not None:
        body["outputs"] = outputs
    if req_id is not None:
        body["id"] = req_id
    if parameters is not None:
        body["parameters"] = parameters
    path = "/v2/models/%s%s/infer" % (model, "" if version is None else "/versions/" + version)
    return post_json(demo, path, body, **kw)


def tensor(name, datatype, shape, data):
    return {"name": name, "datatype": datatype, "shape": shape, "data": data}


def outputs_by_name(body):
    outs = body.get("outputs")
    assert isinstance(outs, list), "no outputs list in %r" % (body,)
    res = {}
    for o in outs:
        assert o["name"] not in res, "output %s appears twice: %r" % (o["name"], body)
        res[o["name"]] = o
    return res


# ------------------------------------------------------------------------------------------
# Raw HTTP/1.1 over a socket
# ------------------------------------------------------------------------------------------
class RawResponse:
    def __init__(self, version, status, reason, headers, body):
        self.version = version
        self.status = status
        self.reason = reason
        self.headers = headers  # list of (name-lower, value)
        self.body = body

    def header(self, name):
        name = name.lower()
        for k, v in self.headers:
            if k == name:
                return v
        return None

    def json(self):
        return json.loads(self.body.decode("utf-8"))

    def __repr__(self):
        return "<%s %d %s headers=%r body=%r>" % (self.version, self.status, self.reason,
                                                 self.headers, self.body[:1000])


class Closed(Exception):
    pass


class RawConn:
    """A client socket with a read buffer, so pipelined responses can be read one by one."""

    def __init__(self, demo, timeout=TIMEOUT):
        self.sock = socket.create_connection((demo.host, demo.port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def send(self, data):
        if isinstance(data, str):
            data = data.encode("utf-8")
        self.sock.sendall(data)

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.close()

    def _fill(self, timeout):
        self.sock.settimeout(timeout)
        try:
            chunk = self.sock.recv(65536)
        except ConnectionResetError:
            chunk = b""
        if not chunk:
            raise Closed("connection closed by the server (buffered: %r)" % self.buf[:200])
        self.buf += chunk

    def _read_until(self, marker, timeout):
        deadline = time.monotonic() + timeout
        while marker not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise socket.timeout("no %r within %.1f s (buffered: %r)"
                                     % (marker, timeout, self.buf[:300]))
            self._fill(left)
        i = self.buf.index(marker) + len(marker)
        data, self.buf = self.buf[:i], self.buf[i:]
        return data

    def _read_exact(self, n, timeout):
        deadline = time.monotonic() + timeout
        while len(self.buf) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                raise socket.timeout("body incomplete: %d of %d bytes" % (len(self.buf), n))
            self._fill(left)
        data, self.buf = self.buf[:n], self.buf[n:]
        return data

    def read_response(self, timeout=TIMEOUT, head=False):
        """Read one response (a 1xx interim response is returned as such, without a body)."""
        raw = self._read_until(b"\r\n\r\n", timeout)
        lines = raw[:-4].decode("latin-1").split("\r\n")
        m = re.match(r"(HTTP/\d\.\d) (\d{3})(?: (.*))?$", lines[0])
        assert m, "bad status line %r" % lines[0]
        version, status, reason = m.group(1), int(m.group(2)), m.group(3) or ""
        headers = []
        for line in lines[1:]:
            k, _, v = line.partition(":")
            headers.append((k.strip().lower(), v.strip()))
        resp = RawResponse(version, status, reason, headers, b"")
        if status < 200 or status in (204, 304) or head:
            return resp
        te = resp.header("transfer-encoding")
        cl = resp.header("content-length")
        if te and "chunked" in te.lower():
            body = b""
            while True:
                size_line = self._read_until(b"\r\n", timeout)
                size = int(size_line.split(b";")[0].strip(), 16)
                if size == 0:
                    self._read_until(b"\r\n", timeout)  # (no trailers expected)
                    break
                body += self._read_exact(size, timeout)
                self._read_exact(2, timeout)
            resp.body = body
        elif cl is not None:
            resp.body = self._read_exact(int(cl), timeout)
        else:  # read until close
            deadline = time.monotonic() + timeout
            while True:
                try:
                    self._fill(max(0.01, deadline - time.monotonic()))
                except Closed:
                    break
            resp.body, self.buf = self.buf, b""
        return resp

    def wait_closed(self, timeout):
        """True when the server closes (EOF or reset) within timeout, with nothing more sent.
        Any bytes received meanwhile are kept in self.buf."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            try:
                self._fill(left)
            except Closed:
                return True
            except socket.timeout:
                return False


def http_request(method, path, body=b"", headers=None, version="HTTP/1.1", host="127.0.0.1"):
    """Serialise one request with Content-Length (unless headers say otherwise)."""
    if isinstance(body, str):
        body = body.encode("utf-8")
    hdrs = {"Host": host}
    if body or method in ("POST", "PUT"):
        hdrs["Content-Length"] = str(len(body))
        hdrs["Content-Type"] = "application/json"
    if headers:
        hdrs.update(headers)
    hdrs = {k: v for k, v in hdrs.items() if v is not None}
    head = "%s %s %s\r\n" % (method, path, version)
    head += "".join("%s: %s\r\n" % kv for kv in hdrs.items()) + "\r\n"
    return head.encode("latin-1") + body


# ------------------------------------------------------------------------------------------
# Model request bodies
# ------------------------------------------------------------------------------------------
def simple_inputs(a, b):
    """INPUT0/INPUT1 for `simple`, a and b lists of rows of 16 ints."""
    return [tensor("INPUT0", "INT32", [len(a), 16], a),
            tensor("INPUT1", "INT32", [len(b), 16], b)]


def simple_body(rows=1, req_id=None, outputs=None):
    a = [[r * 100 + i for i in range(16)] for r in range(rows)]
    b = [[1] * 16 for _ in range(rows)]
    body = {"inputs": simple_inputs(a, b)}
    if req_id is not None:
        body["id"] = req_id
    if outputs is not None:
        body["outputs"] = outputs
    return body


def concrete_shape(shape):
    return [1 if d < 0 else d for d in shape]


def zero_value(dt):
    return {"BOOL": False, "BYTES": "0", "FP16": 0.0, "BF16": 0.0, "FP32": 0.0,
            "FP64": 0.0}.get(dt, 0)


def inputs_from_metadata(meta, fill=None):
    """Inputs for any model, built from its metadata: -1 dims become 1."""
    res = []
    for inp in meta["inputs"]:
        shape = concrete_shape(inp["shape"])
        n = 1
        for d in shape:
            n *= d
        v = zero_value(inp["datatype"]) if fill is None else fill
        res.append(tensor(inp["name"], inp["datatype"], shape, [v] * n))
    return res


def slow_body(demo, ms, req_id=None):
    meta = ok_json(get(demo, "/v2/models/slow"))
    body = {"inputs": inputs_from_metadata(meta, fill=ms)}
    if req_id is not None:
        body["id"] = req_id
    return body


# ------------------------------------------------------------------------------------------
# Floating point
# ------------------------------------------------------------------------------------------
def f32(x):
    try:
        return struct.unpack("<f", struct.pack("<f", float(x)))[0]
    except (OverflowError, struct.error):  # beyond FP32 max after rounding
        return math.copysign(math.inf, x)


def f16(x):
    """Round a double to binary16 (Python's struct rounds to nearest even)."""
    try:
        return struct.unpack("<e", struct.pack("<e", float(x)))[0]
    except (OverflowError, struct.error):
        return math.copysign(math.inf, x)


def bf16(x):
    """Round to bfloat16, nearest even (x must be exact in FP32 for a single rounding)."""
    if math.isnan(x) or math.isinf(x):
        return x
    x = f32(x)
    if math.isinf(x):
        return x
    bits = struct.unpack("<I", struct.pack("<f", x))[0]
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return struct.unpack("<f", struct.pack("<I", bits << 16))[0]


ROUNDERS = {"FP16": f16, "BF16": bf16, "FP32": f32, "FP64": float}


def shortest_repr(x, rnd):
    """The shortest %g text whose value rounds (with rnd) back to x."""
    if x == 0 or math.isinf(x) or math.isnan(x):
        return repr(x)
    for p in range(1, 18):
        t = "%.*g" % (p, x)
        if rnd(float(t)) == x:
            return t
    return repr(x)


def sig_digits(text):
    """Number of significant decimal digits in a number's text."""
    t = text.lstrip("+-").lower().split("e")[0].replace(".", "")
    t = t.lstrip("0").rstrip("0")
    return max(1, len(t))


def same_float(a, b):
    if math.isnan(a) and math.isnan(b):
        return True
    return a == b and math.copysign(1, a) == math.copysign(1, b)
