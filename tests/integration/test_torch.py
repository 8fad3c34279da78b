"""examples/torch: a real TorchScript module behind the library. The module is built here, at
test time, with Debian's python3-torch (fixed seed), saved, and served by inferserve-torch;
every protocol's answer must equal torch's own forward of the same saved module on the same
float32 rows, bit for bit.

Batching and bit-for-bit: a server answers each row from a forward over whatever rows the
batcher gathered, so a row's answer equals torch's forward of that row alone only if torch's
arithmetic for a row does not depend on the other rows in the batch. Requests that carry their
own batch are compared with torch's forward on the same batch (same composition: always
exact). For the concurrent single-row requests, whose batch composition the server chooses,
the module fixture first checks that torch is batch-invariant for this model on this machine
(Debian's torch does its GEMMs in the reference BLAS: the sum over k for an output element does
not depend on the other rows), and compares exactly; if it were not, the comparison is made
against torch's forward on every possible neighbour count with a tolerance and the test says
why."""
import concurrent.futures
import glob
import json
import os
import pathlib
import re
import signal
import subprocess

import numpy as np
import pytest
import requests

from grpc_stubs import add_input, load_stubs, make_channel, outputs_of

T = 10.0
F, H, C = 16, 64, 10


def have_libtorch():
    """Whether LibTorch's CMake package (Debian libtorch-dev) is on the machine."""
    return any(glob.glob(p) for p in ("/usr/lib/*/cmake/Torch/TorchConfig.cmake",
                                      "/usr/share/cmake/Torch/TorchConfig.cmake",
                                      "/usr/local/lib/*/cmake/Torch/TorchConfig.cmake",
                                      "/usr/local/share/cmake/Torch/TorchConfig.cmake"))


try:
    import torch
except ImportError:  # the modules are built with it: without LibTorch, nothing to test
    if have_libtorch():
        raise RuntimeError("python3-torch is not installed although libtorch-dev is: "
                           "scripts/install-deps.sh installs both")
    pytest.skip("libtorch-dev and python3-torch are not installed", allow_module_level=True)


def example_binary():
    demo = os.environ.get("INFERSERVE_DEMO")
    build = pathlib.Path(demo).resolve().parents[2] if demo else \
        pathlib.Path(__file__).resolve().parents[2] / "build"
    path = build / "examples" / "torch" / "inferserve-torch"
    if not path.exists():
        if not torch_wanted(build):
            pytest.skip("%s was configured without the LibTorch example (-Dtorch=enabled asks "
                        "for it; a release build leaves it out by default)" % build)
        # built whenever it is wanted and libtorch-dev is there (scripts/install-deps.sh)
        if have_libtorch():
            pytest.fail("%s was not built although libtorch-dev is installed" % path)
        pytest.skip("libtorch-dev is not installed")
    return path


def torch_wanted(build):
    """Whether the build directory asks for examples/torch: -Dtorch=enabled, or auto outside a
    release, minsize or plain build (the top meson.build's rule)."""
    import json
    try:
        opts = {o["name"]: o["value"] for o in
                json.load(open(build / "meson-info" / "intro-buildoptions.json"))}
    except (OSError, ValueError):
        return True  # not a meson build directory we can read: expect it
    torch_opt, buildtype = opts.get("torch", "auto"), opts.get("buildtype", "debugoptimized")
    return torch_opt == "enabled" or (torch_opt == "auto" and
                                      buildtype not in ("release", "minsize", "plain"))


class Server:
    def __init__(self, model_path, *flags, banner=r"mlp \(input \[16\], 1 outputs\)"):
        self.proc = subprocess.Popen([str(example_binary()), "--model", str(model_path),
                                      "--port", "0", *flags],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        m = re.match(r"inferserve-torch serving %s on (\d+)" % banner, line)
        assert m, (line, self.proc.stderr.read() if self.proc.poll() is not None else "")
        self.host, self.port = "127.0.0.1", int(m.group(1))

    def url(self, path):
        return "http://%s:%d%s" % (self.host, self.port, path)

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        assert self.proc.wait(timeout=10) == 0, self.proc.stderr.read()


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(F, H), torch.nn.ReLU(),
                                       torch.nn.Linear(H, H), torch.nn.ReLU(),
                                       torch.nn.Linear(H, C))

    def forward(self, x):
        return torch.softmax(self.net(x), dim=1)


