"""examples/microhttpd: the demo's zoo behind libmicrohttpd, through the transport adapter
(isv_exchange_*). The V2 REST integration cases (and the TF Serving, custom route and
generate ones) run against it unchanged, in a pytest of their own with $INFERSERVE_DEMO
pointing at inferserve-mhd; the cases that need h2c, gRPC or the demo's flags are skipped
there (conftest.py, ADAPTER_HOST). A real HTTP server of someone else's, real clients."""
import os
import re
import subprocess
import sys

import pytest
import requests

from isvtest import TIMEOUT, Demo, demo_path

HERE = os.path.dirname(os.path.abspath(__file__))
MHD = os.path.join(os.path.dirname(os.path.dirname(demo_path())), "microhttpd", "inferserve-mhd")
REST_CASES = ["test_infer_simple.py", "test_v2_endpoints.py", "test_binary_data.py",
              "test_datatypes.py", "test_classification.py", "test_parameters.py",
              "test_errors.py", "test_custom_routes.py", "test_generate.py",
              "test_compression.py", "test_tfserving.py"]

pytestmark = pytest.mark.skipif(not os.path.exists(MHD),
                                reason="inferserve-mhd not built (Debian libmicrohttpd-dev)")


def test_the_v2_rest_cases_pass_behind_libmicrohttpd():
    env = dict(os.environ, INFERSERVE_DEMO=MHD, INFERSERVE_ADAPTER_HOST="inferserve-mhd")
    res = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
                         + REST_CASES, cwd=HERE, env=env, capture_output=True, text=True,
                         timeout=600)
    tail = res.stdout[-6000:] + res.stderr[-2000:]
    summary = res.stdout.strip().splitlines()[-1] if res.stdout.strip() else ""
    passed = int(m.group(1)) if (m := re.search(r"(\d+) passed", summary)) else 0
    assert res.returncode == 0 and not re.search(r"\d+ (failed|error)", summary), tail
    # most of them apply: a handful need h2c, gRPC or the demo's flags
    assert passed >= 150, summary


def test_the_hosts_own_server_answers():
    d = Demo(binary=MHD)
    try:
        r = requests.get(d.url("/v2/health/ready"), timeout=TIMEOUT)
        assert r.status_code == 200 and r.json() == {"ready": True}
        r = requests.post(d.url("/custom/sse?n=3"), timeout=TIMEOUT, stream=True)
        assert r.headers["Content-Type"] == "text/event-stream"
        assert r.headers.get("Transfer-Encoding") == "chunked"
        events = [line for line in r.iter_lines() if line]
        assert events == [b"data: 0", b"data: 1", b"data: 2", b"data: [DONE]"]
    finally:
        assert d.stop() == 0, d.stderr_tail()
