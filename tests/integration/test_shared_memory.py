"""Triton's system shared memory extension, with real POSIX shared memory
(multiprocessing.shared_memory) shared between this test and a demo started with
--shared-memory (off by default): register / status / unregister over REST (requests) and gRPC
(grpcio, stubs from proto/), inputs read from regions and outputs written into them by the
"simple" (isv_request_alloc_output), "identity_fp32" (isv_request_set_output) and "simple_identity"
(BYTES) models, mixed with ordinary tensors, every client error (400 / INVALID_ARGUMENT naming
the problem), a region unregistered while a slow request uses it, concurrent registration, an
object truncated while a request uses it (issue #34: a 400 or a correct answer, never SIGBUS),
and the zero-copy form for trusted clients (--shared-memory-in-place)."""
import signal
import struct
import threading
import time
from multiprocessing import shared_memory

import grpc
import numpy as np
import pytest
import requests

import json

from grpc_stubs import (add_input, curl_h2, encode_raw, expect_rpc_error, load_stubs,
                        make_channel)
from isvtest import Demo

T = 10
SHM = "/v2/systemsharedmemory"


@pytest.fixture
def shm():
    """shm(size) -> a new POSIX shared memory object; all unlinked at the end."""
    made = []

    def make(size):
        s = shared_memory.SharedMemory(create=True, size=size)
        made.append(s)
        return s

    yield make
    for s in made:
        s.close()
        try:
            s.unlink()
        except FileNotFoundError:
            pass


def key_of(s):
    return "/" + s.name


SHM_FLAGS = ("--shared-memory",)


@pytest.fixture(scope="module")
def _shm_demo():
    """This file's demo: shared memory is off by default (the session's demo has none)."""
    holder = {"demo": Demo(extra_args=SHM_FLAGS)}
    yield holder
    holder["demo"].stop_and_check(signal.SIGTERM, timeout=10.0)


@pytest.fixture
def clean(_shm_demo):
    """The --shared-memory demo with no region registered, before and after the test; a test
    during which it died fails (a fresh one serves the next)."""
    demo = _shm_demo["demo"]
    if not demo.alive():
        _shm_demo["demo"] = demo = Demo(extra_args=SHM_FLAGS)
    requests.post(demo.url(SHM + "/unregister"), timeout=T)
    yield demo
    if not demo.alive():
        pytest.fail("the demo died during this test: " + demo.describe_exit(demo.proc.returncode),
                    pytrace=False)
    requests.post(demo.url(SHM + "/unregister"), timeout=T)


def register(demo, name, key, byte_size, offset=0):
    return requests.post(demo.url("%s/region/%s/register" % (SHM, name)), timeout=T,
                         json={"key": key, "offset": offset, "byte_size": byte_size})


def status(demo, name=None):
    path = SHM + ("/region/%s/status" % name if name else "/status")
    return requests.get(demo.url(path), timeout=T)


def shm_params(region, size, offset=None):
    p = {"shared_memory_region": region, "shared_memory_byte_size": size}
    if offset is not None:
        p["shared_memory_offset"] = offset
    return p


def err(resp, status, *needles):
    assert resp.status_code == status, (resp.status_code, resp.text)
    msg = resp.json()["error"]
    for n in needles:
        assert n in msg, (msg, n)
    return msg


A = np.arange(16, dtype=np.int32)
B = np.array([i * 7 - 50 for i in range(16)], dtype=np.int32)


# ---- register / status / unregister ---------------------------------------------------------

def test_register_status_unregister_rest(clean, shm):
    demo = clean
    s1, s2 = shm(4096), shm(256)
    ext = requests.get(demo.url("/v2"), timeout=T).json()["extensions"]
    assert "system_shared_memory" in ext and "cuda_shared_memory" not in ext
    r = register(demo, "in", key_of(s1), 1024, offset=100)
    assert r.status_code == 200, r.text
    assert register(demo, "out", key_of(s2), 256).status_code == 200
    r = status(demo)
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/json")
    assert r.json() == [{"name": "in", "key": key_of(s1), "offset": 100, "byte_size": 1024},
                        {"name": "out", "key": key_of(s2), "offset": 0, "byte_size": 256}]
    assert status(demo, "out").json() == [{"name": "out", "key": key_of(s2), "offset": 0,
                                           "byte_size": 256}]
    err(status(demo, "nope"), 404, "Unable to find system shared memory region: 'nope'")
    # Triton refuses a second registration of a name, whatever its key
    err(register(demo, "in", key_of(s2), 16), 400, "shared memory region 'in' already in manager")
    err(register(demo, "in", key_of(s1), 1024, offset=100), 400, "already in manager")
    r = requests.post(demo.url(SHM + "/region/out/unregister"), timeout=T)
    assert r.status_code == 200, r.text
    assert [g["name"] for g in status(demo).json()] == ["in"]
    # unregistering an unknown name is not an error (Triton)
    assert requests.post(demo.url(SHM + "/region/zzz/unregister"), timeout=T).status_code == 200
    assert requests.post(demo.url(SHM + "/unregister"), timeout=T).status_code == 200
    assert status(demo).json() == []
    assert register(demo, "in", key_of(s2), 256).status_code == 200  # the name is free again


