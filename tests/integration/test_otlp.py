"""The demo's OpenTelemetry export (--otlp-endpoint, examples/demo/otlp.c) against a collector
in the test: an http.server taking OTLP/HTTP JSON (POST /v1/traces) and decoding it by OTLP's
JSON rules — ExportTraceServiceRequest's resourceSpans / scopeSpans / spans, ids as lowercase
hex, 64-bit integers as decimal strings, enums as numbers. Each traced request is one SERVER
span: its caller's trace id and span as parent when it came with a traceparent, a fresh trace
and no parent otherwise; timestamps from the timeline, in order; attributes model, version,
protocol, status. A collector that hangs or is not there neither fails nor holds up requests:
spans it does not take are counted (said at exit)."""
import http.server
import json
import re
import signal
import threading
import time

import requests

from grpc_stubs import load_stubs, make_channel, simple_request
from isvtest import free_port, simple_body, tensor

TP = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
HEX = re.compile(r"^[0-9a-f]+$")
T = 5


class Collector:
    """OTLP/HTTP receiver on loopback; hang=True accepts and never answers."""

    def __init__(self, hang=False):
        self.spans, self.requests = [], 0
        self.lock = threading.Lock()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                if hang:
                    time.sleep(3)
                    return
                assert self.path == "/v1/traces", self.path
                assert self.headers["Content-Type"] == "application/json"
                outer.take(json.loads(body))
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, *a):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def take(self, req):
        for rs in req["resourceSpans"]:
            res = {a["key"]: a["value"] for a in rs["resource"]["attributes"]}
            assert res["service.name"] == {"stringValue": "inferserve-demo"}
            for ss in rs["scopeSpans"]:
                assert ss["scope"]["name"] == "libinferserve"
                with self.lock:
                    self.spans.extend(ss["spans"])
                    self.requests += 1

    def wait(self, n, timeout=T):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            with self.lock:
                if len(self.spans) >= n:
                    return list(self.spans)
            time.sleep(0.02)
        raise AssertionError("expected %d spans, got %d" % (n, len(self.spans)))

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def u64(v):
    """An OTLP/JSON 64-bit integer: a decimal string (a number is accepted too)."""
    assert isinstance(v, (str, int)), v
    return int(v)


def attrs(span):
    out = {}
    for a in span["attributes"]:
        (kind, v), = a["value"].items()
        out[a["key"]] = int(v) if kind == "intValue" else v
    return out


def check_span(s, now):
    assert HEX.match(s["traceId"]) and len(s["traceId"]) == 32, s
    assert HEX.match(s["spanId"]) and len(s["spanId"]) == 16 and s["spanId"] != "0" * 16, s
    assert s["kind"] == 2, s  # SPAN_KIND_SERVER
    start, end = u64(s["startTimeUnixNano"]), u64(s["endTimeUnixNano"])
    assert abs(start / 1e9 - now) < 60, (start, now)  # Unix time, not the monotonic clock
    events = [(e["name"], u64(e["timeUnixNano"])) for e in s["events"]]
    times = [start] + [t for _, t in events] + [end]
    assert times == sorted(times), s
    return events


def test_spans_carry_the_trace_context_timeline_and_attributes(start_demo):
    col = Collector()
    try:
        d = start_demo("--otlp-endpoint", col.url, "--threads", "1")
        r = requests.post(d.url("/v2/models/simple/infer"), json=simple_body(req_id="r-1"),
                          headers={"traceparent": TP}, timeout=T)
        assert r.status_code == 200
        stubs = load_stubs()
        with make_channel(d) as ch:
            stubs.pb_grpc.GRPCInferenceServiceStub(ch).ModelInfer(simple_request(stubs.pb)[0],
                                                                  timeout=T)
        r = requests.post(d.url("/v2/models/failing/infer"), timeout=T,
                          json={"inputs": [tensor("INPUT0", "INT32", [1], [1])]})
        assert r.status_code == 500, r.text  # the backend failed it
        spans = col.wait(3)
        now = time.time()
        by_proto = {}
        for s in spans:
            by_proto.setdefault(attrs(s)["protocol"], []).append(s)
        rest = [s for s in by_proto["v2_http"] if attrs(s)["status"] == 0][0]
        events = check_span(rest, now)
        assert rest["traceId"] == "4bf92f3577b34da6a3ce929d0e0e4736"
        assert rest["parentSpanId"] == "00f067aa0ba902b7"
        assert rest["spanId"] != rest["parentSpanId"]
        assert rest["name"] == "simple" and rest["status"] == {"code": 1}
        assert attrs(rest) == {"model": "simple", "version": "1", "protocol": "v2_http",
                               "status": 0, "request_id": "r-1"}
        assert [n for n, _ in events] == ["QUEUE_START", "COMPUTE_START", "COMPUTE_INPUT_END",
                                          "COMPUTE_OUTPUT_START", "COMPUTE_END"]
        g, = by_proto["v2_grpc"]
        check_span(g, now)
        assert g.get("parentSpanId", "") == "" and g["traceId"] != rest["traceId"]
        assert g["spanId"] != rest["spanId"]
        failed = [s for s in by_proto["v2_http"] if attrs(s)["status"] != 0]
        assert len(failed) == 1 and failed[0]["status"]["code"] == 2, failed  # STATUS_CODE_ERROR
        assert failed[0]["name"] == "failing" and attrs(failed[0])["model"] == "failing"
        check_span(failed[0], now)
        assert len(spans) == 3
    finally:
        col.close()


def test_a_hung_or_absent_collector_neither_fails_nor_holds_up_requests(start_demo):
    hung = Collector(hang=True)
    try:
        for url in (hung.url, "http://127.0.0.1:%d" % free_port()):
            d = start_demo("--otlp-endpoint", url, "--threads", "1")
            worst = 0.0
            with requests.Session() as s:
                for _ in range(300):
                    t0 = time.monotonic()
                    r = s.post(d.url("/v2/models/simple/infer"), json=simple_body(), timeout=T)
                    worst = max(worst, time.monotonic() - t0)
                    assert r.status_code == 200
            # a sender that waited on the collector would hold a request for its 1 s timeout
            assert worst < 0.5, worst
            assert d.stop(signal.SIGTERM, 15.0) == 0
            tail = d.stderr_tail()
            m = re.search(r"otlp: (\d+) spans sent, (\d+) dropped \(queue full\), (\d+) lost", tail)
            assert m, tail
            sent, dropped, lost = map(int, m.groups())
            assert sent == 0 and dropped + lost == 300, tail
    finally:
        hung.close()
