"""Backpressure on streamed answers (security issue #34, finding 5b): a client that does not read
a Server-Sent Events stream must not make the server queue the whole stream in memory, the
memory must go back once it leaves, a stuck consumer (HTTP/1.1 or an HTTP/2 stream with a zero
window) is cut at the send timeout, and a slow reader still gets every event in order."""
import os
import socket
import time

import pytest

import h2raw
from h2raw import H2Conn, rest_headers

MIB = 1024 * 1024


def _rss(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def _sse_request(n, extra=""):
    return ("POST /custom/sse?n=%d%s HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"
            % (n, extra)).encode()


def _non_reader(d, n, extra=""):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connect: a small window
    s.connect((d.host, d.port))
    s.sendall(_sse_request(n, extra))
    return s


def _peak_while(pid, seconds):
    peak, end = 0, time.time() + seconds
    while time.time() < end:
        peak = max(peak, _rss(pid))
        time.sleep(0.05)
    return peak


def _warm(d):
    """One complete stream first, so that the baseline counts the pool threads' stacks."""
    with socket.create_connection((d.host, d.port)) as s:
        s.sendall(_sse_request(1000))
        got = b""
        s.settimeout(10)
        while b"data: [DONE]" not in got:
            chunk = s.recv(65536)
            assert chunk, "stream ended early"
            got += chunk


def test_non_reading_sse_clients_bounded_and_memory_returns(start_demo):
    # under ASan, freed memory waits in its quarantine (256 MiB by default) and reads as RSS that
    # never returns: the ASan demo gets a small one, as below (a release demo ignores it)
    asan = os.environ.get("ASAN_OPTIONS", "")
    d = start_demo(env={"ASAN_OPTIONS": (asan + ":" if asan else "") + "quarantine_size_mb=4"})
    pid = d.proc.pid
    _warm(d)
    time.sleep(0.3)
    base = _rss(pid)
    clients = [_non_reader(d, 100000) for _ in range(10)]
    try:
        peak = _peak_while(pid, 4.0)
    finally:
        for s in clients:
            s.close()
    assert peak - base < 100 * MIB, "RSS grew %.0f MiB with 10 clients that do not read" % (
        (peak - base) / MIB)
    after, end = _rss(pid), time.time() + 10
    while after - base > 64 * MIB and time.time() < end:
        time.sleep(0.2)
        after = _rss(pid)
    assert after - base <= 64 * MIB, "RSS still %.0f MiB above the start after the clients " \
        "left (peak %.0f MiB above)" % ((after - base) / MIB, (peak - base) / MIB)
    assert d.alive()


def test_non_reading_h1_client_cut_at_send_timeout(start_demo):
    d = start_demo("--send-timeout-ms", "1000")
    s = _non_reader(d, 100000, "&pad=1000")  # 100 MB: far more than the kernel buffers
    try:
        time.sleep(3.5)  # the send timeout passes while it reads nothing
        s.settimeout(5)
        got, ended = b"", False
        try:
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    ended = True
                    break
                got += chunk
        except ConnectionResetError:
            ended = True
        assert ended
        assert b"data: [DONE]" not in got, "the stream was not cut"
    finally:
        s.close()


def test_h2_zero_window_sse_bounded_and_cut(start_demo):
    d = start_demo("--send-timeout-ms", "1000")
    pid = d.proc.pid
    base = _rss(pid)
    with H2Conn(d, settings={h2raw.INITIAL_WINDOW_SIZE: 0}, auto_window=False) as c:
        sid = c.request(rest_headers(d, "POST", "/custom/sse?n=100000&pad=1000"))
        start = time.time()
        peak = 0
        while time.time() - start < 6 and not c.streams[sid].done:
            c.pump(0.1)
            peak = max(peak, _rss(pid))
        st = c.streams[sid]
        assert peak - base < 100 * MIB, "RSS grew %.0f MiB for one zero-window stream" % (
            (peak - base) / MIB)
        assert st.reset is not None or c.closed, "the stuck stream was not cut at the send " \
            "timeout: %r" % st
        assert len(st.data) == 0
    assert d.alive()


def _read_events_slowly(s, pause_every, pause):
    got, n = b"", 0
    s.settimeout(20)
    while b"data: [DONE]" not in got:
        chunk = s.recv(4096)
        assert chunk, "the stream ended before [DONE]"
        got += chunk
        n += 1
        if n % pause_every == 0:
            time.sleep(pause)
    return got


def _check_events(body, n):
    events = [e for e in body.split(b"\n\n") if e.startswith(b"data: ")]
    want = [b"data: %d" % i for i in range(n)] + [b"data: [DONE]"]
    assert events == want, "events lost or out of order (%d of %d)" % (len(events), len(want))


@pytest.mark.parametrize("proto", ["h1", "h2"])
def test_slow_reader_gets_every_event_in_order(start_demo, proto):
    # a small bound, so that the producer really waits for the reader again and again
    d = start_demo("--max-queued-stream-bytes", "16384", "--max-queued-conn-bytes", "32768")
    n = 30000
    if proto == "h1":
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.connect((d.host, d.port))
            s.sendall(_sse_request(n))
            raw = _read_events_slowly(s, 8, 0.01)
        body = raw.split(b"\r\n\r\n", 1)[1]
        # de-chunk
        out, rest = b"", body
        while rest:
            size_line, rest = rest.split(b"\r\n", 1)
            size = int(size_line, 16)
            if size == 0:
                break
            out += rest[:size]
            rest = rest[size + 2:]
        _check_events(out, n)
    else:
        with H2Conn(d, settings={h2raw.INITIAL_WINDOW_SIZE: 8192}, auto_window=True) as c:
            sid = c.request(rest_headers(d, "POST", "/custom/sse?n=%d" % n))
            end = time.time() + 30
            while not c.streams[sid].done and time.time() < end:
                c.pump(0.02)
            st = c.streams[sid]
            assert st.ended, st
            _check_events(st.data, n)


def test_non_reading_generate_stream_client_bounded(start_demo):
    # the same for a decoupled model's responses as Server-Sent Events (generate_stream): the
    # demo's `tokens` sends a response per word, and waits (ISV_EAGAIN) while nobody reads
    # (under ASan, freed memory waits in its quarantine — 256 MiB by default — and would read as
    # RSS: the ASan demo gets a small one; a release demo ignores ASAN_OPTIONS)
    asan = os.environ.get("ASAN_OPTIONS", "")
    d = start_demo("--threads", "1",
                   env={"ASAN_OPTIONS": (asan + ":" if asan else "") + "quarantine_size_mb=4"})
    pid = d.proc.pid
    _warm(d)
    time.sleep(0.3)
    base = _rss(pid)
    body = ('{"text_input": "%s"}' % ("w " * 150000)).encode()
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect((d.host, d.port))
    s.sendall(("POST /v2/models/tokens/generate_stream HTTP/1.1\r\nHost: x\r\n"
               "Content-Type: application/json\r\nContent-Length: %d\r\n\r\n"
               % len(body)).encode() + body)
    try:
        peak = _peak_while(pid, 3.0)
    finally:
        s.close()
    assert peak - base < 48 * MIB, "RSS grew %.0f MiB with a generate_stream client that does " \
        "not read" % ((peak - base) / MIB)
    assert d.alive()


def test_h2_zero_window_model_stream_infer_bounded_and_cut(start_demo):
    # a decoupled model's responses on ModelStreamInfer: `repeat` answers once per element of
    # IN (200,000 here) and waits while the client takes nothing (a zero window), so memory
    # stays bounded; the stuck stream is cut at the send timeout
    from grpc_stubs import add_input, encode_raw, grpc_frame, load_stubs
    pb = load_stubs().pb
    asan = os.environ.get("ASAN_OPTIONS", "")  # a small quarantine: see the test above
    d = start_demo("--send-timeout-ms", "1000", "--threads", "1",
                   env={"ASAN_OPTIONS": (asan + ":" if asan else "") + "quarantine_size_mb=4"})
    pid = d.proc.pid
    base = _rss(pid)
    n = 200000
    req = pb.ModelInferRequest(model_name="repeat")
    add_input(req, "IN", "INT32", [n], raw=encode_raw("INT32", list(range(n))))
    with H2Conn(d, settings={h2raw.INITIAL_WINDOW_SIZE: 0}, auto_window=False) as c:
        sid = c.request(h2raw.grpc_headers(d, "/inference.GRPCInferenceService/ModelStreamInfer"),
                        body=grpc_frame(req.SerializeToString()), end_stream=True)
        start = time.time()
        peak = 0
        while time.time() - start < 6 and not c.streams[sid].done:
            c.pump(0.1)
            peak = max(peak, _rss(pid))
        st = c.streams[sid]
        assert peak - base < 100 * MIB, "RSS grew %.0f MiB for one zero-window gRPC stream" % (
            (peak - base) / MIB)
        assert st.reset is not None or c.closed, "the stuck stream was not cut: %r" % st
    assert d.alive()