def test_register_errors_rest(clean, shm):
    demo = clean
    s = shm(1000)
    err(register(demo, "x", "/isv-no-such-object-here", 16), 400,
        "Unable to open shared memory region: '/isv-no-such-object-here'", "no such")
    err(register(demo, "x", key_of(s), 1001), 400, "beyond the end", "1000 bytes")
    err(register(demo, "x", key_of(s), 1, offset=1000), 400, "beyond the end")
    err(register(demo, "x", key_of(s), 2, offset=2 ** 64 - 1), 400, "overflows")
    err(register(demo, "x", key_of(s), 2 ** 64 - 1, offset=2 ** 64 - 1), 400, "overflows")
    r = requests.post(demo.url(SHM + "/region/x/register"), timeout=T, json={"byte_size": 4})
    err(r, 400, "needs 'key'")
    r = requests.post(demo.url(SHM + "/region/x/register"), timeout=T, json={"key": key_of(s)})
    err(r, 400, "needs 'byte_size'")
    r = requests.post(demo.url(SHM + "/region/x/register"), timeout=T,
                      json={"key": key_of(s), "byte_size": -4})
    err(r, 400, "'byte_size' must be a non-negative integer")
    r = requests.post(demo.url(SHM + "/region/x/register"), timeout=T,
                      json={"key": 5, "byte_size": 4})
    err(r, 400, "'key' must be a string")
    r = requests.post(demo.url(SHM + "/region/x/register"), timeout=T, data=b"{nope")
    err(r, 400, "malformed")
    r = requests.post(demo.url(SHM + "/region/x/register"), timeout=T)
    err(r, 400, "JSON body")
    err(register(demo, "x", "", 4), 400, "'key' must name a POSIX shared memory object")
    assert status(demo).json() == []


def test_cuda_shared_memory_says_unsupported(clean):
    demo = clean
    r = requests.get(demo.url("/v2/cudasharedmemory/status"), timeout=T)
    assert r.status_code == 200 and r.json() == []
    assert requests.post(demo.url("/v2/cudasharedmemory/unregister"), timeout=T).status_code == 200
    r = requests.post(demo.url("/v2/cudasharedmemory/region/g/register"), timeout=T,
                      json={"raw_handle": {"b64": "AAAA"}, "device_id": 0, "byte_size": 4})
    err(r, 501, "CUDA shared memory is not supported")


