"""A protocol front end that exists only in the tests (tests/toy_frontend/toy_frontend.c): one
HTTP route, two gRPC methods and an error shape of its own, added to a server through its
descriptor without a line in the router, the server or the transport. Real clients (requests,
curl, grpcio) reach it next to the built-in ones; the core's rules (readiness, the order of
errors) and the transport's limits apply to it unchanged."""
import os
import pathlib
import struct
import subprocess

import grpc
import pytest
import requests

from isvtest import TIMEOUT, Demo


def toy_binary():
    demo = os.environ.get("INFERSERVE_DEMO")
    build = pathlib.Path(demo).resolve().parents[2] if demo else \
        pathlib.Path(__file__).resolve().parents[2] / "build"
    if not (build / "tests").is_dir():  # e.g. scripts/pgo.sh's build: the library and examples
        pytest.skip("%s was configured without the tests (-Dtests=enabled builds the toy front "
                    "end)" % build)
    return str(build / "tests" / "toy-frontend-server")


@pytest.fixture
def toy():
    d = Demo(binary=toy_binary(), extra_args=["--max-body-bytes", "1024"])
    yield d
    assert d.stop() == 0, d.describe_exit(d.proc.returncode)


def test_http_route_and_its_captures(toy):
    r = requests.post(toy.url("/echo/v1/a/b%20c"), data=b"hello", timeout=TIMEOUT)
    assert r.status_code == 200, r.text
    assert r.json() == {"echo": "hello", "what": "a/b c"}
    r = requests.get(toy.url("/echo/v1/models/doubler/ready"), timeout=TIMEOUT)
    assert r.json() == {"ready": True}


def test_errors_take_its_shape(toy):
    r = requests.get(toy.url("/echo/v1/models/nope/ready"), timeout=TIMEOUT)
    assert r.status_code == 404
    assert r.json() == {"echo_error": {"code": 404, "why": "Request for unknown model: 'nope' is not found"}}
    r = requests.get(toy.url("/echo/v1/x"), timeout=TIMEOUT)  # a route of its, another method
    assert r.status_code == 405 and r.headers["Allow"] == "POST", r.text
    assert r.json()["echo_error"]["code"] == 405
    r = requests.get(toy.url("/echo/elsewhere"), timeout=TIMEOUT)  # not under /echo/v1
    assert r.status_code == 404 and "error" in r.json(), r.text


def test_built_in_protocols_are_still_there(toy):
    r = requests.get(toy.url("/v2/models/doubler/ready"), timeout=TIMEOUT)
    assert r.status_code == 200 and r.json() == {"ready": True}
    r = requests.post(toy.url("/v2/models/doubler/infer"), timeout=TIMEOUT,
                      json={"inputs": [{"name": "INPUT0", "shape": [1], "datatype": "INT32",
                                        "data": [21]}]})
    assert r.json()["outputs"][0]["data"] == [42], r.text


def test_grpc_methods_with_grpcio(toy):
    ch = grpc.insecure_channel("%s:%d" % (toy.host, toy.port))
    try:
        say = ch.unary_unary("/echo.v1.Echo/Say")
        assert say(b"hi", timeout=TIMEOUT) == b"you said: hi"
        double = ch.unary_unary("/echo.v1.Echo/Double")
        assert struct.unpack("<i", double(struct.pack("<i", -21), timeout=TIMEOUT))[0] == -42
        with pytest.raises(grpc.RpcError) as e:
            double(b"123", timeout=TIMEOUT)  # its decode error
        assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert e.value.details() == "want 4 bytes, got 3"
        with pytest.raises(grpc.RpcError) as e:
            ch.unary_unary("/echo.v1.Echo/Nope")(b"", timeout=TIMEOUT)
        assert e.value.code() == grpc.StatusCode.UNIMPLEMENTED
    finally:
        ch.close()


def test_metrics_count_its_requests_under_its_label(toy):
    ch = grpc.insecure_channel("%s:%d" % (toy.host, toy.port))
    try:
        ch.unary_unary("/echo.v1.Echo/Double")(struct.pack("<i", 1), timeout=TIMEOUT)
    finally:
        ch.close()
    text = requests.get(toy.url("/metrics"), timeout=TIMEOUT).text
    assert 'protocol="echo_grpc",outcome="success"} 1' in text, text[:3000]


@pytest.mark.parametrize("http", ["--http1.1", "--http2-prior-knowledge"])
def test_transport_limits_answer_in_its_shape(toy, http):
    """A 413 found by the transport (HTTP/1.1 or h2c) is answered by the front end whose path
    it is: the transport reports (status, message), it does not write a body of its own."""
    out = subprocess.run(["curl", "-sS", http, "-o", "-", "-w", "\n%{http_code}",
                          "--data-binary", "x" * 2000, toy.url("/echo/v1/big")],
                         capture_output=True, text=True, timeout=15)
    body, code = out.stdout.rsplit("\n", 1)
    assert code == "413", out
    assert body == '{"echo_error":{"code":413,"why":"request body exceeds the server\'s limit"}}'
    # the same limit on a V2 path keeps V2's shape
    out = subprocess.run(["curl", "-sS", http, "-o", "-", "-w", "\n%{http_code}",
                          "--data-binary", "x" * 2000, toy.url("/v2/models/doubler/infer")],
                         capture_output=True, text=True, timeout=15)
    body, code = out.stdout.rsplit("\n", 1)
    assert code == "413" and body == '{"error":"request body exceeds the server\'s limit"}', out
