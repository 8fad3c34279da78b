"""deploy/nginx/nginx.conf, run for real (its addresses replaced by free ports): nginx in front
of three demo replicas, REST load from wrk and gRPC load from grpcio, every failure counted.

What it shows (deploy/README.md):
- nginx does not see a replica go offline (no active health check): the offline replica keeps
  getting requests;
- the nginx drain — mark the replica `down`, reload, SIGTERM it — loses no request: gRPC
  clients get a GOAWAY from the old worker and carry on; the old worker closes its idle
  keep-alive REST connections, which wrk reports as one "read" socket error per connection
  even though no request was on it (wrk does that for any idle connection a server closes), so
  read errors are allowed up to one per wrk connection per reload — every other failure
  (non-2xx, connect, write, timeout, any gRPC error) must be zero;
- a replica SIGTERMed while still in the upstream (no drain): the demo stops accepting and
  finishes what it has; REST loses nothing (proxy_next_upstream resends what meets a refused
  or reset connection: nginx buffers REST request bodies); gRPC loses nothing either: nginx
  streams gRPC bodies unbuffered and cannot resend them, but the library's two-step HTTP/2
  shutdown (GOAWAY with the largest id and a PING; the final GOAWAY after the PING's ACK)
  serves every call nginx sent before it read the first GOAWAY;
- restarted replicas come back after a reload.
"""
import os
import re
import shutil
import signal
import tempfile
import time

import pytest

from fleet import (GrpcLoad, Replica, WrkLoad, free_ports, process_log, start_process,
                   stop_process, wait_for, wait_port)
from isvtest import REPO_ROOT

CFG = os.path.join(REPO_ROOT, "deploy", "nginx", "nginx.conf")
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
WRK = shutil.which("wrk")
WRK_CONNECTIONS = 4

pytestmark = pytest.mark.skipif(not (os.path.exists(NGINX) and WRK),
                                reason="nginx or wrk missing (scripts/install-deps.sh)")


def render(http, grpc_port, rports, down=()):
    """The committed config with free ports, and `down` on the replicas (ports) in down."""
    text = open(CFG).read()
    subst = {"127.0.0.1:8000": http, "127.0.0.1:8001": grpc_port}
    subst.update({"127.0.0.1:%d" % (9001 + i): p for i, p in enumerate(rports)})
    for old, port in subst.items():
        assert old in text, "%s no longer names %s: update this test" % (CFG, old)
        text = re.sub(re.escape(old) + r"\b", "127.0.0.1:%d" % port, text)
    for port in down:
        text, n = re.subn(r"(server 127\.0\.0\.1:%d [^;]*);" % port, r"\1 down;", text)
        assert n == 2, "replica %d not found in both upstreams" % port
    return text


class Nginx:
    def __init__(self, workdir, text):
        self.workdir, self.conf = workdir, os.path.join(workdir, "nginx.conf")
        os.makedirs(os.path.join(workdir, "tmp"), exist_ok=True)
        os.chmod(workdir, 0o755)  # run as root, nginx's workers are `nobody`
        self.write(text)
        self.proc = start_process([NGINX, "-p", workdir, "-c", self.conf, "-e", "stderr",
                                   "-g", "daemon off;"], "nginx")

    def write(self, text):
        with open(self.conf, "w") as f:
            f.write(text)
        check = start_process([NGINX, "-t", "-p", self.workdir, "-c", self.conf, "-e", "stderr"],
                              "nginx -t")
        assert check.wait(60) == 0, "nginx -t rejects:\n%s\n%s" % (text, process_log(check))

    def reload(self, text):
        """New config, SIGHUP: new workers use it, old ones finish their requests and exit."""
        n_reloads = self.log().count("reconfiguring")
        self.write(text)
        self.proc.send_signal(signal.SIGHUP)
        wait_for(lambda: self.log().count("reconfiguring") > n_reloads, "nginx to reload")
        wait_for(lambda: self.log().count("start worker process") >= n_reloads + 2,
                 "nginx's new worker")

    def log(self):
        return process_log(self.proc, 200000)