def forward(module, rows):
    """torch's own answer: the saved module, loaded back, one intra-op thread as the server."""
    with torch.inference_mode():
        return module(torch.from_numpy(np.ascontiguousarray(rows))).numpy()


@pytest.fixture(scope="module")
def scripted(tmp_path_factory):
    torch.set_num_threads(1)
    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("torch") / "mlp.pt"
    torch.jit.script(MLP().eval()).save(str(path))
    module = torch.jit.load(str(path))
    module.eval()
    rows = np.random.default_rng(0).standard_normal((64, F)).astype(np.float32)
    full = forward(module, rows)
    # is a row's answer independent of the other rows of its batch? (see the top of this file)
    invariant = all(np.array_equal(forward(module, rows[i:i + 1])[0], full[i])
                    for i in range(len(rows)))
    return path, module, rows, invariant


@pytest.fixture(scope="module")
def server(scripted):
    s = Server(scripted[0], "--max-batch", "128")  # all 64 rows in one request
    yield s
    s.stop()


def test_v2_rest_matches_torch_bit_for_bit(server, scripted):
    _, module, rows, _ = scripted
    body = {"inputs": [{"name": "INPUT__0", "datatype": "FP32", "shape": list(rows.shape),
                        "data": [float(v) for v in rows.ravel()]}]}
    r = requests.post(server.url("/v2/models/mlp/infer"), data=json.dumps(body), timeout=T)
    assert r.status_code == 200, r.text
    out = r.json()["outputs"][0]
    assert out["name"] == "OUTPUT__0" and out["datatype"] == "FP32"
    assert out["shape"] == [len(rows), C]
    got = np.array(out["data"], dtype=np.float32).reshape(len(rows), C)
    want = forward(module, rows)
    assert np.array_equal(got, want), (got[:2], want[:2])


def test_v2_grpc_raw_matches_torch(server, scripted):
    _, module, rows, _ = scripted
    pb = load_stubs()
    for batch in (rows, rows[:1], rows[5:22]):
        req = pb.pb.ModelInferRequest(model_name="mlp")
        add_input(req, "INPUT__0", "FP32", list(batch.shape), raw=batch.tobytes())
        with make_channel(server) as ch:
            resp = pb.pb_grpc.GRPCInferenceServiceStub(ch).ModelInfer(req, timeout=T)
        dt, shape, raw = outputs_of(resp)["OUTPUT__0"]
        assert dt == "FP32" and shape == [len(batch), C]
        got = np.frombuffer(raw, dtype="<f4").reshape(-1, C)
        assert np.array_equal(got, forward(module, batch))


def test_tf_serving_predict_matches_torch(server, scripted):
    _, module, rows, _ = scripted
    inst = [[float(v) for v in row] for row in rows[40:44]]
    r = requests.post(server.url("/v1/models/mlp:predict"), json={"instances": inst}, timeout=T)
    assert r.status_code == 200, r.text
    got = np.array(r.json()["predictions"], dtype=np.float32)
    assert np.array_equal(got, forward(module, rows[40:44]))