def test_concurrent_register_same_name(clean, shm):
    demo = clean
    s = shm(4096)
    results = []
    barrier = threading.Barrier(8)

    def go():
        barrier.wait()
        results.append(register(demo, "race", key_of(s), 4096))

    threads = [threading.Thread(target=go) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    codes = sorted(r.status_code for r in results)
    assert codes == [200] + [400] * 7, [(r.status_code, r.text) for r in results]
    for r in results:
        if r.status_code == 400:
            assert "already in manager" in r.json()["error"]
    assert [g["name"] for g in status(demo).json()] == ["race"]


# ---- inference over REST --------------------------------------------------------------------

def simple_shm_body(inputs=("in", 0, 64), outputs=("out", 0, 64)):
    reg, o0, o1 = inputs
    body = {"inputs": [
        {"name": "INPUT0", "datatype": "INT32", "shape": [1, 16],
         "parameters": shm_params(reg, 64, o0)},
        {"name": "INPUT1", "datatype": "INT32", "shape": [1, 16],
         "parameters": shm_params(reg, 64, o1)}]}
    if outputs:
        reg, o0, o1 = outputs
        body["outputs"] = [{"name": "OUTPUT0", "parameters": shm_params(reg, 64, o0)},
                           {"name": "OUTPUT1", "parameters": shm_params(reg, 64, o1)}]
    return body


def test_infer_inputs_and_outputs_in_shm_rest(clean, shm):
    demo = clean
    si, so = shm(128), shm(4096 + 128)
    si.buf[:64] = A.tobytes()
    si.buf[64:128] = B.tobytes()
    assert register(demo, "in", key_of(si), 128).status_code == 200
    # the output region starts 4096 bytes into its object
    assert register(demo, "out", key_of(so), 128, offset=4096).status_code == 200
    for extra in ({}, {"parameters": {"binary_data_output": True}}):
        so.buf[4096:4096 + 128] = b"\0" * 128
        body = dict(simple_shm_body(), **extra)
        r = requests.post(demo.url("/v2/models/simple/infer"), json=body, timeout=T)
        assert r.status_code == 200, r.text
        assert r.headers["content-type"].startswith("application/json")  # nothing binary
        outs = r.json()["outputs"]
        # Triton's answer for outputs in shared memory: no data, no parameters
        assert outs == [{"name": "OUTPUT0", "datatype": "INT32", "shape": [1, 16]},
                        {"name": "OUTPUT1", "datatype": "INT32", "shape": [1, 16]}]
        got0 = np.frombuffer(bytes(so.buf[4096:4096 + 64]), dtype=np.int32)
        got1 = np.frombuffer(bytes(so.buf[4096 + 64:4096 + 128]), dtype=np.int32)
        assert (got0 == A + B).all() and (got1 == A - B).all()


def test_infer_mixed_shm_and_ordinary_tensors_rest(clean, shm):
    demo = clean
    s = shm(256)
    s.buf[:64] = A.tobytes()
    assert register(demo, "r", key_of(s), 256).status_code == 200
    body = {"inputs": [
        {"name": "INPUT0", "datatype": "INT32", "shape": [1, 16],
         "parameters": shm_params("r", 64)},
        {"name": "INPUT1", "datatype": "INT32", "shape": [1, 16], "data": B.tolist()}],
        "outputs": [{"name": "OUTPUT0", "parameters": shm_params("r", 64, 128)},
                    {"name": "OUTPUT1"}]}
    r = requests.post(demo.url("/v2/models/simple/infer"), json=body, timeout=T)
    assert r.status_code == 200, r.text
    o0, o1 = r.json()["outputs"]
    # as Triton: name, datatype and shape only (its C++ client takes "parameters" for binary)
    assert "data" not in o0 and "parameters" not in o0, o0
    assert o0["shape"] == [1, 16] and o0["datatype"] == "INT32", o0
    assert o1["data"] == (A - B).tolist()
    assert (np.frombuffer(bytes(s.buf[128:192]), dtype=np.int32) == A + B).all()
    # the input region was only read
    assert (np.frombuffer(bytes(s.buf[:64]), dtype=np.int32) == A).all()


def test_infer_copied_output_and_bytes_rest(clean, shm):
    """identity_fp32 sets its output to the input's memory (copied into the region once);
    simple_identity's BYTES travel as u32-LE length + bytes in shared memory."""
    demo = clean
    s = shm(1 << 16)
    x = np.linspace(-1, 1, 1000, dtype=np.float32)
    s.buf[:4000] = x.tobytes()
    assert register(demo, "r", key_of(s), 1 << 16).status_code == 200
    body = {"inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [10, 100],
                        "parameters": shm_params("r", 4000)}],
            "outputs": [{"name": "OUTPUT0", "parameters": shm_params("r", 4000, 8192)}]}
    r = requests.post(demo.url("/v2/models/identity_fp32/infer"), json=body, timeout=T)
    assert r.status_code == 200, r.text
    assert (np.frombuffer(bytes(s.buf[8192:12192]), dtype=np.float32) == x).all()

    elems = [b"hello", b"", b"shared \xff memory"]
    ser = b"".join(struct.pack("<I", len(e)) + e for e in elems)
    s.buf[20000:20000 + len(ser)] = ser
    body = {"inputs": [{"name": "INPUT0", "datatype": "BYTES", "shape": [1, 3],
                        "parameters": shm_params("r", len(ser), 20000)}],
            "outputs": [{"name": "OUTPUT0", "parameters": shm_params("r", 1000, 30000)}]}
    r = requests.post(demo.url("/v2/models/simple_identity/infer"), json=body, timeout=T)
    assert r.status_code == 200, r.text
    (o,) = r.json()["outputs"]
    assert "data" not in o and "parameters" not in o and o["shape"] == [1, 3], o
    assert bytes(s.buf[30000:30000 + len(ser)]) == ser


