#!/usr/bin/python3
"""bench/tls_idle.py — what TLS connections cost the demo in resident memory, fresh and after
they went quiet: for each demo binary given (name=path), start it (one loop, a TLS listener, a
throw-away P-256 certificate), open N TLS connections (ALPN http/1.1) that each send one
`GET /v2/health/live` and read its answer, and read the demo's VmRSS before, right after, and
after IDLE seconds of quiet; then open a second wave of N and read it again — memory the first
wave's connections gave back to the allocator is used again by the second, so the second wave's
growth is what a connection keeps once idle. Prints a Markdown table (nothing is written).

    /usr/bin/python3 bench/tls_idle.py before=/tmp/isv-before/build/examples/demo/inferserve-demo \\
                                       after=build/examples/demo/inferserve-demo

Environment: TLS_IDLE_CONNS=1000, TLS_IDLE_WAIT=2.5 (s; the library gives an idle connection's
buffers back after 1-2 s)."""
import os
import re
import resource
import socket
import ssl
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import isvbench  # noqa: E402  (read_status: the demo's VmRSS)

N = int(os.environ.get("TLS_IDLE_CONNS", "1000"))
WAIT = float(os.environ.get("TLS_IDLE_WAIT", "2.5"))


def rss_kib(pid):
    return isvbench.read_status(pid)["VmRSS"]


def wave(ctx, port, n):
    socks = []
    for _ in range(n):
        s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port)), server_hostname="localhost")
        s.sendall(b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n")
        if b"200" not in s.recv(4096):
            raise SystemExit("the demo did not answer 200")
        socks.append(s)
    return socks


def measure(name, demo, work):
    p = subprocess.Popen([demo, "--listen", "127.0.0.1:0", "--threads", "1", "--tls-listen",
                          "127.0.0.1:0", "--tls-cert", work + "/c.pem", "--tls-key", work + "/k.pem"],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        port = None
        for line in p.stdout:
            m = re.search(r"with TLS at 127\.0\.0\.1:(\d+)", line)
            if m:
                port = int(m.group(1))
                break
        if port is None:
            raise SystemExit(name + ": the demo did not start")
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        ctx.set_alpn_protocols(["http/1.1"])
        r0 = rss_kib(p.pid)
        first = wave(ctx, port, N)
        r1 = rss_kib(p.pid)
        time.sleep(WAIT)
        r2 = rss_kib(p.pid)
        second = wave(ctx, port, N)
        r3 = rss_kib(p.pid)
        for s in first + second:
            s.close()
        return "| %s | %.1f | %.1f | %.1f |" % (name, (r1 - r0) / N, (r2 - r0) / N, (r3 - r2) / N)
    finally:
        p.kill()
        p.wait()


def main():
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)  # 2 N sockets here, 2 N in the demo
    if soft < 2 * N + 64:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, 4 * N + 64)), hard))
    with tempfile.TemporaryDirectory() as work:
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                        "ec_paramgen_curve:P-256", "-nodes", "-keyout", work + "/k.pem", "-out",
                        work + "/c.pem", "-days", "1", "-subj", "/CN=localhost"],
                       check=True, capture_output=True)
        print("KiB of the demo's VmRSS per TLS connection, %d connections a wave" % N)
        print()
        print("| build | fresh (one request each) | after %.1f s quiet | a second wave, after |" % WAIT)
        print("|---|---|---|---|")
        for spec in sys.argv[1:]:
            name, _, demo = spec.partition("=")
            print(measure(name, demo, work), flush=True)


if __name__ == "__main__":
    main()