def test_concurrent_rows_are_batched_into_one_forward(scripted):
    path, module, rows, invariant = scripted
    s = Server(path, "--batch-delay-us", "20000", "--max-batch", "64")
    try:
        def one(i):
            r = requests.post(s.url("/v2/models/mlp/infer"), timeout=T, json={
                "inputs": [{"name": "INPUT__0", "datatype": "FP32", "shape": [1, F],
                            "data": [float(v) for v in rows[i]]}]})
            assert r.status_code == 200, r.text
            return i, np.array(r.json()["outputs"][0]["data"], dtype=np.float32)
        with concurrent.futures.ThreadPoolExecutor(16) as pool:
            results = list(pool.map(one, range(48)))
        for i, got in results:
            want = forward(module, rows[i:i + 1])[0]
            if invariant:
                assert np.array_equal(got, want), i
            else:  # not reached with Debian's torch (see the top of this file)
                assert np.allclose(got, want, rtol=1e-6, atol=1e-7), \
                    "torch is not batch-invariant here and row %d differs beyond rounding" % i
        stats = requests.get(s.url("/v2/models/mlp/stats"), timeout=T).json()["model_stats"][0]
        assert stats["inference_count"] == 48
        # 48 requests, 16 at a time, 20 ms to gather: far fewer forwards than requests
        assert stats["execution_count"] < stats["inference_count"] // 2, stats
        assert any(b["batch_size"] > 1 for b in stats["batch_stats"]), stats
    finally:
        s.stop()


def test_two_instances_forward_at_once_over_grpc(scripted):
    """Two forwards of the one loaded module at a time (--instances 2), requests of 1 to 8
    rows from 8 clients: every answer is torch's on the same rows."""
    path, module, rows, invariant = scripted
    s = Server(path, "--instances", "2", "--batch-delay-us", "0")
    pb = load_stubs()
    try:
        def one(i):
            n = 1 + i % 8
            batch = rows[i % 40:i % 40 + n]
            req = pb.pb.ModelInferRequest(model_name="mlp", id=str(i))
            add_input(req, "INPUT__0", "FP32", list(batch.shape), raw=batch.tobytes())
            with make_channel(s) as ch:
                resp = pb.pb_grpc.GRPCInferenceServiceStub(ch).ModelInfer(req, timeout=T)
            got = np.frombuffer(outputs_of(resp)["OUTPUT__0"][2], "<f4").reshape(n, C)
            return batch, got
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            for batch, got in pool.map(one, range(64)):
                want = forward(module, batch)
                # the server may have batched it with others: exact when torch is batch-invariant
                assert np.array_equal(got, want) if invariant else np.allclose(got, want)
    finally:
        s.stop()


def test_wrong_shape_is_400_and_metadata(server):
    r = requests.post(server.url("/v2/models/mlp/infer"), timeout=T, json={
        "inputs": [{"name": "INPUT__0", "datatype": "FP32", "shape": [1, 3], "data": [1, 2, 3]}]})
    assert r.status_code == 400 and "INPUT__0" in r.json()["error"], r.text
    r = requests.post(server.url("/v2/models/mlp/infer"), timeout=T, json={
        "inputs": [{"name": "INPUT__0", "datatype": "INT32", "shape": [1, F], "data": [1] * F}]})
    assert r.status_code == 400, r.text
    meta = requests.get(server.url("/v2/models/mlp"), timeout=T).json()
    assert meta["platform"] == "pytorch_libtorch"
    assert meta["inputs"] == [{"name": "INPUT__0", "datatype": "FP32", "shape": [-1, F]}]
    assert meta["outputs"] == [{"name": "OUTPUT__0", "datatype": "FP32", "shape": [-1, C]}]


def test_wrong_shape_over_grpc_is_invalid_argument(server):
    import grpc
    pb = load_stubs()
    req = pb.pb.ModelInferRequest(model_name="mlp")
    add_input(req, "INPUT__0", "FP32", [2, F - 1], raw=np.zeros((2, F - 1), np.float32).tobytes())
    with make_channel(server) as ch:
        with pytest.raises(grpc.RpcError) as e:
            pb.pb_grpc.GRPCInferenceServiceStub(ch).ModelInfer(req, timeout=T)
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT, e.value


class ConvNet(torch.nn.Module):
    """A conv net whose per-row input shape is its `input_shape` attribute, returning two
    tensors (FP32 logits and their INT64 argmax): OUTPUT__0 and OUTPUT__1."""

    def __init__(self):
        super().__init__()
        self.input_shape = [1, 8, 8]
        self.conv = torch.nn.Conv2d(1, 4, 3)
        self.fc = torch.nn.Linear(4 * 6 * 6, 5)

    def forward(self, x):
        y = self.fc(torch.relu(self.conv(x)).flatten(1))
        return y, y.argmax(dim=1, keepdim=True)


