"""examples/cpp: a C++17 host built on include/inferserve.hpp, driven with curl: a lambda
model with request parameters, a thrown isv::error as the client's 400, SIGTERM closes it."""
import json
import pathlib
import re
import signal
import subprocess

import pytest

from isvtest import demo_path


def example():
    exe = pathlib.Path(demo_path()).resolve().parents[1] / "cpp" / "cpp-example"
    if not exe.exists():
        pytest.skip("no C++ compiler: the C++ example was not built")
    return exe


def curl(port, body):
    r = subprocess.run(["curl", "-s", "-w", "\n%{http_code}", "-H", "Content-Type: application/json",
                        "-d", json.dumps(body), "http://127.0.0.1:%d/v2/models/saxpy/infer" % port],
                       capture_output=True, text=True, timeout=10)
    text, code = r.stdout.rsplit("\n", 1)
    return int(code), json.loads(text)


def test_the_cpp_example_serves_a_lambda():
    p = subprocess.Popen([str(example()), "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    try:
        m = re.match(r"cpp-example on (\d+)", p.stdout.readline())
        assert m, p.stderr.read() if p.poll() is not None else "no banner"
        port = int(m.group(1))
        x = {"name": "x", "shape": [2, 2], "datatype": "FP32", "data": [1, 2, 3, 4]}
        code, out = curl(port, {"inputs": [x]})
        assert code == 200 and out["outputs"][0]["data"] == [2, 4, 6, 8], out
        assert out["outputs"][0]["shape"] == [2, 2]
        code, out = curl(port, {"inputs": [x], "parameters": {"a": 0.5, "b": 1}})
        assert code == 200 and out["outputs"][0]["data"] == [1.5, 2, 2.5, 3], out
        code, out = curl(port, {"inputs": [x], "parameters": {"a": "two"}})
        assert code == 400 and out["error"] == "parameter 'a' must be a number", out
    finally:
        p.send_signal(signal.SIGTERM)
        rc = p.wait(timeout=10)
    assert rc == 0 and "closed" in p.stdout.read(), p.stderr.read()
