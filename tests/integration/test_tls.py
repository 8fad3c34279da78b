"""TLS on a listener (isv_server_listen_tls; the demo's --tls-listen), with a throw-away CA the
test makes with the openssl CLI: REST over https with requests and curl (HTTP/1.1 and h2 by
ALPN), V2 gRPC with grpcio's secure_channel, client certificates (mTLS) accepted and refused
and their subject reaching the authorizer, bad handshakes (garbage, a truncated ClientHello, a
plain HTTP request, a client that says nothing), a reload (SIGHUP) under an open connection,
and 16 MiB both ways."""
import json
import os
import re
import signal
import socket
import ssl
import subprocess
import time

import grpc
import pytest
import requests

from grpc_stubs import load_stubs, simple_request
from isvtest import TIMEOUT, simple_body

pytestmark = pytest.mark.skipif(subprocess.run(["which", "openssl"], capture_output=True)
                                .returncode != 0, reason="no openssl CLI")
TLS_RE = re.compile(r"listening with TLS at (\S+):(\d+)")
SIMPLE = "/v2/models/simple/infer"


def openssl(*args, cwd):
    subprocess.run(["openssl"] + list(args), cwd=cwd, check=True, capture_output=True)


def make_ca(d, name):
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", name + ".key", "-out",
            name + ".pem", "-days", "2", "-subj", "/CN=%s" % name, cwd=d)


def issue(d, ca, name, subject, server=False):
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", name + ".key", "-out",
            name + ".csr", "-subj", subject, cwd=d)
    ext = os.path.join(d, name + ".ext")
    with open(ext, "w") as f:
        f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\n" if server else
                "extendedKeyUsage=clientAuth\n")
    openssl("x509", "-req", "-in", name + ".csr", "-CA", ca + ".pem", "-CAkey", ca + ".key",
            "-CAcreateserial", "-out", name + ".pem", "-days", "2", "-extfile", ext, cwd=d)


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    d = str(tmp_path_factory.mktemp("pki"))
    make_ca(d, "ca")
    make_ca(d, "otherca")
    issue(d, "ca", "server", "/CN=localhost", server=True)
    issue(d, "ca", "server2", "/CN=localhost/O=reloaded", server=True)
    issue(d, "ca", "alice", "/CN=alice/O=Example")
    issue(d, "otherca", "mallory", "/CN=mallory")
    return lambda n: os.path.join(d, n)


def tls_port(demo):
    deadline = time.time() + 5
    while time.time() < deadline:
        for line in demo.lines:
            m = TLS_RE.search(line)
            if m:
                return int(m.group(2))
        time.sleep(0.02)
    raise AssertionError("no TLS listening line: %r" % demo.lines)


def start_tls(start_demo, pki, *extra):
    d = start_demo("--tls-listen", "127.0.0.1:0", "--tls-cert", pki("server.pem"),
                   "--tls-key", pki("server.key"), *extra)
    d.tls = "https://127.0.0.1:%d" % tls_port(d)
    d.tls_port = tls_port(d)
    return d


def curl(d, pki, path, *args):
    res = subprocess.run(["curl", "-s", "-S", "--max-time", "10", "--cacert", pki("ca.pem"),
                          "-w", "\n%{http_code} %{http_version}", *args, d.tls + path],
                         capture_output=True, text=True)
    body, _, tail = res.stdout.rpartition("\n")
    return res.returncode, body, tail, res.stderr


def test_rest_over_https(start_demo, pki):
    d = start_tls(start_demo, pki, "--access-log")
    r = requests.post(d.tls + SIMPLE, json=simple_body(), verify=pki("ca.pem"), timeout=TIMEOUT)
    assert r.status_code == 200 and r.json()["model_name"] == "simple"
    rc, body, tail, err = curl(d, pki, "/v2/health/ready", "--http1.1")
    assert rc == 0 and tail == "200 1.1" and json.loads(body) == {"ready": True}, (rc, tail, err)
    rc, body, tail, err = curl(d, pki, SIMPLE, "--http2", "-H", "content-type: application/json",
                               "--data-binary", json.dumps(simple_body()))
    assert rc == 0 and tail == "200 2", (rc, tail, err)  # h2 by ALPN
    assert json.loads(body)["outputs"][0]["data"][:3] == [1, 2, 3]
    deadline = time.time() + 3  # the access log names ALPN's protocol
    while time.time() < deadline and not any(l.startswith("access h2 POST " + SIMPLE)
                                             for l in d.lines):
        time.sleep(0.02)
    assert any(l.startswith("access h2 POST " + SIMPLE + " 200") for l in d.lines), d.lines
    # the plain listener is unchanged beside it
    assert requests.get(d.url("/v2/health/ready"), timeout=TIMEOUT).status_code == 200


