"""Operational endpoints (PROTOCOLS.md §6): /metrics for every protocol; the statistics
extension when server metadata advertises it."""
import re

import pytest

from isvtest import get, ok_json, post_json, show, simple_body


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
