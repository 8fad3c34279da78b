"""deploy/haproxy/haproxy.cfg, run for real: HAProxy in front of three demo replicas, REST load
from wrk and gRPC load from a grpcio thread pool, and one replica drained and restarted while
the load runs — with zero failed requests, counted on both clients.

The drain is the one deploy/README.md documents: offline through the API (grps's
/grps/v1/health/offline) -> /v2/health/ready answers 503 -> HAProxy's active check marks the
replica DOWN -> its in-flight requests finish (scur 0 in HAProxy's stats) -> SIGTERM, exit 0
-> restarted on the same port -> HAProxy's checks bring it back UP and it serves again.
"""
import csv
import io
import os
import shutil
import tempfile

import pytest
import requests

from fleet import (GrpcLoad, Replica, WrkLoad, free_ports, process_log, start_process,
                   stop_process, wait_for, wait_port)
from isvtest import REPO_ROOT

CFG = os.path.join(REPO_ROOT, "deploy", "haproxy", "haproxy.cfg")
HAPROXY = shutil.which("haproxy") or "/usr/sbin/haproxy"
WRK = shutil.which("wrk")

pytestmark = pytest.mark.skipif(not (os.path.exists(HAPROXY) and WRK),
                                reason="haproxy or wrk missing (scripts/install-deps.sh)")


class Haproxy:
    def __init__(self, env, workdir):
        check = start_process([HAPROXY, "-c", "-f", CFG], "haproxy -c", env=env)
        assert check.wait(60) == 0, "haproxy -c rejects %s:\n%s" % (CFG, process_log(check))
        self.proc = start_process([HAPROXY, "-f", CFG, "-db"], "haproxy", cwd=workdir, env=env)
        self.stats_url = "http://127.0.0.1:%s/stats;csv" % env["ISV_STATS_PORT"]
        wait_port(int(env["ISV_STATS_PORT"]), "haproxy", proc=self.proc)

    def servers(self):
        """{(backend, server): row of HAProxy's CSV stats}."""
        text = requests.get(self.stats_url, timeout=5.0).text.lstrip("# ")
        return {(r["pxname"], r["svname"]): r for r in csv.DictReader(io.StringIO(text))
                if r["svname"] not in ("FRONTEND", "BACKEND")}

    def state(self, server):
        """(status in the REST backend, status in the gRPC backend, sessions on it in both)."""
        s = self.servers()
        h, g = s[("replicas_http", server)], s[("replicas_grpc", server)]
        return h["status"], g["status"], int(h["scur"]) + int(g["scur"])

    def wait_status(self, server, status):
        wait_for(lambda: self.state(server)[:2] == (status, status),
                 "HAProxy to see %s %s (now %r)" % (server, status, self.state(server)))

    def log(self):
        return process_log(self.proc)


@pytest.fixture
def fleet():
    http, grpc_port, stats, *rports = free_ports(6)
    workdir = tempfile.mkdtemp(prefix="isv-haproxy-")
    env = dict(os.environ, ISV_HTTP_PORT=str(http), ISV_GRPC_PORT=str(grpc_port),
               ISV_STATS_PORT=str(stats),
               **{"ISV_R%d" % (i + 1): "127.0.0.1:%d" % p for i, p in enumerate(rports)})
    replicas, hap = [], None
    try:
        for i, p in enumerate(rports):
            replicas.append(Replica("r%d" % (i + 1), p, extra=("--drain-timeout-ms", "10000")))
        hap = Haproxy(env, workdir)
        yield {"http": http, "grpc": grpc_port, "replicas": replicas, "haproxy": hap,
               "workdir": workdir}
    finally:
        if hap is not None:
            stop_process(hap.proc)
        problems = []
        for r in replicas:
            rc = r.stop()
            if rc != 0:
                problems.append(r.describe(rc))
        shutil.rmtree(workdir, ignore_errors=True)
        assert not problems, "\n\n".join(problems)


def test_drain_and_restart_under_load(fleet):
    hap, replicas = fleet["haproxy"], fleet["replicas"]
    for r in replicas:
        hap.wait_status(r.name, "UP")

    wrk = WrkLoad("http://127.0.0.1:%d" % fleet["http"], workdir=fleet["workdir"])
    grpc_load = None
    try:
        grpc_load = GrpcLoad(fleet["grpc"], threads=4)

        # the load spreads over every replica, on both protocols
        def all_served():
            return all(r.served().get("v2_http", 0) > 0 and r.served().get("v2_grpc", 0) > 0
                       for r in replicas)
        wait_for(all_served, "every replica to serve REST and gRPC: %r"
                 % [(r.name, r.served()) for r in replicas])

        # drain r2: offline -> HAProxy takes it out -> in-flight finish -> SIGTERM -> exit 0
        r2 = replicas[1]
        r2.set_offline()
        hap.wait_status(r2.name, "DOWN")
        inflight_at_down = hap.state(r2.name)[2]
        wait_for(lambda: hap.state(r2.name)[2] == 0, "r2's in-flight requests to finish")
        before = r2.served()
        rc = r2.stop()
        assert rc == 0, r2.describe(rc)

        # the others carry the load meanwhile
        others = {r.name: r.served() for r in replicas if r is not r2}
        wait_for(lambda: all(r.served() != others[r.name] for r in replicas if r is not r2),
                 "r1 and r3 to keep serving while r2 is down")

        # restart on the same port: HAProxy's checks bring it back, and it serves again
        r2.start()
        hap.wait_status(r2.name, "UP")
        wait_for(lambda: r2.served().get("v2_http", 0) > 0 and r2.served().get("v2_grpc", 0) > 0,
                 "the restarted r2 to serve REST and gRPC through HAProxy")
    finally:
        res = wrk.result()
        ok, errors = (grpc_load.stop() if grpc_load
                      else (0, [(0.0, "the gRPC load did not start")]))

    print("r2: %d sessions when marked DOWN, %r served before the drain; wrk: %d requests; "
          "gRPC: %d ok, %d slow ok" % (inflight_at_down, before, res["requests"], ok,
                                       grpc_load.slow_ok if grpc_load else 0))
    assert res["non2xx"] == 0 and res["socket_errors"] == 0, \
        "wrk saw failures through HAProxy:\n%s\nhaproxy log:\n%s" % (res["report"], hap.log())
    assert res["requests"] > 0, res["report"]
    assert not errors, "%d gRPC calls failed through HAProxy (%d ok), first: %r\nhaproxy log:\n%s" \
        % (len(errors), ok, [e for _, e in errors[:5]], hap.log())
    assert ok > 0
    for r in replicas:
        assert sum(r.served().values()) > 0, r.name
