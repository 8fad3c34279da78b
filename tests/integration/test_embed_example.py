"""examples/embed: an existing libuv program (timer + TCP echo) that adds inference on the same
loop. Both services answer, and SIGINT shuts both down cleanly (exit 0)."""
import os
import pathlib
import re
import signal
import socket
import subprocess

import requests


def embed_binary():
    demo = os.environ.get("INFERSERVE_DEMO")
    build = pathlib.Path(demo).resolve().parents[2] if demo else \
        pathlib.Path(__file__).resolve().parents[2] / "build"
    return build / "examples" / "embed" / "embed-example"


def test_echo_and_inference_share_the_loop():
    p = subprocess.Popen([str(embed_binary()), "--echo-port", "0", "--http-port", "0"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = p.stdout.readline()
        m = re.match(r"embed-example echo on (\d+), inference on (\d+)", line)
        assert m, (line, p.stderr.read() if p.poll() is not None else "")
        echo_port, http_port = int(m.group(1)), int(m.group(2))
        with socket.create_connection(("127.0.0.1", echo_port), timeout=5) as s:
            s.sendall(b"hello loop")
            assert s.recv(100) == b"hello loop"
        r = requests.post("http://127.0.0.1:%d/v2/models/doubler/infer" % http_port, timeout=5,
                          json={"inputs": [{"name": "INPUT0", "shape": [3], "datatype": "FP32",
                                            "data": [1.5, -2, 0]}]})
        assert r.status_code == 200, r.text
        assert r.json()["outputs"][0]["data"] == [3.0, -4.0, 0.0]
        # declared ISV_ANY_RANK: a rank-3 tensor and a scalar fit too; metadata shows [-1]
        r = requests.post("http://127.0.0.1:%d/v2/models/doubler/infer" % http_port, timeout=5,
                          json={"inputs": [{"name": "INPUT0", "shape": [2, 1, 2],
                                            "datatype": "FP32", "data": [1, 2, 3, 4]}]})
        assert r.status_code == 200, r.text
        out = r.json()["outputs"][0]
        assert out["shape"] == [2, 1, 2] and out["data"] == [2.0, 4.0, 6.0, 8.0]
        r = requests.post("http://127.0.0.1:%d/v2/models/doubler/infer" % http_port, timeout=5,
                          json={"inputs": [{"name": "INPUT0", "shape": [], "datatype": "FP32",
                                            "data": [2.5]}]})
        assert r.status_code == 200 and r.json()["outputs"][0]["data"] == [5.0], r.text
        meta = requests.get("http://127.0.0.1:%d/v2/models/doubler" % http_port, timeout=5).json()
        assert meta["inputs"][0]["shape"] == [-1] and meta["outputs"][0]["shape"] == [-1]
    finally:
        p.send_signal(signal.SIGINT)
        rc = p.wait(timeout=10)
    assert rc == 0, p.stderr.read()