def test_infer_errors_rest(clean, shm):
    demo = clean
    s = shm(256)
    assert register(demo, "r", key_of(s), 128, offset=64).status_code == 200

    def post(body, model="simple"):
        return requests.post(demo.url("/v2/models/%s/infer" % model), json=body, timeout=T)

    def one(params, data=None, outputs=None):
        inp = {"name": "INPUT0", "datatype": "INT32", "shape": [1, 16], "parameters": params}
        if data is not None:
            inp["data"] = data
        body = {"inputs": [inp, {"name": "INPUT1", "datatype": "INT32", "shape": [1, 16],
                                 "data": B.tolist()}]}
        if outputs:
            body["outputs"] = outputs
        return post(body)

    err(one(shm_params("nope", 64)), 400, "input 'INPUT0'",
        "Unable to find shared memory region: 'nope'")
    err(one(shm_params("r", 64, 65)), 400, "Invalid offset + byte size for shared memory region: "
        "'r'", "holds 128 bytes")
    err(one(shm_params("r", 64, 2 ** 63 - 1)), 400, "Invalid offset + byte size")
    err(one(shm_params("r", 2 ** 63, 2 ** 63)), 400, "overflows")
    err(one(shm_params("r", 2 ** 64 - 1, 2 ** 64 - 1)), 400, "overflows")
    err(one(shm_params("r", 32)), 400, "shared_memory_byte_size is 32", "needs 64 bytes")
    err(one({"shared_memory_region": "r"}), 400, "needs both 'shared_memory_region' and "
        "'shared_memory_byte_size'")
    err(one({"shared_memory_byte_size": 64}), 400, "needs both")
    err(one(shm_params("r", 64), data=A.tolist()), 400, "shared memory parameters and 'data'")
    err(one({"shared_memory_region": 5, "shared_memory_byte_size": 64}), 400,
        "'shared_memory_region' must be a string")
    err(one(shm_params("r", -1)), 400, "'shared_memory_byte_size' must be a non-negative integer")
    err(one(shm_params("r", 64, "0")), 400, "'shared_memory_offset' must be a non-negative")
    err(one(shm_params("r", 64, 2)), 400, "misaligned")
    # outputs
    err(one(shm_params("r", 64), outputs=[{"name": "OUTPUT0",
                                           "parameters": shm_params("r", 32)}]), 400,
        "output 'OUTPUT0' (32 bytes) should be at least 64 bytes to hold the results")
    err(one(shm_params("r", 64), outputs=[{"name": "OUTPUT0",
                                           "parameters": shm_params("gone", 64)}]), 400,
        "output 'OUTPUT0'", "Unable to find shared memory region: 'gone'")
    err(one(shm_params("r", 64), outputs=[{"name": "OUTPUT0",
                                           "parameters": shm_params("r", 64, 100)}]), 400,
        "Invalid offset + byte size")
    # still serving
    r = one(shm_params("r", 64))
    assert r.status_code == 200, r.text


def test_object_shrunk_after_registration(clean, shm):
    """A client that truncates its object below a registered region gets a 400, not a server
    killed by SIGBUS."""
    demo = clean
    s = shm(8192)
    assert register(demo, "r", key_of(s), 128, offset=4096).status_code == 200
    with open("/dev/shm/" + s.name, "r+b") as f:
        f.truncate(4096)
    body = simple_shm_body(inputs=("r", 0, 64), outputs=None)
    err(requests.post(demo.url("/v2/models/simple/infer"), json=body, timeout=T), 400,
        "was shrunk below the region")
    with open("/dev/shm/" + s.name, "r+b") as f:
        f.truncate(8192)
    r = requests.post(demo.url("/v2/models/simple/infer"), json=body, timeout=T)
    assert r.status_code == 200, r.text


def test_unregister_while_in_flight(clean, shm):
    """A slow request keeps its regions mapped after they are unregistered: it completes and
    writes its output; the name is free at once."""
    demo = clean
    s = shm(64)
    s.buf[:4] = struct.pack("<i", 700)
    assert register(demo, "slowreg", key_of(s), 64).status_code == 200
    body = {"inputs": [{"name": "INPUT0", "datatype": "INT32", "shape": [1],
                        "parameters": shm_params("slowreg", 4)}],
            "outputs": [{"name": "OUTPUT0", "parameters": shm_params("slowreg", 4, 32)}]}
    res = {}

    def go():
        res["r"] = requests.post(demo.url("/v2/models/slow/infer"), json=body, timeout=T)

    t = threading.Thread(target=go)
    t.start()
    time.sleep(0.25)
    assert requests.post(demo.url(SHM + "/region/slowreg/unregister"), timeout=T).status_code == 200
    assert status(demo).json() == []
    s2 = shm(64)
    assert register(demo, "slowreg", key_of(s2), 64).status_code == 200  # a new region
    t.join()
    r = res["r"]
    assert r.status_code == 200, r.text
    got = struct.unpack("<i", bytes(s.buf[32:36]))[0]
    assert got != 0  # written into the OLD region, still mapped
    assert bytes(s2.buf[32:36]) == b"\0\0\0\0"


