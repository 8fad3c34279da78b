"""--threads N: the demo on N loops in N threads, all on the same port (SO_REUSEPORT), as one
group of servers (isv_options_set_group): the zoo is registered once and every loop serves it;
statistics and metrics count every loop's requests whichever loop answers; a load, an unload or
going offline asked of one loop holds on every loop for the next request; shared memory regions
and the per-client limit are the group's; the authorizer guards every loop; every loop listens
with TLS too and a SIGHUP reload reaches each. GET /custom/loop
tells which loop a connection reached. SIGTERM closes them all (exit 0)."""
import concurrent.futures as cf
import http.client
import json
import os
import re
import signal
import time
from multiprocessing import shared_memory

import numpy as np
import pytest
import requests

from grpc_stubs import load_stubs, make_channel, simple_request
from isvtest import TIMEOUT, simple_body
from test_tls import peer_cert_org, pki, tls_port  # noqa: F401 (pki: a fixture)

N = 40


def fresh(d, method, path, body=None, headers=None):
    """One request on a new connection (the kernel picks the loop): (status, body bytes)."""
    c = http.client.HTTPConnection(d.host, d.port, timeout=TIMEOUT)
    try:
        c.request(method, path, body=body, headers=headers or {})
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


def loops_reached(d, n=N, headers=None):
    seen = set()
    for _ in range(n):
        status, body = fresh(d, "GET", "/custom/loop", headers=headers)
        assert status == 200, (status, body)
        seen.add(int(body))
    return seen


def infer_simple(d, headers=None):
    h = {"Content-Type": "application/json"}
    h.update(headers or {})
    return fresh(d, "POST", "/v2/models/simple/infer", json.dumps(simple_body()), h)


def inference_count(d):
    status, body = fresh(d, "GET", "/v2/models/simple/stats")
    assert status == 200, body
    return json.loads(body)["model_stats"][0]["inference_count"]


def test_one_zoo_every_loop_one_count(start_demo):
    d = start_demo("--threads", "2")
    assert loops_reached(d) == {0, 1}  # both loops serve (2^-39 to fail)
    # each connection's stats, from whichever loop answers, count every loop's requests
    counts = []
    for _ in range(N):
        assert infer_simple(d)[0] == 200
        counts.append(inference_count(d))
    assert counts == list(range(1, N + 1)), counts
    # gRPC on its connections (either loop), then ModelStatistics and /metrics agree
    pb = load_stubs()
    for _ in range(4):
        ch = make_channel(d)
        try:
            stub = pb.pb_grpc.GRPCInferenceServiceStub(ch)
            assert stub.ModelInfer(simple_request(pb.pb)[0], timeout=TIMEOUT).model_name == "simple"
            st = stub.ModelStatistics(pb.pb.ModelStatisticsRequest(name="simple"), timeout=TIMEOUT)
            assert st.model_stats[0].inference_count >= N + 1
        finally:
            ch.close()
    for _ in range(8):
        status, body = fresh(d, "GET", "/metrics")
        text = body.decode()
        rest = re.search(r'isv_requests_total\{model="simple",version="1",protocol="v2_http",'
                         r'outcome="success"\} (\d+)', text)
        rpc = re.search(r'isv_requests_total\{model="simple",version="1",protocol="v2_grpc",'
                        r'outcome="success"\} (\d+)', text)
        assert (int(rest.group(1)), int(rpc.group(1))) == (N, 4), text


def test_unload_and_load_hold_on_every_loop(start_demo):
    d = start_demo("--threads", "2")
    status, body = fresh(d, "POST", "/v2/repository/models/simple/unload", b"{}")
    assert status == 200, body
    # the very next connections, on either loop: gone
    for _ in range(16):
        status, body = fresh(d, "GET", "/v2/models/simple/ready")
        assert status in (400, 404), (status, body)
        assert infer_simple(d)[0] == 404
    # loaded again through either loop (a config override): back everywhere, as configured
    status, body = fresh(d, "POST", "/v2/repository/models/simple/load",
                         json.dumps({"parameters": {"config": json.dumps({"max_batch_size": 4})}}))
    assert status == 200, body
    for _ in range(16):
        status, body = fresh(d, "GET", "/v2/models/simple/config")
        assert status == 200 and json.loads(body)["max_batch_size"] == 4, body
    # the index, from either loop, says READY
    for _ in range(8):
        status, body = fresh(d, "POST", "/v2/repository/index", b"{}")
        assert {"name": "simple", "version": "1", "state": "READY"} in json.loads(body)


def test_offline_on_one_loop_drains_every_loop(start_demo):
    d = start_demo("--threads", "2")
    assert fresh(d, "GET", "/grps/v1/health/offline")[0] == 200
    for _ in range(16):
        assert fresh(d, "GET", "/v2/health/ready")[0] != 200
        assert infer_simple(d)[0] == 200  # offline only drains: requests are still served
    assert fresh(d, "GET", "/grps/v1/health/online")[0] == 200
    for _ in range(16):
        assert fresh(d, "GET", "/v2/health/ready")[0] == 200


