"""Attacks from issue 10, each a regression test: what a hostile client sends, over raw sockets,
and what the server must do instead of crashing, stalling or holding memory.

Point 1: Upgrade and CONNECT. An HTTP/1.1 request carrying `Upgrade` (h2c, websocket) followed
by any byte used to crash the server (llhttp's upgrade pause reached the router with no
request). The server ignores Upgrade (RFC 9110 §7.8: optional), answers over HTTP/1.1 and keeps
parsing HTTP/1.1; CONNECT asks for a tunnel and gets 405, then the connection closes.
"""
import json
import subprocess
import time

import pytest

from isvtest import TIMEOUT, RawConn, http_request, simple_body

UPGRADES = {
    "h2c": {"Connection": "Upgrade, HTTP2-Settings", "Upgrade": "h2c",
            "HTTP2-Settings": "AAMAAABkAAQAoAAAAAIAAAAA"},
    "websocket": {"Connection": "Upgrade", "Upgrade": "websocket",
                  "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version": "13"},
}


def _live(c):
    c.send(http_request("GET", "/v2/health/live"))
    r = c.read_response()
    assert r.status == 200 and r.json() == {"live": True}, r


@pytest.mark.parametrize("kind", sorted(UPGRADES))
def test_upgrade_then_pipelined_byte(demo, kind):
    """The one-request crash: the upgrade request and one more byte in the same segment."""
    with RawConn(demo) as c:
        c.send(http_request("GET", "/", headers=UPGRADES[kind]) + b"X")
        r = c.read_response()
        assert r.status == 404 and r.version == "HTTP/1.1", r
        assert "unknown path" in r.json()["error"], r
        # "X" then the end of the line starts an HTTP/1.1 request that is not valid: 400, close
        c.send(b" / HTTP/1.1\r\n\r\n")
        r = c.read_response()
        assert r.status == 400, r
        assert c.wait_closed(TIMEOUT)


@pytest.mark.parametrize("kind", sorted(UPGRADES))
def test_upgrade_then_byte_sent_later(demo, kind):
    with RawConn(demo) as c:
        c.send(http_request("GET", "/v2/health/ready", headers=UPGRADES[kind]))
        r = c.read_response()
        assert r.status == 200 and r.json() == {"ready": True}, r
        assert r.header("upgrade") is None, r
        time.sleep(0.05)
        c.send(b"X")
        time.sleep(0.05)
        c.send(b"Y / HTTP/1.1\r\nHost: x\r\n\r\n")
        r = c.read_response()
        assert r.status in (400, 405, 501), r  # "XY" is not a method; never a crash


@pytest.mark.parametrize("kind", sorted(UPGRADES))
def test_upgrade_request_with_body_then_next_request(demo, kind):
    """The upgrade is ignored, so the body is read as the request's body and the connection
    keeps serving HTTP/1.1 requests."""
    body = json.dumps(simple_body(req_id="up")).encode()
    with RawConn(demo) as c:
        c.send(http_request("POST", "/v2/models/simple/infer", body, headers=UPGRADES[kind])
               + http_request("GET", "/v2/health/live"))
        r = c.read_response()
        assert r.status == 200 and r.json()["id"] == "up", r
        r = c.read_response()
        assert r.status == 200 and r.json() == {"live": True}, r
        _live(c)


def test_upgrade_many_pipelined(demo):
    reqs = b"".join(http_request("GET", "/v2/health/live", headers=UPGRADES["h2c"])
                    for _ in range(5))
    with RawConn(demo) as c:
        c.send(reqs)
        for _ in range(5):
            r = c.read_response()
            assert r.status == 200 and r.json() == {"live": True}, r


@pytest.mark.parametrize("trailing", [b"", b"\x16\x03\x01\x00\x05hello", b"GET / HTTP/1.1\r\n\r\n"],
                         ids=["alone", "tls-bytes", "http-bytes"])
def test_connect_is_refused_and_closed(demo, trailing):
    with RawConn(demo) as c:
        c.send(b"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n" + trailing)
        r = c.read_response()
        assert r.status == 405, r
        assert "CONNECT" in r.json()["error"], r
        assert r.header("connection") == "close", r
        assert c.wait_closed(TIMEOUT)
    with RawConn(demo) as c:
        _live(c)


def test_curl_http2_upgrade_answered_over_http1(demo):
    """curl --http2 on http:// asks for the h2c upgrade; the answer comes over HTTP/1.1 and
    curl's second request on the same connection works too."""
    url = demo.url("/v2/health/live")
    out = subprocess.run(["curl", "-sS", "--http2", "-w", "%{http_code} %{http_version}\\n",
                          url, url], capture_output=True, text=True, timeout=15)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.replace('{"live":true}', "").split()
    assert lines == ["200", "1.1", "200", "1.1"], out.stdout