# ---- a client truncating its object while a request uses it (issue #34) ---------------------

SLOW_MS = 700
SHRUNK = "shared memory region 'att' was shrunk below the region while the request used it"


def shrink_to_zero(s):
    with open("/dev/shm/" + s.name, "r+b") as f:
        f.truncate(0)


def slow_rest(demo, input_in_shm, output_in_shm):
    inp = {"name": "INPUT0", "datatype": "INT32", "shape": [1]}
    if input_in_shm:
        inp["parameters"] = shm_params("att", 4)
    else:
        inp["data"] = [SLOW_MS]
    body = {"inputs": [inp]}
    if output_in_shm:
        body["outputs"] = [{"name": "OUTPUT0", "parameters": shm_params("att", 4, 64)}]
    return requests.post(demo.url("/v2/models/slow/infer"), json=body, timeout=T)


def slow_grpc(demo, input_in_shm, output_in_shm):
    pb = load_stubs()
    req = pb.pb.ModelInferRequest(model_name="slow")
    if input_in_shm:
        shm_param_map(pb.pb, add_input(req, "INPUT0", "INT32", [1]), "att", 4)
    else:
        add_input(req, "INPUT0", "INT32", [1], raw=encode_raw("INT32", [SLOW_MS]))
    if output_in_shm:
        o = req.outputs.add()
        o.name = "OUTPUT0"
        shm_param_map(pb.pb, o, "att", 4, 64)
    with make_channel(demo) as ch:
        stub = pb.pb_grpc.GRPCInferenceServiceStub(ch)
        try:
            return stub.ModelInfer(req, timeout=T), None
        except grpc.RpcError as e:
            return None, e


def attack(demo, s, send):
    """send() runs the slow model (700 ms) while the object is truncated to 0 after 250 ms."""
    s.buf[:4] = struct.pack("<i", SLOW_MS)
    assert register(demo, "att", key_of(s), 128).status_code == 200
    res = {}
    t = threading.Thread(target=lambda: res.update(r=send()))
    t.start()
    time.sleep(0.25)
    shrink_to_zero(s)
    t.join()
    # the server lives and serves
    assert requests.get(demo.url("/v2/health/live"), timeout=T).status_code == 200
    assert requests.get(demo.url("/v2/health/ready"), timeout=T).status_code == 200
    return res["r"]


@pytest.mark.parametrize("proto", ["rest", "grpc"])
def test_object_truncated_while_its_output_is_computed(clean, shm, proto):
    """The output cannot be written into a region whose object shrank: 400 / INVALID_ARGUMENT
    naming the region (before the fix: SIGBUS in the library, copying the output)."""
    s = shm(4096)
    if proto == "rest":
        err(attack(clean, s, lambda: slow_rest(clean, False, True)), 400, "output 'OUTPUT0'",
            SHRUNK)
    else:
        resp, e = attack(clean, s, lambda: slow_grpc(clean, False, True))
        assert resp is None and e.code() == grpc.StatusCode.INVALID_ARGUMENT, (resp, e)
        assert SHRUNK in e.details(), e.details()


@pytest.mark.parametrize("proto", ["rest", "grpc"])
def test_object_truncated_while_its_input_is_used(clean, shm, proto):
    """The backend computes on its private copy of the input, taken before it ran: the answer
    is right (before the fix: SIGBUS in the model, reading the client's mapping)."""
    s = shm(4096)
    if proto == "rest":
        r = attack(clean, s, lambda: slow_rest(clean, True, False))
        assert r.status_code == 200, r.text
        assert r.json()["outputs"][0]["data"] == [SLOW_MS]
    else:
        resp, e = attack(clean, s, lambda: slow_grpc(clean, True, False))
        assert e is None, e
        assert struct.unpack("<i", resp.raw_output_contents[0])[0] == SLOW_MS
    # a request after the shrink reads short: 400 naming the region
    err(slow_rest(clean, True, False), 400, "input 'INPUT0'", SHRUNK)


