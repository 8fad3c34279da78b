"""CORS with a real browser: headless Chromium (Debian's chromium) loads a page from one origin
(a Python http.server on its own port) whose script fetch()es the demo's V2 REST API on
another origin — JSON with Content-Type application/json and an Authorization header, so the
browser sends a preflight first — and writes the outcome into the page, which the test reads
back with --dump-dom. An allowed origin gets the inference result; any other, the browser's
refusal."""
import functools
import http.server
import os
import re
import shutil
import subprocess
import tempfile
import threading

import pytest

from isvtest import simple_body

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")

PAGE = """<!doctype html>
<html><body><pre id="out">pending</pre>
<script>
fetch("%(api)s/v2/models/simple/infer", {
  method: "POST",
  headers: {"Content-Type": "application/json", "Authorization": "Bearer %(token)s"},
  body: JSON.stringify(%(body)s)
}).then(r => r.json().then(j => {
  const out = j.outputs ? j.outputs.find(o => o.name === "OUTPUT0").data.slice(0, 3) : j;
  document.getElementById("out").textContent =
      "STATUS " + r.status + " " + JSON.stringify(out) + " IHCL=" +
      r.headers.get("Inference-Header-Content-Length");
})).catch(e => { document.getElementById("out").textContent = "BLOCKED " + e; });
</script></body></html>
"""


@pytest.fixture
def page_server():
    root = tempfile.mkdtemp(prefix="isv-cors-")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=root)
    handler.log_message = lambda *a: None
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield root, "http://127.0.0.1:%d" % srv.server_address[1]
    srv.shutdown()
    srv.server_close()
    shutil.rmtree(root, True)


def run_page(root, origin, api, token="t0ken"):
    import json
    with open(os.path.join(root, "page.html"), "w") as f:
        f.write(PAGE % {"api": api, "token": token, "body": json.dumps(simple_body())})
    profile = tempfile.mkdtemp(prefix="isv-chromium-")
    try:
        res = subprocess.run(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-dev-shm-usage", "--user-data-dir=" + profile,
             "--virtual-time-budget=8000", "--dump-dom", origin + "/page.html"],
            capture_output=True, text=True, timeout=90)
    finally:
        shutil.rmtree(profile, True)
    m = re.search(r'<pre id="out">(.*?)</pre>', res.stdout, re.S)
    assert m, "no page in chromium's output:\n%s\n%s" % (res.stdout[-2000:], res.stderr[-2000:])
    return m.group(1)


def test_an_allowed_origin_reads_the_answer(start_demo, page_server, tmp_path):
    root, origin = page_server
    token = tmp_path / "token"
    token.write_text("t0ken")
    d = start_demo("--cors-origin", origin, "--bearer-token", str(token))
    out = run_page(root, origin, d.base)
    # simple: OUTPUT0 = INPUT0 + INPUT1 (simple_body: 0..15 and 1s), read by the page
    assert out.startswith("STATUS 200 [1,2,3] "), out
    assert "IHCL=null" in out  # exposed, absent from a JSON answer: readable as null


def test_a_wrong_token_is_readable_as_401(start_demo, page_server, tmp_path):
    root, origin = page_server
    token = tmp_path / "token"
    token.write_text("t0ken")
    d = start_demo("--cors-origin", origin, "--bearer-token", str(token))
    out = run_page(root, origin, d.base, token="wrong")
    assert out.startswith("STATUS 401 "), out


def test_another_origin_is_refused_by_the_browser(start_demo, page_server):
    root, origin = page_server
    d = start_demo("--cors-origin", "http://somewhere.else.example")
    out = run_page(root, origin, d.base)
    assert out.startswith("BLOCKED "), out
