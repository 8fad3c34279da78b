"""/metrics with Triton's names (isv_options_set_metrics_style, the demo's --metrics-style): the
families a Triton dashboard reads, labels model and version, failures by Triton's reasons
(REJECTED: a full queue; CANCELED: a client that went away; BACKEND: the model failed it),
durations in microseconds — and the text passes promtool in each style."""
import concurrent.futures
import shutil
import socket
import subprocess
import time

import pytest
import requests

from isvtest import get, http_request, post_json, simple_body

SLOW = lambda ms: {"inputs": [{"name": "INPUT0", "shape": [1], "datatype": "INT32", "data": [ms]}]}


def metric(demo, name, **labels):
    want = "%s{%s}" % (name, ",".join('%s="%s"' % kv for kv in labels.items()))
    for line in get(demo, "/metrics").text.splitlines():
        if line.startswith(want + " "):
            return float(line.split()[-1])
    return None


def wait_metric(demo, value, name, **labels):
    for _ in range(1000):
        if metric(demo, name, **labels) == value:
            return
        time.sleep(0.005)
    raise AssertionError("%s%r never reached %r" % (name, labels, value))


# promtool's naming lints that Triton's own names break (Triton's dashboards read those names, so
# they are kept): accepted for nv_* families only; anything else promtool says fails the test.
TRITON_LINTS = ('counter metrics should have "_total" suffix',
                "metric names should not contain abbreviated units",
                'non-histogram and non-summary metrics should not have "_count" suffix',
                "metric name should not include type 'summary'",
                "metric name should not include type 'histogram'")


def promtool_ok(text):
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.fail("promtool is not installed (scripts/install-deps.sh installs prometheus)",
                    pytrace=False)
    r = subprocess.run([promtool, "check", "metrics"], input=text.encode(), capture_output=True,
                       timeout=30)
    out = (r.stdout + r.stderr).decode()
    problems = [l for l in out.splitlines() if l.strip() and
                not (l.startswith("nv_") and any(l.endswith(x) for x in TRITON_LINTS))]
    assert not problems and r.returncode in (0, 3), out


@pytest.fixture
def tdemo(start_demo):
    return start_demo("--metrics-style", "triton", "--threads", "1")


def test_triton_metric_names_count_successes_failures_and_time(tdemo):
    m = dict(model="simple", version="1")
    for _ in range(3):
        assert post_json(tdemo, "/v2/models/simple/infer", simple_body()).status_code == 200
    assert metric(tdemo, "nv_inference_request_success", **m) == 3
    assert metric(tdemo, "nv_inference_count", **m) == 3
    assert metric(tdemo, "nv_inference_exec_count", **m) == 3
    assert metric(tdemo, "nv_inference_request_duration_us", **m) > 0
    assert metric(tdemo, "nv_inference_pending_request_count", **m) == 0
    for reason in ("REJECTED", "CANCELED", "BACKEND", "OTHER"):
        assert metric(tdemo, "nv_inference_request_failure", **m, reason=reason) == 0
    # BACKEND: the model failed it
    r = post_json(tdemo, "/v2/models/failing/infer",
                  {"inputs": [{"name": "INPUT0", "shape": [4], "datatype": "INT32",
                               "data": [1, 2, 3, 4]}]})
    assert r.status_code == 500, r.text
    assert metric(tdemo, "nv_inference_request_failure", model="failing", version="1",
                  reason="BACKEND") == 1
    text = get(tdemo, "/metrics").text
    assert "isv_requests_total" not in text  # Triton's names only
    promtool_ok(text)