def test_in_place_for_trusted_clients(start_demo, shm):
    """--shared-memory-in-place (isv_options_set_shared_memory_in_place): the zero-copy form
    serves the same answers."""
    demo = start_demo("--shared-memory-in-place")
    s = shm(4096)
    s.buf[:64] = A.tobytes()
    s.buf[64:128] = B.tobytes()
    assert register(demo, "r", key_of(s), 4096).status_code == 200
    body = simple_shm_body(inputs=("r", 0, 64), outputs=("r", 256, 320))
    r = requests.post(demo.url("/v2/models/simple/infer"), json=body, timeout=T)
    assert r.status_code == 200, r.text
    assert (np.frombuffer(bytes(s.buf[256:320]), dtype=np.int32) == A + B).all()
    assert (np.frombuffer(bytes(s.buf[320:384]), dtype=np.int32) == A - B).all()


def test_register_and_infer_over_h2c(clean, shm):
    demo = clean
    s = shm(256)
    s.buf[:64] = A.tobytes()
    s.buf[64:128] = B.tobytes()
    reg = json.dumps({"key": key_of(s), "offset": 0, "byte_size": 256}).encode()
    r = curl_h2(demo, SHM + "/region/h2/register", data=reg,
                headers=["Content-Type: application/json"])
    assert r.status == 200, r.body
    r = curl_h2(demo, SHM + "/status")
    assert json.loads(r.body) == [{"name": "h2", "key": key_of(s), "offset": 0, "byte_size": 256}]
    body = json.dumps(simple_shm_body(inputs=("h2", 0, 64), outputs=("h2", 128, 192))).encode()
    r = curl_h2(demo, "/v2/models/simple/infer", data=body,
                headers=["Content-Type: application/json"])
    assert r.status == 200, r.body
    assert all("data" not in o for o in json.loads(r.body)["outputs"])
    assert (np.frombuffer(bytes(s.buf[128:192]), dtype=np.int32) == A + B).all()
    assert (np.frombuffer(bytes(s.buf[192:256]), dtype=np.int32) == A - B).all()
    r = curl_h2(demo, SHM + "/region/h2/register", data=reg,
                headers=["Content-Type: application/json"])
    assert r.status == 400 and b"already in manager" in r.body


# ---- gRPC -----------------------------------------------------------------------------------

@pytest.fixture
def g(clean):
    pb = load_stubs()
    with make_channel(clean) as ch:
        yield pb.pb, pb.pb_grpc.GRPCInferenceServiceStub(ch), clean


def shm_param_map(pbm, t, region, size, offset=None):
    t.parameters["shared_memory_region"].string_param = region
    t.parameters["shared_memory_byte_size"].int64_param = size
    if offset is not None:
        t.parameters["shared_memory_offset"].int64_param = offset


def test_grpc_register_status_unregister(g, shm):
    pb, stub, demo = g
    s = shm(4096)
    stub.SystemSharedMemoryRegister(pb.SystemSharedMemoryRegisterRequest(
        name="gr", key=key_of(s), offset=16, byte_size=1000), timeout=T)
    st = stub.SystemSharedMemoryStatus(pb.SystemSharedMemoryStatusRequest(), timeout=T)
    assert list(st.regions) == ["gr"]
    rs = st.regions["gr"]
    assert (rs.name, rs.key, rs.offset, rs.byte_size) == ("gr", key_of(s), 16, 1000)
    st = stub.SystemSharedMemoryStatus(pb.SystemSharedMemoryStatusRequest(name="gr"), timeout=T)
    assert st.regions["gr"].byte_size == 1000
    expect_rpc_error(stub.SystemSharedMemoryStatus, grpc.StatusCode.NOT_FOUND,
                     "Unable to find system shared memory region: 'x'",
                     request=pb.SystemSharedMemoryStatusRequest(name="x"), timeout=T)
    expect_rpc_error(stub.SystemSharedMemoryRegister, grpc.StatusCode.INVALID_ARGUMENT,
                     "already in manager", request=pb.SystemSharedMemoryRegisterRequest(
                         name="gr", key=key_of(s), byte_size=8), timeout=T)
    expect_rpc_error(stub.SystemSharedMemoryRegister, grpc.StatusCode.INVALID_ARGUMENT,
                     "Unable to open shared memory region", request=pb.SystemSharedMemoryRegisterRequest(
                         name="g2", key="/isv-nope-nope", byte_size=8), timeout=T)
    expect_rpc_error(stub.SystemSharedMemoryRegister, grpc.StatusCode.INVALID_ARGUMENT,
                     "beyond the end", request=pb.SystemSharedMemoryRegisterRequest(
                         name="g2", key=key_of(s), offset=4000, byte_size=97), timeout=T)
    expect_rpc_error(stub.SystemSharedMemoryRegister, grpc.StatusCode.INVALID_ARGUMENT,
                     "overflows", request=pb.SystemSharedMemoryRegisterRequest(
                         name="g2", key=key_of(s), offset=2 ** 64 - 8, byte_size=97), timeout=T)
    # REST sees the same registry
    assert [x["name"] for x in status(demo).json()] == ["gr"]
    stub.SystemSharedMemoryUnregister(pb.SystemSharedMemoryUnregisterRequest(name="gr"), timeout=T)
    assert len(stub.SystemSharedMemoryStatus(pb.SystemSharedMemoryStatusRequest(),
                                             timeout=T).regions) == 0
    # CUDA: nothing registered, registering refused with a clear message
    assert len(stub.CudaSharedMemoryStatus(pb.CudaSharedMemoryStatusRequest(),
                                           timeout=T).regions) == 0
    stub.CudaSharedMemoryUnregister(pb.CudaSharedMemoryUnregisterRequest(), timeout=T)
    expect_rpc_error(stub.CudaSharedMemoryRegister, grpc.StatusCode.UNIMPLEMENTED,
                     "CUDA shared memory is not supported",
                     request=pb.CudaSharedMemoryRegisterRequest(name="c", byte_size=4), timeout=T)


