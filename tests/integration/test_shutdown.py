"""Process lifecycle: SIGTERM/SIGINT exit 0, in-flight requests drain, the listener closes,
idle keep-alive connections do not hold the process."""
import json
import signal
import socket
import threading
import time

import pytest
import requests

from isvtest import RawConn, flatten, http_request, outputs_by_name, slow_body


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_exits_zero(start_demo, sig):
    d = start_demo()
    assert requests.get(d.url("/v2/health/live"), timeout=5).status_code == 200
    t0 = time.monotonic()
    d.stop_and_check(sig, timeout=10.0)
    assert time.monotonic() - t0 < 5.0, "exit took %.1f s" % (time.monotonic() - t0)


def test_listening_line_format(start_demo):
    d = start_demo()
    assert any(line == "inferserve-demo listening on 127.0.0.1:%d" % d.port for line in d.lines), \
        d.lines


def _slow_in_thread(d, ms, result):
    body = json.dumps(slow_body(d, ms, req_id="drain"))

    def run():
        try:
            r = requests.post(d.url("/v2/models/slow/infer"), data=body,
                              headers={"Content-Type": "application/json"}, timeout=10)
            result["status"] = r.status_code
            result["body"] = r.text
            result["t"] = time.monotonic()
        except Exception as e:
            result["exc"] = repr(e)

    t = threading.Thread(target=run)
    t.start()
    return t


def test_sigterm_drains_in_flight_request(start_demo):
    d = start_demo()
    result = {}
    t = _slow_in_thread(d, 500, result)
    time.sleep(0.1)
    d.send_signal(signal.SIGTERM)
    t.join(10)
    assert "exc" not in result, "in-flight request failed during shutdown: %s\n%s" % (
        result.get("exc"), d.stderr_tail())
    assert result.get("status") == 200, result
    body = json.loads(result["body"])
    assert body.get("id") == "drain", body
    assert flatten(outputs_by_name(body)["OUTPUT0"]["data"]) == [500], body
    rc = d.wait_exit(10.0)  # already signalled once (a second signal means "exit now")
    assert rc == 0, d.describe_exit(rc)


def test_sigterm_stops_listening_while_draining(start_demo):
    d = start_demo()
    result = {}
    t = _slow_in_thread(d, 600, result)
    time.sleep(0.1)
    d.send_signal(signal.SIGTERM)
    time.sleep(0.15)
    # The listener is closed: a new connection is refused, or (if the kernel accepted it
    # before the close) closed without being served.
    served = None
    try:
        with RawConn(d, timeout=2.0) as c:
            c.send(http_request("GET", "/v2/health/live"))
            c.wait_closed(2.0)
            served = c.buf
    except (ConnectionRefusedError, ConnectionResetError, BrokenPipeError):
        pass
    t.join(10)
    assert result.get("status") == 200, result
    assert not served or b" 200 " not in served.split(b"\r\n")[0], \
        "a new connection was served after SIGTERM: %r" % served
    rc = d.wait_exit(10.0)
    assert rc == 0, d.describe_exit(rc)


def test_idle_keepalive_connection_does_not_block_exit(start_demo):
    d = start_demo()
    c = RawConn(d)
    try:
        c.send(http_request("GET", "/v2/health/live"))
        assert c.read_response().status == 200
        t0 = time.monotonic()
        rc = d.stop(signal.SIGTERM, timeout=10.0)
        elapsed = time.monotonic() - t0
        assert rc == 0, d.describe_exit(rc)
        assert elapsed < 3.0, "exit took %.1f s with an idle keep-alive connection open" % elapsed
        assert c.wait_closed(1.0), "the idle connection was not closed"
    finally:
        c.close()


def test_close_abandons_a_backend_deaf_to_cancellation(start_demo):
    """A backend that ignores cancellation cannot hold the close: at the drain deadline it is
    cancelled, 1 s later abandoned (logged), and the process exits long before the backend's
    10 s are over."""
    d = start_demo("--drain-timeout-ms", "200")
    meta = requests.get(d.url("/v2/models/stubborn"), timeout=5).json()
    body = json.dumps({"inputs": [{"name": "INPUT0", "datatype": "INT32", "shape": [1],
                                   "data": [10000]}]})
    assert meta["inputs"][0]["name"] == "INPUT0"
    result = {}

    def run():
        try:
            r = requests.post(d.url("/v2/models/stubborn/infer"), data=body,
                              headers={"Content-Type": "application/json"}, timeout=15)
            result["status"] = r.status_code
        except requests.RequestException as e:
            result["exc"] = repr(e)

    t = threading.Thread(target=run)
    t.start()
    time.sleep(0.3)  # the backend is asleep on its worker thread
    t0 = time.monotonic()
    d.stop_and_check(signal.SIGTERM, timeout=8.0)
    took = time.monotonic() - t0
    assert 1.0 <= took < 5.0, "exit took %.1f s" % took
    assert "abandoned" in d.stderr_tail(), d.stderr_tail()
    t.join(10)
    # the connection was closed at the drain deadline: the client hears nothing but that
    assert "exc" in result or result.get("status") == 503, result