def test_a_shared_memory_region_registered_on_one_loop_serves_every_loop(start_demo):
    d = start_demo("--threads", "2", "--shared-memory")
    shm = shared_memory.SharedMemory(create=True, size=64)
    try:
        np.ndarray((16,), np.int32, buffer=shm.buf)[:] = np.arange(16, dtype=np.int32)
        status, body = fresh(d, "POST", "/v2/systemsharedmemory/region/in/register",
                             json.dumps({"key": "/" + shm.name, "offset": 0, "byte_size": 64}))
        assert status == 200, body
        req = {"inputs": [
            {"name": "INPUT0", "datatype": "INT32", "shape": [1, 16],
             "parameters": {"shared_memory_region": "in", "shared_memory_byte_size": 64}},
            {"name": "INPUT1", "datatype": "INT32", "shape": [1, 16], "data": [1] * 16}]}
        for _ in range(16):  # whichever loop the connection reaches knows the region
            status, body = fresh(d, "POST", "/v2/models/simple/infer", json.dumps(req),
                                 {"Content-Type": "application/json"})
            assert status == 200, body
            out = {o["name"]: o["data"] for o in json.loads(body)["outputs"]}
            assert out["OUTPUT0"] == list(range(1, 17))
        status, body = fresh(d, "POST", "/v2/systemsharedmemory/region/in/unregister", b"")
        assert status == 200
        for _ in range(8):
            status, body = fresh(d, "GET", "/v2/systemsharedmemory/status")
            assert json.loads(body) == []
    finally:
        shm.close()
        shm.unlink()


def test_the_per_client_limit_counts_every_loop(start_demo):
    d = start_demo("--threads", "2", "--max-client-requests", "2")
    slow = json.dumps({"inputs": [{"name": "INPUT0", "datatype": "INT32", "shape": [1],
                                   "data": [800]}]})
    with cf.ThreadPoolExecutor(6) as ex:
        got = list(ex.map(lambda _: fresh(d, "POST", "/v2/models/slow/infer", slow,
                                          {"Content-Type": "application/json"})[0], range(6)))
    # six at once from one address, on whichever loops: two in, the others 429
    assert sorted(got) == [200, 200, 429, 429, 429, 429], got


def test_every_loop_is_guarded(start_demo, tmp_path):
    token = tmp_path / "token"
    token.write_text("tok")
    d = start_demo("--threads", "2", "--bearer-token", str(token))
    for _ in range(16):
        assert fresh(d, "GET", "/v2/models/simple")[0] == 401
    ok = {"Authorization": "Bearer tok"}
    assert loops_reached(d, 24, ok) == {0, 1}  # both loops let the token in
    for _ in range(8):
        assert infer_simple(d, ok)[0] == 200


def test_the_default_is_a_loop_per_core(start_demo):
    d = start_demo()
    cores = len(os.sched_getaffinity(0))
    want = set(range(min(cores, 64)))
    assert loops_reached(d, 16 * len(want)) == want


def test_a_port_another_process_listens_on_is_refused(start_demo):
    d = start_demo("--threads", "2")
    # SO_REUSEPORT joins the demo's own loops, never a second demo on the same port
    with pytest.raises(RuntimeError, match="address already in use"):
        start_demo("--threads", "2", "--listen", "127.0.0.1:%d" % d.port)
    assert loops_reached(d, 16) == {0, 1}  # the first one still serves, on both loops


def test_bad_thread_counts_are_refused(start_demo):
    for v in ("0", "65", "x"):
        with pytest.raises(RuntimeError):
            start_demo("--threads", v)


def test_tls_on_every_loop_and_a_reload_reaching_each(start_demo, pki, tmp_path):
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert.write_bytes(open(pki("server.pem"), "rb").read())
    key.write_bytes(open(pki("server.key"), "rb").read())
    d = start_demo("--threads", "2", "--tls-listen", "127.0.0.1:0", "--tls-cert", str(cert),
                   "--tls-key", str(key))
    port = tls_port(d)
    ca = pki("ca.pem")
    seen = set()
    for _ in range(N):  # a new TLS connection each time: both loops answer
        with requests.Session() as s:
            r = s.get("https://127.0.0.1:%d/custom/loop" % port, verify=ca, timeout=TIMEOUT)
            assert r.status_code == 200
            seen.add(int(r.text))
    assert seen == {0, 1}
    cert.write_bytes(open(pki("server2.pem"), "rb").read())
    key.write_bytes(open(pki("server2.key"), "rb").read())
    d.send_signal(signal.SIGHUP)
    # once one connection sees the new certificate, the others soon do too: whichever loop
    # takes the next 16 connections has reloaded (each loop gets it on its own turn)
    deadline = time.time() + 5
    while time.time() < deadline and not all(peer_cert_org(port, ca) == "reloaded"
                                             for _ in range(16)):
        time.sleep(0.05)
    assert [peer_cert_org(port, ca) for _ in range(N)] == ["reloaded"] * N
