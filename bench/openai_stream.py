#!/usr/bin/env python3
"""bench/openai_stream.py — issue 32's streaming row: time to first token and the library's
inter-token overhead of /openai/v1/chat/completions with "stream": true, at 1 and at N
concurrent streams, against the demo's tiny_lm, which sleeps DELAY ms before each word (its
own "compute"): the overhead is what an interval costs beyond that delay.

    bench/openai_stream.py HOST PORT DELAY_MS [TOKENS [CONCURRENCY...]]
    (DEMO_PID in the environment: the demo's CPU time per token is printed too)

Each stream is one HTTP/1.1 connection (a raw socket: the client's own cost per chunk stays
small and equal for every server), POSTing a chat request with max_tokens TOKENS; the time
of each `data:` event is taken as it arrives. Prints one Markdown row per concurrency:
streams, TTFT median / p90 (from the request's send to the first content chunk), inter-token
interval median / p90, overhead median (interval - DELAY), and the wall time. tiny_lm runs 4
instances on the worker pool: above 4 streams the rest wait for an instance (their TTFT
shows it), while each running stream's intervals still show the per-token cost.
"""
import json
import os
import socket
import statistics
import sys
import threading
import time


def one_stream(host, port, tokens, out):
    body = json.dumps({"model": "tiny_lm", "stream": True, "max_tokens": tokens, "seed": 7,
                       "messages": [{"role": "user", "content": "the quick brown fox"}]}).encode()
    req = (b"POST /openai/v1/chat/completions HTTP/1.1\r\nHost: bench\r\n"
           b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body)) + body
    s = socket.create_connection((host, port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    t0 = time.perf_counter()
    s.sendall(req)
    buf, times, done = b"", [], False
    while not done:
        chunk = s.recv(65536)
        if not chunk:
            break
        now = time.perf_counter()
        buf += chunk
        while b"\n\n" in buf:
            event, buf = buf.split(b"\n\n", 1)
            i = event.find(b"data: ")
            if i < 0:
                continue
            data = event[i + 6:]
            if data == b"[DONE]":
                done = True
                break
            if b'"content"' in data and b'"content":""' not in data:  # not the role's chunk
                times.append(now)
    s.close()
    out.append((t0, times))


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def cpu_s(pid):
    if not pid:
        return 0.0
    f = open("/proc/%s/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def run(host, port, delay_ms, tokens, n):
    results, threads = [], []
    pid = os.environ.get("DEMO_PID")
    c0 = cpu_s(pid)
    w0 = time.perf_counter()
    for _ in range(n):
        t = threading.Thread(target=one_stream, args=(host, port, tokens, results))
        t.start()
        threads.append(t)
    for t in threads:
        t.join()
    wall = time.perf_counter() - w0
    cpu_us = (cpu_s(pid) - c0) * 1e6
    ttft, gaps = [], []
    for t0, times in results:
        if not times:
            continue
        ttft.append((times[0] - t0) * 1e3)
        gaps += [(b - a) * 1e3 for a, b in zip(times, times[1:])]
    # chunks that arrived in one read share a timestamp (gap 0): they ride on one write
    got = sum(len(t) for _, t in results)
    print("| %d | %.2f / %.2f | %.3f / %.3f | %.3f | %.2f s | %d of %d | %s |" % (
        n, statistics.median(ttft), pct(ttft, 0.9), statistics.median(gaps), pct(gaps, 0.9),
        statistics.median(gaps) - delay_ms, wall, got, n * tokens,
        "%.1f" % (cpu_us / got) if pid and got else "-"))


def main():
    host, port, delay = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    tokens = int(sys.argv[4]) if len(sys.argv) > 4 else 50
    conc = [int(x) for x in sys.argv[5:]] or [1, 64]
    print("| streams | TTFT ms median / p90 | inter-token ms median / p90 | overhead ms "
          "(median - %g) | wall | content chunks of tokens | demo CPU µs per token |" % delay)
    print("|---|---|---|---|---|---|---|")
    for n in conc:
        run(host, port, delay, tokens, n)


if __name__ == "__main__":
    main()