@pytest.fixture
def fleet():
    http, grpc_port, *rports = free_ports(5)
    workdir = tempfile.mkdtemp(prefix="isv-nginx-")
    replicas, ngx = [], None
    try:
        # The default loop per core: r3's bare SIGTERM (no drain) counts on the close serving
        # the connections still in each loop's accept queue (transport/listener.c) — a reset
        # one could carry a gRPC call nginx cannot resend.
        for i, p in enumerate(rports):
            replicas.append(Replica("r%d" % (i + 1), p, extra=("--drain-timeout-ms", "10000")))
        ngx = Nginx(workdir, render(http, grpc_port, rports))
        wait_port(http, "nginx", proc=ngx.proc)
        wait_port(grpc_port, "nginx", proc=ngx.proc)
        yield {"http": http, "grpc": grpc_port, "rports": rports, "replicas": replicas,
               "nginx": ngx, "workdir": workdir}
    finally:
        if ngx is not None:
            stop_process(ngx.proc, signal.SIGQUIT)  # graceful
        problems = []
        for r in replicas:
            rc = r.stop()
            if rc != 0:
                problems.append(r.describe(rc))
        shutil.rmtree(workdir, ignore_errors=True)
        assert not problems, "\n\n".join(problems)


def served_both(r):
    s = r.served()
    return s.get("v2_http", 0) > 0 and s.get("v2_grpc", 0) > 0


def grows(r, what, timeout=20.0):
    """Wait until replica r serves more `simple` requests than now (on both protocols)."""
    base = r.served()
    wait_for(lambda: all(r.served().get(p, 0) > base.get(p, 0) for p in ("v2_http", "v2_grpc")),
             "%s %s" % (r.name, what), timeout)


def test_nginx_drain_stop_and_restart_under_load(fleet):
    ngx, replicas, rports = fleet["nginx"], fleet["replicas"], fleet["rports"]
    r1, r2, r3 = replicas
    wrk = WrkLoad("http://127.0.0.1:%d" % fleet["http"], connections=WRK_CONNECTIONS,
                  workdir=fleet["workdir"])
    reloads = 0
    grpc_load = None
    try:
        grpc_load = GrpcLoad(fleet["grpc"], threads=4)
        wait_for(lambda: all(served_both(r) for r in replicas),
                 "every replica to serve REST and gRPC through nginx")

        # offline is invisible to nginx: r2 answers 503 on /v2/health/ready and still gets work
        r2.set_offline()
        grows(r2, "to keep being sent requests by nginx while offline")

        # the nginx drain: r2 `down` in both upstreams, reload, then SIGTERM it
        ngx.reload(render(fleet["http"], fleet["grpc"], rports, down=[rports[1]]))
        reloads += 1
        # the old worker finishes its requests and exits; then r2 gets nothing more
        wait_for(lambda: ngx.log().count("exited with code") >= reloads,
                 "nginx's old worker to finish its requests and exit")
        rc = r2.stop()
        assert rc == 0, r2.describe(rc)
        grows(r1, "to keep serving after r2's drain")

        # r3 stopped WITHOUT removing it from nginx: next_upstream retries what finds it gone
        rc = r3.stop()
        assert rc == 0, r3.describe(rc)
        grows(r1, "to carry the load alone")

        # restart both and put r2 back: a reload (whose new worker also forgets r3's failures;
        # without one, r3 would be tried again once fail_timeout passed)
        r2.start()
        r3.start()
        ngx.reload(render(fleet["http"], fleet["grpc"], rports))
        reloads += 1
        grows(r2, "to serve again after the reload")
        grows(r3, "to serve again after the reload")
    finally:
        res = wrk.result()
        ok, errors = (grpc_load.stop() if grpc_load
                      else (0, [(0.0, "the gRPC load did not start")]))

    print("wrk: %d requests, %d idle connections closed by reloads; gRPC: %d ok, %d slow ok"
          % (res["requests"], res["read_errors"], ok, grpc_load.slow_ok if grpc_load else 0))
    idle_closes = WRK_CONNECTIONS * reloads
    assert res["non2xx"] == 0 and res["socket_errors"] - res["read_errors"] == 0 and \
        res["read_errors"] <= idle_closes, \
        "wrk saw failures through nginx:\n%s\nnginx log:\n%s" % (res["report"], ngx.log()[-6000:])
    # gRPC: nothing may fail, r3's stop without a drain included (the two-step GOAWAY)
    assert not errors, "%d gRPC calls failed through nginx (%d ok), first: %r\nnginx log:\n%s" \
        % (len(errors), ok, errors[:5], ngx.log()[-6000:])
    assert res["requests"] > 0 and ok > 0