def test_triton_failure_reasons_rejected_and_canceled(tdemo):
    q = dict(model="queue1", version="1")
    with concurrent.futures.ThreadPoolExecutor(3) as ex:
        busy = ex.submit(post_json, tdemo, "/v2/models/queue1/infer", SLOW(1500))
        time.sleep(0.2)  # running: the instance is taken (executions count once they end)
        waiting = ex.submit(post_json, tdemo, "/v2/models/queue1/infer", SLOW(1))
        wait_metric(tdemo, 1, "nv_inference_pending_request_count", **q)
        r = post_json(tdemo, "/v2/models/queue1/infer", SLOW(1))  # the queue's one place is taken
        assert r.status_code == 503, r.text
        assert busy.result().status_code == 200 and waiting.result().status_code == 200
    assert metric(tdemo, "nv_inference_request_failure", **q, reason="REJECTED") == 1
    # CANCELED: a client that hangs up while its request runs
    s = socket.create_connection((tdemo.host, tdemo.port))
    s.sendall(http_request("POST", "/v2/models/queue1/infer",
                           b'{"inputs":[{"name":"INPUT0","shape":[1],"datatype":"INT32",'
                           b'"data":[3000]}]}'))
    time.sleep(0.3)  # it runs
    s.close()
    wait_metric(tdemo, 1, "nv_inference_request_failure", **q, reason="CANCELED")
    assert metric(tdemo, "nv_inference_request_success", **q) == 2


def test_both_styles_at_once_pass_promtool(start_demo):
    d = start_demo("--metrics-style", "both")
    assert post_json(d, "/v2/models/simple/infer", simple_body()).status_code == 200
    text = get(d, "/metrics").text
    assert "isv_requests_total{" in text and "nv_inference_request_success{" in text
    promtool_ok(text)


def test_the_default_style_passes_promtool(demo):
    assert post_json(demo, "/v2/models/simple/infer", simple_body()).status_code == 200
    text = get(demo, "/metrics").text
    assert "nv_inference" not in text
    promtool_ok(text)


def test_a_bad_metrics_style_is_refused_at_start(start_demo):
    with pytest.raises(RuntimeError):
        start_demo("--metrics-style", "prometheus")


def test_tritons_optional_histograms_and_summaries(start_demo):
    """--metrics-config histogram_latencies=true / summary_latencies=true (Triton's flags): a
    decoupled model's time to its first response in Triton's buckets (ms; none for a model that
    is not decoupled), and the summaries' quantiles, count and sum — promtool-clean."""
    d = start_demo("--metrics-style", "triton", "--threads", "1",
                   "--metrics-config", "histogram_latencies=true",
                   "--metrics-config", "summary_latencies=true")
    with requests.post(d.url("/v2/models/tokens/generate_stream"), stream=True, timeout=10,
                       json={"text_input": "hello big world", "delay_ms": 150}) as r:
        assert r.status_code == 200
        r.content  # the whole stream: three words, the first after 150 ms
    for _ in range(4):
        assert post_json(d, "/v2/models/simple/infer", simple_body()).status_code == 200
    t = dict(model="tokens", version="1")
    h = "nv_inference_first_response_histogram_ms"
    assert metric(d, h + "_bucket", **t, le="100") == 0
    assert metric(d, h + "_bucket", **t, le="500") == 1  # 150 ms and a little
    assert metric(d, h + "_bucket", **t, le="+Inf") == 1
    assert metric(d, h + "_count", **t) == 1 and 150 <= metric(d, h + "_sum", **t) < 500
    text = get(d, "/metrics").text
    assert h + '_bucket{model="simple"' not in text  # not decoupled: none, as Triton
    s = dict(model="simple", version="1")
    assert metric(d, "nv_inference_request_summary_us_count", **s) == 4
    assert metric(d, "nv_inference_request_summary_us_sum", **s) > 0
    qs = [metric(d, "nv_inference_request_summary_us", **s, quantile=q)
          for q in ("0.5", "0.9", "0.95", "0.99", "0.999")]
    assert all(q > 0 for q in qs) and qs == sorted(qs), qs
    assert qs[-1] <= metric(d, "nv_inference_request_summary_us_sum", **s)
    for fam in ("queue", "compute_input", "compute_infer", "compute_output"):
        assert metric(d, "nv_inference_%s_summary_us_count" % fam, **s) == 4
    # a model nothing ran on: no observation in the window
    assert "nv_inference_request_summary_us{model=\"failing\",version=\"1\",quantile=\"0.5\"} NaN" \
        in text.splitlines()
    promtool_ok(text)


def test_tritons_optional_metrics_need_tritons_style(start_demo):
    for flags in (("--metrics-config", "histogram_latencies=true"),
                  ("--metrics-style", "triton", "--metrics-config", "gpu=true")):
        with pytest.raises(RuntimeError):
            start_demo(*flags)
