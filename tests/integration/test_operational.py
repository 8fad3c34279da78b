"""Operational endpoints (PROTOCOLS.md §6): /metrics for every protocol; the statistics
extension when server metadata advertises it; an idle server that sleeps."""
import glob
import re
import time

import pytest

from conftest import ADAPTER_HOST
from isvtest import free_port, get, ok_json, post_json, show, simple_body


def test_metrics_prometheus_text(demo):
    ok_json(post_json(demo, "/v2/models/simple/infer", simple_body()))
    r = get(demo, "/metrics")
    assert r.status_code == 200, show(r)
    assert r.headers.get("Content-Type", "").startswith("text/plain"), show(r)
    text = r.text
    samples = [l for l in text.splitlines() if l and not l.startswith("#")]
    assert samples, show(r)
    for l in samples:  # name{labels} value
        assert re.match(r'^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[^}]*\})? [-+0-9.eEInfNa]+( \d+)?$', l), \
            "bad sample line %r\n%s" % (l, show(r))
    assert any('model="simple"' in l for l in samples), "no sample for model simple\n" + text[:3000]
    assert any(l.startswith("# TYPE") and "histogram" in l for l in text.splitlines()), \
        "no latency histogram\n" + text[:3000]


def test_statistics_extension_when_advertised(demo):
    ext = ok_json(get(demo, "/v2")).get("extensions", [])
    if "statistics" not in ext:
        pytest.skip("statistics extension not advertised by this server")
    ok_json(post_json(demo, "/v2/models/simple/infer", simple_body()))
    body = ok_json(get(demo, "/v2/models/simple/stats"))
    stats = body["model_stats"]
    assert any(s["name"] == "simple" and s["version"] == "1" for s in stats), body
    s = [s for s in stats if s["name"] == "simple"][0]
    assert int(s["inference_count"]) >= 1, body
    assert int(s["inference_stats"]["success"]["count"]) >= 1, body


def context_switches(pid):
    """Every thread's voluntary and involuntary context switches so far, by thread id."""
    out = {}
    for path in glob.glob("/proc/%d/task/*/status" % pid):
        try:
            with open(path) as f:
                text = f.read()
        except OSError:  # the thread ended meanwhile
            continue
        counts = re.findall(r"^(?:non)?voluntary_ctxt_switches:\s+(\d+)$", text, re.M)
        out[path.split("/")[4]] = sum(int(n) for n in counts)
    return out


@pytest.mark.parametrize("otlp", [False, True], ids=["default", "otlp"])
def test_an_idle_server_sleeps(start_demo, otlp):
    """Once its clients are done, no thread of the server wakes — not the loop, not the worker
    pool, not the demo's trace flusher or OTLP sender (they woke 20 and 5 times a second): an
    embedded server must not spend a host's idle CPU. A thread that sleeps makes no context
    switch, however busy the machine."""
    if ADAPTER_HOST:
        pytest.skip("%s's own threads are not the library's" % ADAPTER_HOST)
    d = start_demo(*(["--otlp-endpoint", "http://127.0.0.1:%d" % free_port()] if otlp else []))
    ok_json(post_json(d, "/v2/models/simple/infer", simple_body()))  # a span for the OTLP sender
    ok_json(post_json(d, "/v2/models/slow/infer",  # and a job for the worker pool
                      {"inputs": [{"name": "INPUT0", "datatype": "INT32", "shape": [1],
                                   "data": [1]}]}))
    # what follows a start and those requests settles first: the models' warm-ups on the pool,
    # the OTLP batch's 200 ms — up to 10 s for half a second without a switch (a thread that
    # wakes more often never gives one; one that wakes less often, the 2 s below see)
    before = context_switches(d.proc.pid)
    quiet_since = time.monotonic()
    give_up = quiet_since + 10
    while time.monotonic() < give_up and time.monotonic() - quiet_since < 0.5:
        time.sleep(0.1)
        now = context_switches(d.proc.pid)
        if now != before:
            before, quiet_since = now, time.monotonic()
    before = context_switches(d.proc.pid)
    time.sleep(2.0)
    after = context_switches(d.proc.pid)
    woke = {t: after[t] - before.get(t, 0) for t in after if after[t] != before.get(t, 0)}
    assert sum(woke.values()) <= 2, "threads that woke in 2 idle seconds (id: switches): %s" % woke