def test_grpc_over_tls(start_demo, pki):
    d = start_tls(start_demo, pki)
    pb = load_stubs()
    with open(pki("ca.pem"), "rb") as f:
        creds = grpc.ssl_channel_credentials(root_certificates=f.read())
    ch = grpc.secure_channel("localhost:%d" % d.tls_port, creds)
    try:
        stub = pb.pb_grpc.GRPCInferenceServiceStub(ch)
        assert stub.ServerReady(pb.pb.ServerReadyRequest(), timeout=TIMEOUT).ready
        req, a, b = simple_request(pb.pb)
        resp = stub.ModelInfer(req, timeout=TIMEOUT)
        assert resp.model_name == "simple" and len(resp.raw_output_contents) == 2
    finally:
        ch.close()


def test_sixteen_mib_both_ways(start_demo, pki):
    d = start_tls(start_demo, pki)
    n = 4 << 20  # 16 MiB of INT32 in, the same out (identity)
    body = json.dumps({"inputs": [{"name": "INPUT0", "datatype": "INT32", "shape": [1, n],
                                   "parameters": {"binary_data_size": 4 * n}}],
                       "outputs": [{"name": "OUTPUT0", "parameters": {"binary_data": True}}]})
    payload = os.urandom(4 * n)
    r = requests.post(d.tls + "/v2/models/identity_int32/infer", verify=pki("ca.pem"),
                      data=body.encode() + payload, timeout=60,
                      headers={"Inference-Header-Content-Length": str(len(body)),
                               "Content-Type": "application/octet-stream"})
    assert r.status_code == 200, r.text[:300]
    hl = int(r.headers["Inference-Header-Content-Length"])
    assert r.content[hl:] == payload


def test_mtls_accepted_refused_and_seen_by_the_authorizer(start_demo, pki, tmp_path):
    d = start_tls(start_demo, pki, "--tls-client-ca", pki("ca.pem"),
                  "--tls-require-client-cert", "--access-log")
    ok = requests.get(d.tls + "/v2/health/ready", verify=pki("ca.pem"), timeout=TIMEOUT,
                      cert=(pki("alice.pem"), pki("alice.key")))
    assert ok.status_code == 200
    for cert in (None, (pki("mallory.pem"), pki("mallory.key"))):
        with pytest.raises(requests.exceptions.ConnectionError):
            requests.get(d.tls + "/v2/health/ready", verify=pki("ca.pem"), timeout=TIMEOUT,
                         cert=cert)
    assert d.alive()


@pytest.mark.parametrize("subject", ["O=Example,CN=alice", "CN=alice,O=Example"])
def test_identity_reaches_the_authorizer(start_demo, pki, subject):
    # optional client certificates; the demo's authorizer lets in one subject only, its RDNs
    # in either order (OpenSSL prints the most specific first)
    d = start_tls(start_demo, pki, "--tls-client-ca", pki("ca.pem"), "--tls-identity", subject)
    r = requests.get(d.tls + "/v2/models/simple", verify=pki("ca.pem"), timeout=TIMEOUT,
                     cert=(pki("alice.pem"), pki("alice.key")))
    assert r.status_code == 200
    anon = requests.get(d.tls + "/v2/models/simple", verify=pki("ca.pem"), timeout=TIMEOUT)
    assert anon.status_code == 403 and "'(none)' is not let in" in anon.text
    # over gRPC too
    pb = load_stubs()
    with open(pki("ca.pem"), "rb") as f, open(pki("alice.key"), "rb") as k, \
            open(pki("alice.pem"), "rb") as c:
        creds = grpc.ssl_channel_credentials(root_certificates=f.read(), private_key=k.read(),
                                             certificate_chain=c.read())
    ch = grpc.secure_channel("localhost:%d" % d.tls_port, creds)
    try:
        stub = pb.pb_grpc.GRPCInferenceServiceStub(ch)
        assert stub.ModelInfer(simple_request(pb.pb)[0], timeout=TIMEOUT).model_name == "simple"
    finally:
        ch.close()