def test_conv_net_with_input_shape_and_two_outputs(tmp_path):
    torch.set_num_threads(1)
    torch.manual_seed(1)
    path = tmp_path / "conv.pt"
    torch.jit.script(ConvNet().eval()).save(str(path))
    module = torch.jit.load(str(path))
    rows = np.random.default_rng(1).standard_normal((6, 1, 8, 8)).astype(np.float32)
    with torch.inference_mode():
        logits, top = (t.numpy() for t in module(torch.from_numpy(rows)))
    s = Server(path, "--name", "conv", banner=r"conv \(input \[1,8,8\], 2 outputs\)")
    try:
        pb = load_stubs()
        req = pb.pb.ModelInferRequest(model_name="conv")
        add_input(req, "INPUT__0", "FP32", list(rows.shape), raw=rows.tobytes())
        with make_channel(s) as ch:
            resp = pb.pb_grpc.GRPCInferenceServiceStub(ch).ModelInfer(req, timeout=T)
        outs = outputs_of(resp)
        assert outs["OUTPUT__0"][:2] == ("FP32", [6, 5])
        assert np.array_equal(np.frombuffer(outs["OUTPUT__0"][2], "<f4").reshape(6, 5), logits)
        assert outs["OUTPUT__1"][:2] == ("INT64", [6, 1])
        assert np.array_equal(np.frombuffer(outs["OUTPUT__1"][2], "<i8").reshape(6, 1), top)
    finally:
        s.stop()


def test_module_without_an_input_shape_is_refused(tmp_path):
    class Doubler(torch.nn.Module):
        def forward(self, x):
            return x * 2

    path = tmp_path / "doubler.pt"
    torch.jit.script(Doubler()).save(str(path))
    p = subprocess.run([str(example_binary()), "--model", str(path), "--port", "0"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 1 and "input_shape" in p.stderr, p.stderr
    p = subprocess.run([str(example_binary()), "--model", str(tmp_path / "absent.pt")],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 1 and "cannot load" in p.stderr, p.stderr


class Odd(torch.nn.Module):
    """A module that misbehaves on demand: its answer has one row whatever the batch, and it
    raises when the first value is over 100."""

    def __init__(self):
        super().__init__()
        self.input_shape = [4]

    def forward(self, x):
        if bool(x[0, 0] > 100.0):
            raise ValueError("the first value is over 100")
        return x.sum(0, keepdim=True)


def test_a_failing_forward_is_a_500_and_the_server_goes_on(tmp_path):
    path = tmp_path / "odd.pt"
    torch.jit.script(Odd()).save(str(path))
    s = Server(path, "--name", "odd", banner=r"odd \(input \[4\], 1 outputs\)")
    try:
        def infer(rows):
            return requests.post(s.url("/v2/models/odd/infer"), timeout=T, json={
                "inputs": [{"name": "INPUT__0", "datatype": "FP32", "shape": [len(rows), 4],
                            "data": [v for r in rows for v in r]}]})
        r = infer([[1, 2, 3, 4]])
        assert r.status_code == 200 and r.json()["outputs"][0]["data"] == [1, 2, 3, 4], r.text
        r = infer([[1, 2, 3, 4]] * 3)  # one row back for three
        assert r.status_code == 500 and "OUTPUT__0" in r.json()["error"], r.text
        assert "3 rows" in r.json()["error"], r.text
        r = infer([[1000, 2, 3, 4]])  # TorchScript raises: its message, not its traceback
        err = r.json()["error"]
        assert r.status_code == 500 and err == "builtins.ValueError: the first value is over 100", err
        r = infer([[5, 6, 7, 8]])
        assert r.status_code == 200 and r.json()["outputs"][0]["data"] == [5, 6, 7, 8], r.text
    finally:
        s.stop()
