"""The service's edge: the authorizer (the demo's --bearer-token, --forbid-model and
--auth-delay-ms, built on isv_server_set_authorizer), the per-client limit
(--max-client-requests) and CORS (--cors-origin) — over HTTP/1.1 (requests, raw sockets), h2c
(curl) and gRPC (grpcio). The browser's side of CORS is test_cors_browser.py."""
import concurrent.futures
import json
import socket
import threading
import time

import grpc
import pytest
import requests

from grpc_stubs import (SERVICE, curl_h2, expect_rpc_error, load_stubs, make_channel,
                        simple_request, slow_request)
from isvtest import (TIMEOUT, assert_error, get, ok_json, simple_body, slow_body)

TOKEN = "s3cret-token"
BEARER = {"Authorization": "Bearer " + TOKEN}
SIMPLE = "/v2/models/simple/infer"


@pytest.fixture
def token_file(tmp_path):
    p = tmp_path / "token"
    p.write_text(TOKEN + "\n")
    return str(p)


def grpc_call(d, fn, req, metadata=(), timeout=TIMEOUT):
    pb = load_stubs()
    ch = make_channel(d)
    try:
        stub = pb.pb_grpc.GRPCInferenceServiceStub(ch)
        return getattr(stub, fn)(req, metadata=metadata, timeout=timeout)
    finally:
        ch.close()


@pytest.mark.parametrize("delay", [0, 30])
def test_a_bearer_token_is_required(start_demo, token_file, delay):
    d = start_demo("--bearer-token", token_file, "--auth-delay-ms", str(delay))
    r = requests.post(d.url(SIMPLE), json=simple_body(), timeout=TIMEOUT)
    assert_error(r, 401, "a bearer token is required")
    assert r.headers["WWW-Authenticate"] == 'Bearer realm="inferserve-demo"'
    r = requests.post(d.url(SIMPLE), json=simple_body(), timeout=TIMEOUT,
                      headers={"Authorization": "Bearer wrong-token-x"})
    assert_error(r, 401, "the bearer token is not valid")
    body = ok_json(requests.post(d.url(SIMPLE), json=simple_body(), headers=BEARER,
                                 timeout=TIMEOUT))
    assert body["model_name"] == "simple"
    # every protocol passes the same gate: TF Serving, grps, metrics, custom routes
    for path, data in (("/v1/models/half_plus_three:predict", {"instances": [1.0]}),
                       ("/grps/v1/infer/predict", {"str_data": "x"}),
                       ("/custom/echo", "hi")):
        r = requests.post(d.url(path), data=json.dumps(data), timeout=TIMEOUT)
        assert r.status_code == 401, (path, r.status_code, r.text)
        r = requests.post(d.url(path), data=json.dumps(data), headers=BEARER, timeout=TIMEOUT)
        assert r.status_code == 200, (path, r.status_code, r.text)
    assert requests.get(d.url("/metrics"), timeout=TIMEOUT).status_code == 401
    # the health checks stay open for probes
    assert ok_json(get(d, "/v2/health/ready")) == {"ready": True}


def test_the_gate_over_h2c(start_demo, token_file):
    d = start_demo("--bearer-token", token_file)
    r = curl_h2(d, SIMPLE, data=json.dumps(simple_body()).encode(),
                headers=["content-type: application/json"])
    assert r.status == 401 and r.header("www-authenticate"), r
    r = curl_h2(d, SIMPLE, data=json.dumps(simple_body()).encode(),
                headers=["content-type: application/json", "authorization: Bearer " + TOKEN])
    assert r.status == 200, r


@pytest.mark.parametrize("delay", [0, 30])
def test_grpc_metadata_carries_the_token(start_demo, token_file, delay):
    pb = load_stubs().pb
    d = start_demo("--bearer-token", token_file, "--forbid-model", "slow",
                   "--auth-delay-ms", str(delay))
    req = simple_request(pb)[0]
    expect_rpc_error(lambda: grpc_call(d, "ModelInfer", req), grpc.StatusCode.UNAUTHENTICATED,
                     "a bearer token is required")
    resp = grpc_call(d, "ModelInfer", req, metadata=(("authorization", "Bearer " + TOKEN),))
    assert resp.model_name == "simple"
    # the model named in the message is what the authorizer sees
    expect_rpc_error(lambda: grpc_call(d, "ModelInfer", slow_request(pb, 1),
                                       metadata=(("authorization", "Bearer " + TOKEN),)),
                     grpc.StatusCode.PERMISSION_DENIED, "model 'slow' is not for this client")
    # health stays open; a stream is gated at its first message
    assert grpc_call(d, "ServerReady", pb.ServerReadyRequest()).ready
    ch = make_channel(d)
    try:
        stream = load_stubs().pb_grpc.GRPCInferenceServiceStub(ch).ModelStreamInfer
        out = list(stream(iter([req, req]), metadata=(("authorization", "Bearer " + TOKEN),),
                          timeout=TIMEOUT))
        assert len(out) == 2 and all(o.infer_response.model_name == "simple" for o in out)
        with pytest.raises(grpc.RpcError) as e:
            list(stream(iter([req, req]), timeout=TIMEOUT))
        assert e.value.code() == grpc.StatusCode.UNAUTHENTICATED
    finally:
        ch.close()


def test_forbidden_model_over_rest(start_demo):
    d = start_demo("--forbid-model", "failing")
    r = requests.get(d.url("/v2/models/failing"), timeout=TIMEOUT)
    assert_error(r, 403, "model 'failing' is not for this client")
    assert ok_json(get(d, "/v2/models/simple"))["name"] == "simple"