def test_grpc_infer_shm(g, shm):
    pb, stub, demo = g
    s = shm(512)
    s.buf[:64] = A.tobytes()
    s.buf[64:128] = B.tobytes()
    stub.SystemSharedMemoryRegister(pb.SystemSharedMemoryRegisterRequest(
        name="r", key=key_of(s), byte_size=512), timeout=T)
    # every tensor in shared memory, as tritonclient sends it (no raw_input_contents)
    req = pb.ModelInferRequest(model_name="simple")
    shm_param_map(pb, add_input(req, "INPUT0", "INT32", [1, 16]), "r", 64)
    shm_param_map(pb, add_input(req, "INPUT1", "INT32", [1, 16]), "r", 64, 64)
    for name, off in (("OUTPUT0", 256), ("OUTPUT1", 320)):
        o = req.outputs.add()
        o.name = name
        shm_param_map(pb, o, "r", 64, off)
    resp = stub.ModelInfer(req, timeout=T)
    assert [o.name for o in resp.outputs] == ["OUTPUT0", "OUTPUT1"]
    assert list(resp.raw_output_contents) == [b"", b""]
    p0 = resp.outputs[0].parameters
    assert p0["shared_memory_region"].string_param == "r"
    assert p0["shared_memory_byte_size"].int64_param == 64
    assert resp.outputs[1].parameters["shared_memory_offset"].int64_param == 320
    assert (np.frombuffer(bytes(s.buf[256:320]), dtype=np.int32) == A + B).all()
    assert (np.frombuffer(bytes(s.buf[320:384]), dtype=np.int32) == A - B).all()

    # mixed: INPUT0 in shm, INPUT1 raw (its raw entry is the first: shm inputs take none);
    # OUTPUT1 in the response
    req = pb.ModelInferRequest(model_name="simple")
    shm_param_map(pb, add_input(req, "INPUT0", "INT32", [1, 16]), "r", 64)
    add_input(req, "INPUT1", "INT32", [1, 16], raw=encode_raw("INT32", B.tolist()))
    o = req.outputs.add()
    o.name = "OUTPUT0"
    shm_param_map(pb, o, "r", 64, 448)
    req.outputs.add().name = "OUTPUT1"
    resp = stub.ModelInfer(req, timeout=T)
    assert resp.raw_output_contents[0] == b""
    assert (np.frombuffer(resp.raw_output_contents[1], dtype=np.int32) == A - B).all()
    assert (np.frombuffer(bytes(s.buf[448:512]), dtype=np.int32) == A + B).all()

    # errors
    def bad(region, size, offset=None, raw=False):
        req = pb.ModelInferRequest(model_name="simple")
        t = add_input(req, "INPUT0", "INT32", [1, 16],
                      raw=encode_raw("INT32", A.tolist()) if raw else None)
        shm_param_map(pb, t, region, size, offset)
        add_input(req, "INPUT1", "INT32", [1, 16], raw=encode_raw("INT32", B.tolist()))
        return req

    code = grpc.StatusCode.INVALID_ARGUMENT
    expect_rpc_error(stub.ModelInfer, code, "Unable to find shared memory region: 'zz'",
                     request=bad("zz", 64), timeout=T)
    expect_rpc_error(stub.ModelInfer, code, "Invalid offset + byte size",
                     request=bad("r", 64, 500), timeout=T)
    expect_rpc_error(stub.ModelInfer, code, "shared_memory_byte_size is 60",
                     request=bad("r", 60), timeout=T)
    expect_rpc_error(stub.ModelInfer, code, "Invalid offset + byte size",
                     request=bad("r", 2 ** 63 - 1, 2 ** 63 - 1), timeout=T)
    req = bad("r", 64)
    req.inputs[0].parameters["shared_memory_byte_size"].uint64_param = 2 ** 64 - 1
    req.inputs[0].parameters["shared_memory_offset"].uint64_param = 2 ** 64 - 1
    expect_rpc_error(stub.ModelInfer, code, "overflows", request=req, timeout=T)
    expect_rpc_error(stub.ModelInfer, code, "shared memory parameters and a raw_input_contents",
                     request=bad("r", 64, raw=True), timeout=T)
    req = bad("r", 64)
    o = req.outputs.add()
    o.name = "OUTPUT0"
    shm_param_map(pb, o, "r", 8)
    expect_rpc_error(stub.ModelInfer, code, "should be at least 64 bytes", request=req, timeout=T)
    req = bad("r", 64)
    req.inputs[0].parameters["shared_memory_byte_size"].string_param = "64"
    expect_rpc_error(stub.ModelInfer, code, "must be a non-negative integer", request=req,
                     timeout=T)


