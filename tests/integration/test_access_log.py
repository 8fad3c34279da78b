"""isv_options_set_access_log, through the demo's --access-log: one line per answered request —
REST over HTTP/1.1 (curl) and h2c (curl --http2-prior-knowledge), gRPC (grpcio), the
transport's own refusals and an error — with its status, body sizes and duration."""
import subprocess
import time

import grpc
import requests

from grpc_stubs import curl_h2, load_stubs, make_channel, simple_request


def access_lines(demo, n, timeout=5.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        got = [l.split() for l in demo.lines if l.startswith("access ")]
        if len(got) >= n:
            return got
        time.sleep(0.02)
    raise AssertionError("expected %d access lines, got %r" % (n, demo.lines))


def test_every_answered_request_has_its_line(start_demo):
    demo = start_demo("--access-log")
    body = ('{"inputs":[{"name":"INPUT0","shape":[1],"datatype":"INT32","data":[5]}]}')
    r = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-d", body,
                        "-H", "Content-Type: application/json",
                        demo.url("/v2/models/slow/infer")], capture_output=True, text=True)
    assert r.stdout == "200"
    line = access_lines(demo, 1)[0]
    assert line[1:6] == ["http/1.1", "POST", "/v2/models/slow/infer", "200", str(len(body))]
    assert int(line[6]) > 0
    assert int(line[7]) >= 5000  # the model sleeps 5 ms

    assert curl_h2(demo, "/v2/health/ready").status == 200
    line = access_lines(demo, 2)[1]
    assert line[1:7] == ["h2c", "GET", "/v2/health/ready", "200", "0", "14"]  # {"ready":true}

    assert requests.get(demo.url("/v2/models/nope?x=1"), timeout=5).status_code == 404
    line = access_lines(demo, 3)[2]
    assert line[1:5] == ["http/1.1", "GET", "/v2/models/nope", "404"]  # no query
    assert int(line[6]) > 0  # the error's JSON

    pb = load_stubs()
    with make_channel(demo) as ch:
        stub = pb.pb_grpc.GRPCInferenceServiceStub(ch)
        stub.ModelInfer(simple_request(pb.pb)[0], timeout=5)
        try:
            stub.ModelInfer(pb.pb.ModelInferRequest(model_name="nope"), timeout=5)
        except grpc.RpcError as e:
            assert e.code() == grpc.StatusCode.NOT_FOUND
    grpc_lines = [l for l in access_lines(demo, 5) if l[1] == "grpc"]
    ok, missing = grpc_lines[-2:]
    assert ok[2:5] == ["POST", "/inference.GRPCInferenceService/ModelInfer", "0"]
    assert int(ok[5]) > 5 and int(ok[6]) > 5  # framed messages each way
    assert missing[4] == "5"  # NOT_FOUND

    # the transport's own refusal: a malformed request line
    raw = subprocess.run(["bash", "-c", "printf 'BAD\\r\\n\\r\\n' >/dev/tcp/%s/%d" % (demo.host, demo.port)])
    assert raw.returncode == 0
    bad = access_lines(demo, 6)[-1]
    assert bad[1] == "http/1.1" and bad[4] == "400", bad


def test_no_access_log_by_default(demo):
    requests.get(demo.url("/v2/health/live"), timeout=5)
    time.sleep(0.05)
    assert not [l for l in demo.lines if l.startswith("access ")]
