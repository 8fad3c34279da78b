"""W3C trace context (traceparent / tracestate) on every protocol: kept with the request for the
backend (the demo's params_echo answers it as response parameters), invalid values ignored
(never an error), several tracestate lines joined, and the trace id in the access log."""
import json
import time

import grpc
import requests

from grpc_stubs import add_input, curl_h2, load_stubs, make_channel

TP = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
TRACE, PARENT = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
BODY = {"inputs": [{"name": "INPUT0", "shape": [2], "datatype": "INT32", "data": [1, 2]}]}


def echo(demo, headers):
    r = requests.post(demo.url("/v2/models/params_echo/infer"), json=BODY, headers=headers,
                      timeout=5)
    assert r.status_code == 200, r.text
    return r.json().get("parameters", {})


def test_rest_traceparent_and_tracestate_reach_the_backend(demo):
    p = echo(demo, {"traceparent": TP, "tracestate": "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"})
    assert p == {"trace_id": TRACE, "parent_id": PARENT, "trace_flags": 1,
                 "tracestate": "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"}


def test_invalid_trace_context_is_ignored_not_refused(demo):
    assert echo(demo, {"traceparent": TP.upper()}) == {}
    assert echo(demo, {"traceparent": "00-" + "0" * 32 + "-00f067aa0ba902b7-01"}) == {}
    # a tracestate that cannot be kept goes alone
    p = echo(demo, {"traceparent": TP, "tracestate": "no-equals-sign"})
    assert p["trace_id"] == TRACE and "tracestate" not in p
    assert echo(demo, {}) == {}


def test_two_tracestate_lines_are_one_list(demo):
    # requests folds a list of values into one line; raw lines over h2c keep them apart
    r = curl_h2(demo, "/v2/models/params_echo/infer",
                data=b'{"inputs":[{"name":"INPUT0","shape":[2],"datatype":"INT32","data":[1,2]}]}',
                headers=["content-type: application/json", "traceparent: " + TP,
                         "tracestate: a=1", "tracestate: b=2"])
    assert r.status == 200, r
    p = json.loads(r.body)["parameters"]
    assert p["trace_id"] == TRACE and p["tracestate"] == "a=1,b=2", p


def test_grpc_metadata_carries_it(demo):
    pb = load_stubs()
    with make_channel(demo) as ch:
        stub = pb.pb_grpc.GRPCInferenceServiceStub(ch)
        req = pb.pb.ModelInferRequest(model_name="params_echo")
        add_input(req, "INPUT0", "INT32", [2], raw=b"\x01\0\0\0\x02\0\0\0")
        r = stub.ModelInfer(req, timeout=5, metadata=(("traceparent", TP), ("tracestate", "v=1")))
    p = {k: (v.string_param or v.int64_param) for k, v in r.parameters.items()}
    assert p == {"trace_id": TRACE, "parent_id": PARENT, "trace_flags": 1, "tracestate": "v=1"}


def test_the_access_log_has_the_trace_id(start_demo):
    d = start_demo("--access-log", "--threads", "1")  # one loop: its lines in request order
    requests.get(d.url("/v2/health/ready"), headers={"traceparent": TP}, timeout=5)
    requests.get(d.url("/v2/health/ready"), timeout=5)
    end = time.monotonic() + 5
    while time.monotonic() < end:
        lines = [l.split() for l in d.lines if l.startswith("access ")]
        if len(lines) >= 2:
            break
        time.sleep(0.02)
    assert lines[0][8] == TRACE and lines[1][8] == "-", lines