def test_disabled_by_the_host(demo, shm):
    """isv_options_set_shared_memory off (the library's default and the demo's, as the shared
    demo runs): not advertised, registering refused 501 / UNIMPLEMENTED saying why, a tensor
    naming a region refused 400."""
    s = shm(64)
    assert "system_shared_memory" not in requests.get(demo.url("/v2"), timeout=T).json()["extensions"]
    err(register(demo, "r", key_of(s), 64), 501, "system shared memory is not enabled",
        "isv_options_set_shared_memory")
    assert status(demo).json() == []
    body = simple_shm_body(outputs=None)
    err(requests.post(demo.url("/v2/models/simple/infer"), json=body, timeout=T), 400,
        "system shared memory is not enabled")
    pb = load_stubs()
    with make_channel(demo) as ch:
        stub = pb.pb_grpc.GRPCInferenceServiceStub(ch)
        expect_rpc_error(stub.SystemSharedMemoryRegister, grpc.StatusCode.UNIMPLEMENTED,
                         "not enabled", request=pb.pb.SystemSharedMemoryRegisterRequest(
                             name="r", key=key_of(s), byte_size=64), timeout=T)
        md = stub.ServerMetadata(pb.pb.ServerMetadataRequest(), timeout=T)
        assert "system_shared_memory" not in md.extensions


def test_dynamic_batching_each_request_its_rows_in_its_region(clean, shm):
    """cost_batched (dynamic batching, 500 µs): concurrent requests whose inputs and outputs are
    in one region run as batches; each request's rows are copied into its own output slice."""
    demo = clean
    n = 12
    s = shm(n * 32 * 2)
    rows = [np.arange(4, dtype=np.float32) + 10 * i for i in range(n)]
    for i, x in enumerate(rows):
        s.buf[i * 16:(i + 1) * 16] = x.tobytes()
    assert register(demo, "b", key_of(s), n * 32 * 2).status_code == 200
    out_base = n * 16
    barrier = threading.Barrier(n)
    res = [None] * n

    def go(i):
        body = {"inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [1, 4],
                            "parameters": shm_params("b", 16, i * 16)}],
                "outputs": [{"name": "OUTPUT0",
                             "parameters": shm_params("b", 16, out_base + i * 16)}]}
        with requests.Session() as sess:
            barrier.wait()
            res[i] = sess.post(demo.url("/v2/models/cost_batched/infer"), json=body, timeout=T)

    threads = [threading.Thread(target=go, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(n):
        assert res[i].status_code == 200, res[i].text
        got = np.frombuffer(bytes(s.buf[out_base + i * 16:out_base + (i + 1) * 16]),
                            dtype=np.float32)
        assert (got == rows[i]).all(), (i, got, rows[i])
    stats = requests.get(demo.url("/v2/models/cost_batched/stats"), timeout=T).json()
    sizes = [b["batch_size"] for b in stats["model_stats"][0]["batch_stats"]]
    assert sizes, stats  # (how the requests were grouped depends on timing)