def raw(d, data, wait=1.0):
    s = socket.create_connection(("127.0.0.1", d.tls_port), timeout=TIMEOUT)
    try:
        if data:
            s.sendall(data)
        s.settimeout(wait)
        got = b""
        try:
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    return got, True
                got += chunk
        except socket.timeout:
            return got, False
    finally:
        s.close()


def test_bad_handshakes(start_demo, pki):
    d = start_tls(start_demo, pki, "--tls-handshake-timeout-ms", "500")
    # plain HTTP on the TLS port: told so, then closed
    got, closed = raw(d, b"GET /v2/health/ready HTTP/1.1\r\nHost: x\r\n\r\n", wait=3)
    assert got.startswith(b"HTTP/1.1 400 ") and b"speaks TLS" in got and closed, got
    # garbage that is not a record: closed at once
    got, closed = raw(d, b"\x00\x01\x02garbage" * 10, wait=3)
    assert closed and got == b""
    # a record header that promises a ClientHello, then garbage: an alert, closed
    got, closed = raw(d, b"\x16\x03\x01\x00\x30" + b"\xff" * 48, wait=3)
    assert closed
    # a truncated ClientHello, then silence: closed by the handshake timeout
    t0 = time.time()
    got, closed = raw(d, b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", wait=5)
    assert closed and time.time() - t0 < 4.5
    # nothing at all: the same
    got, closed = raw(d, b"", wait=5)
    assert closed
    assert d.alive()
    r = requests.get(d.tls + "/v2/health/ready", verify=pki("ca.pem"), timeout=TIMEOUT)
    assert r.status_code == 200


def peer_cert_org(port, ca):
    ctx = ssl.create_default_context(cafile=ca)
    with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as s:
        with ctx.wrap_socket(s, server_hostname="localhost") as t:
            subject = dict(x[0] for x in t.getpeercert()["subject"])
            return subject.get("organizationName")


def test_reload_keeps_open_connections(start_demo, pki, tmp_path):
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert.write_bytes(open(pki("server.pem"), "rb").read())
    key.write_bytes(open(pki("server.key"), "rb").read())
    d = start_demo("--tls-listen", "127.0.0.1:0", "--tls-cert", str(cert), "--tls-key", str(key))
    d.tls_port = tls_port(d)
    d.tls = "https://127.0.0.1:%d" % d.tls_port
    assert peer_cert_org(d.tls_port, pki("ca.pem")) is None
    s = requests.Session()  # one keep-alive connection across the reload
    ca = pki("ca.pem")  # per request: $REQUESTS_CA_BUNDLE would override Session.verify
    assert s.get(d.tls + "/v2/health/ready", verify=ca, timeout=TIMEOUT).status_code == 200
    cert.write_bytes(open(pki("server2.pem"), "rb").read())
    key.write_bytes(open(pki("server2.key"), "rb").read())
    d.send_signal(signal.SIGHUP)
    deadline = time.time() + 5
    while time.time() < deadline and peer_cert_org(d.tls_port, pki("ca.pem")) != "reloaded":
        time.sleep(0.05)
    assert peer_cert_org(d.tls_port, pki("ca.pem")) == "reloaded"
    # the old connection goes on
    pool = s.get_adapter(d.tls).poolmanager.connection_from_url(d.tls)
    r = s.post(d.tls + SIMPLE, json=simple_body(), verify=ca, timeout=TIMEOUT)
    assert r.status_code == 200
    assert pool.num_connections == 1  # the same connection, opened before the reload


def test_a_client_gone_in_the_middle_of_a_large_answer(start_demo, pki):
    # a 16 MiB answer is sealed a slice at a time: the client leaving mid-way stops it cleanly
    d = start_tls(start_demo, pki)
    n = 16 << 20
    head = json.dumps({"inputs": [{"name": "INPUT0", "datatype": "UINT8", "shape": [1, n],
                                   "parameters": {"binary_data_size": n}}],
                       "outputs": [{"name": "OUTPUT0", "parameters": {"binary_data": True}}]})
    ctx = ssl.create_default_context(cafile=pki("ca.pem"))
    for _ in range(3):
        with socket.create_connection(("127.0.0.1", d.tls_port), timeout=TIMEOUT) as s:
            with ctx.wrap_socket(s, server_hostname="localhost") as t:
                t.sendall(("POST /v2/models/identity_uint8/infer HTTP/1.1\r\nHost: x\r\n"
                           "Inference-Header-Content-Length: %d\r\nContent-Length: %d\r\n\r\n"
                           % (len(head), len(head) + n)).encode() + head.encode())
                t.sendall(b"\0" * n)
                got = t.recv(65536)
                assert got.startswith(b"HTTP/1.1 200"), got[:100]
        # closed with most of the answer unread
    time.sleep(0.3)
    assert d.alive()
    r = requests.get(d.tls + "/v2/health/ready", verify=pki("ca.pem"), timeout=TIMEOUT)
    assert r.status_code == 200


def test_half_handshakes_do_not_lock_new_clients_out(start_demo, pki):
    """max_connections filled with TLS handshakes that stop half way (a truncated ClientHello,
    then silence), long before the 10 s handshake timeout: new clients still get in, on the TLS
    listener and the plain one — the connections idle the longest make room."""
    n = 10
    d = start_tls(start_demo, pki, "--max-connections", str(n), "--threads", "1")
    half = []
    try:
        for _ in range(n):
            s = socket.create_connection(("127.0.0.1", d.tls_port), timeout=TIMEOUT)
            s.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")
            half.append(s)
        time.sleep(0.2)
        ctx = ssl.create_default_context(cafile=pki("ca.pem"))
        for i in range(6):  # kept open: each one takes a place
            s = socket.create_connection(("127.0.0.1", d.tls_port if i < 3 else d.port),
                                         timeout=5)
            if i < 3:
                s = ctx.wrap_socket(s, server_hostname="localhost")
            half.append(s)
            s.sendall(b"GET /v2/health/ready HTTP/1.1\r\nHost: x\r\n\r\n")
            got = b""
            while b"\r\n\r\n" not in got:
                chunk = s.recv(4096)
                assert chunk, "new client %d was not served" % i
                got += chunk
            assert got.startswith(b"HTTP/1.1 200 "), got
        closed = 0
        half, fresh = half[:n], half[n:]
        for s in half:
            s.settimeout(0.5)
            try:
                closed += s.recv(4096) == b""
            except ConnectionResetError:
                closed += 1
            except socket.timeout:
                pass
        assert closed == 6, "%d half handshakes were closed to make room, not 6" % closed
        half += fresh
    finally:
        for s in half:
            s.close()


def test_identity_must_match_every_rdn(start_demo, pki):
    d = start_tls(start_demo, pki, "--tls-client-ca", pki("ca.pem"), "--tls-identity", "CN=alice")
    r = requests.get(d.tls + "/v2/models/simple", verify=pki("ca.pem"), timeout=TIMEOUT,
                     cert=(pki("alice.pem"), pki("alice.key")))
    assert r.status_code == 403, r.text


def identity_request(n, seq):
    body = json.dumps({"id": str(seq), "inputs": [{"name": "INPUT0", "datatype": "INT32",
                                                   "shape": [1, n], "data": list(range(n))}]})
    return ("POST /v2/models/identity_int32/infer HTTP/1.1\r\nHost: x\r\nContent-Type: "
            "application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)).encode()


class MemoryTLSClient:
    """A TLS client over ssl.MemoryBIO: the test decides how its ciphertext is cut into writes."""

    def __init__(self, d, pki):
        ctx = ssl.create_default_context(cafile=pki("ca.pem"))
        ctx.set_alpn_protocols(["http/1.1"])
        self.inc, self.out = ssl.MemoryBIO(), ssl.MemoryBIO()
        self.tls = ctx.wrap_bio(self.inc, self.out, server_hostname="localhost")
        self.sock = socket.create_connection(("127.0.0.1", d.tls_port), timeout=TIMEOUT)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.plain = b""

    def send(self, step):
        data = self.out.read()
        for i in range(0, len(data), step):
            self.sock.sendall(data[i:i + step])

    def handshake(self, step):
        while True:
            try:
                self.tls.do_handshake()
                self.send(step)
                return
            except ssl.SSLWantReadError:
                self.send(step)
                chunk = self.sock.recv(65536)
                assert chunk, "the server closed during the handshake"
                self.inc.write(chunk)

    def answers(self, count):
        """count HTTP/1.1 answers (status, body), reading ciphertext as it comes."""
        got = []
        while len(got) < count:
            head, sep, rest = self.plain.partition(b"\r\n\r\n")
            if sep:
                n = int(re.search(rb"(?i)content-length: *(\d+)", head).group(1))
                if len(rest) >= n:
                    got.append((int(head.split()[1]), rest[:n]))
                    self.plain = rest[n:]
                    continue
            try:
                self.plain += self.tls.read(1 << 20)
                continue
            except ssl.SSLWantReadError:
                pass
            chunk = self.sock.recv(1 << 20)
            assert chunk, "the server closed with %d of %d answers" % (len(got), count)
            self.inc.write(chunk)
        return got


def test_records_cut_and_joined_every_way(start_demo, pki):
    """Whatever the socket hands the server at a time: a handshake and keep-alive requests sent
    a few bytes per write (records cut anywhere, a request's records across reads), then several
    requests in one write (many records in one read), each answered whole and in order; answers
    of ~0.1, ~9 and ~60 KiB alternate on the connection (the buffer its records are written into
    too small, then large, then kept small)."""
    d = start_tls(start_demo, pki)
    c = MemoryTLSClient(d, pki)
    try:
        c.handshake(step=3)
        sizes = [4, 1500, 4, 10000, 4, 4, 1500]
        for seq, n in enumerate(sizes[:3]):  # dribbled
            c.tls.write(identity_request(n, seq))
            c.send(step=5)
        for seq, n in enumerate(sizes[3:], start=3):  # joined: one write for all of them
            c.tls.write(identity_request(n, seq))
        c.send(step=1 << 20)
        for seq, (status, body) in enumerate(c.answers(len(sizes))):
            assert status == 200, body[:200]
            doc = json.loads(body)
            assert doc["id"] == str(seq)
            assert doc["outputs"][0]["data"] == list(range(sizes[seq]))
    finally:
        c.sock.close()
    # the demo is still well: a fresh client is answered
    r = requests.post(d.tls + SIMPLE, json=simple_body(), verify=pki("ca.pem"), timeout=TIMEOUT)
    assert r.status_code == 200


def test_a_connection_quiet_between_requests(start_demo, pki):
    """A keep-alive TLS connection gives its buffers back after 1-2 s with nothing read or
    written (the connection's timer, conn.c), and takes them again: requests after a quiet
    spell are answered, also one whose first half-record came before the quiet spell (SSL keeps
    what it holds of a record through the check)."""
    d = start_tls(start_demo, pki)
    c = MemoryTLSClient(d, pki)
    try:
        c.handshake(step=1 << 20)
        c.tls.write(identity_request(4, 0))
        c.send(step=1 << 20)
        assert [s for s, _ in c.answers(1)] == [200]
        time.sleep(2.2)  # quiet: given back
        c.tls.write(identity_request(1500, 1))
        c.send(step=1 << 20)
        (status, body), = c.answers(1)
        assert status == 200 and json.loads(body)["outputs"][0]["data"] == list(range(1500))
        c.tls.write(identity_request(4, 2))
        records = c.out.read()
        c.sock.sendall(records[:len(records) // 2])  # half a record, then quiet
        time.sleep(2.2)
        c.sock.sendall(records[len(records) // 2:])
        (status, body), = c.answers(1)
        assert status == 200 and json.loads(body)["id"] == "2"
    finally:
        c.sock.close()