def test_a_client_gone_during_a_pending_decision(start_demo, token_file):
    d = start_demo("--bearer-token", token_file, "--auth-delay-ms", "300", "--access-log")
    body = json.dumps(simple_body()).encode()
    s = socket.create_connection((d.host, d.port), timeout=TIMEOUT)
    s.sendall(b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Authorization: Bearer %s\r\nContent-Length: %d\r\n\r\n"
              % (SIMPLE.encode(), TOKEN.encode(), len(body)) + body)
    s.close()  # gone before the decision (300 ms)
    time.sleep(0.6)
    assert d.alive()
    # the server goes on serving, and its close does not hang
    r = requests.post(d.url(SIMPLE), json=simple_body(), headers=BEARER, timeout=TIMEOUT)
    assert r.status_code == 200
    pb = load_stubs().pb
    ch = make_channel(d)
    fut = load_stubs().pb_grpc.GRPCInferenceServiceStub(ch).ModelInfer.future(
        simple_request(pb)[0], metadata=(("authorization", "Bearer " + TOKEN),), timeout=TIMEOUT)
    time.sleep(0.05)
    fut.cancel()
    ch.close()
    time.sleep(0.5)
    assert d.alive()


def test_the_close_waits_for_pending_decisions(start_demo, token_file):
    d = start_demo("--bearer-token", token_file, "--auth-delay-ms", "500")
    results = []

    def call():
        try:
            r = requests.post(d.url(SIMPLE), json=simple_body(), headers=BEARER, timeout=5)
            results.append(r.status_code)
        except requests.RequestException as e:
            results.append(repr(e))

    t = threading.Thread(target=call)
    t.start()
    time.sleep(0.15)
    assert d.stop(timeout=10) == 0  # SIGTERM while the decision is pending: exits cleanly
    t.join()
    assert results and results[0] == 200, results


def test_per_client_limit(start_demo):
    d = start_demo("--max-client-requests", "2")
    body = slow_body(d, 600)
    with concurrent.futures.ThreadPoolExecutor(3) as ex:
        slow = [ex.submit(requests.post, d.url("/v2/models/slow/infer"), json=body,
                          timeout=TIMEOUT) for _ in range(2)]
        time.sleep(0.2)
        r = requests.post(d.url(SIMPLE), json=simple_body(), timeout=TIMEOUT)
        assert_error(r, 429, "client '127.0.0.1' has 2 requests in flight")
        # gRPC shares the count
        expect_rpc_error(lambda: grpc_call(d, "ModelInfer", simple_request(load_stubs().pb)[0]),
                         grpc.StatusCode.RESOURCE_EXHAUSTED, "requests in flight")
        assert [f.result().status_code for f in slow] == [200, 200]
    # released once answered
    assert requests.post(d.url(SIMPLE), json=simple_body(), timeout=TIMEOUT).status_code == 200


def test_cors_preflight_and_headers(start_demo):
    origin = "http://app.example:8080"
    d = start_demo("--cors-origin", origin + " https://other.example")
    r = requests.options(d.url(SIMPLE), timeout=TIMEOUT, headers={
        "Origin": origin, "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type, inference-header-content-length"})
    assert r.status_code == 204
    assert r.headers["Access-Control-Allow-Origin"] == origin
    assert "POST" in r.headers["Access-Control-Allow-Methods"]
    assert r.headers["Access-Control-Allow-Headers"] == \
        "content-type, inference-header-content-length"
    assert r.headers["Vary"] == "Origin"
    r = requests.post(d.url(SIMPLE), json=simple_body(), timeout=TIMEOUT,
                      headers={"Origin": origin})
    assert r.status_code == 200
    assert r.headers["Access-Control-Allow-Origin"] == origin
    assert "Inference-Header-Content-Length" in r.headers["Access-Control-Expose-Headers"]
    # an error answer carries them too (the page can read why)
    r = requests.get(d.url("/v2/models/nope"), timeout=TIMEOUT, headers={"Origin": origin})
    assert r.status_code == 404 and r.headers["Access-Control-Allow-Origin"] == origin
    # another origin: no CORS headers (the browser keeps the answer from the page), and its
    # preflight is not answered as one
    r = requests.post(d.url(SIMPLE), json=simple_body(), timeout=TIMEOUT,
                      headers={"Origin": "http://evil.example"})
    assert r.status_code == 200 and "Access-Control-Allow-Origin" not in r.headers
    r = requests.options(d.url(SIMPLE), timeout=TIMEOUT, headers={
        "Origin": "http://evil.example", "Access-Control-Request-Method": "POST"})
    assert r.status_code == 405 and "Access-Control-Allow-Origin" not in r.headers


def test_cors_preflight_needs_no_token(start_demo, token_file):
    origin = "http://app.example"
    d = start_demo("--cors-origin", origin, "--bearer-token", token_file)
    r = requests.options(d.url(SIMPLE), timeout=TIMEOUT, headers={
        "Origin": origin, "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization, content-type"})
    assert r.status_code == 204
    r = requests.post(d.url(SIMPLE), json=simple_body(), timeout=TIMEOUT,
                      headers={"Origin": origin})
    assert r.status_code == 401 and r.headers["Access-Control-Allow-Origin"] == origin


def test_bad_flags_are_refused(start_demo):
    with pytest.raises(RuntimeError):
        start_demo("--cors-origin", "not-an-origin")
    with pytest.raises(RuntimeError):
        start_demo("--bearer-token", "/nonexistent/token")
