#!/usr/bin/env python3
"""bench/priority.py — issue 29's priority row: does a priority-1 client keep its latency while
priority-2 requests flood the model? Against the demo's `prio` model (one instance, INPUT0 ms of
"compute" per call, 3 levels, 2 by default), over REST (V2 infer, "parameters": {"priority": P}).

    bench/priority.py HOST PORT [MS [FLOOD [SECONDS]]]     (defaults 2 ms, 16 clients, 5 s)

Three phases of SECONDS each, one probe client sending one request at a time:
  alone      the probe at priority 1, nothing else: the model's own latency (MS plus the path);
  flood p1   FLOOD clients at priority 2 keep the model's one instance busy, the probe at
             priority 1: it waits at most for the call in progress, then runs first;
  flood ref  the same flood, the probe with no priority (the default level, 2): what the probe
             would see without priorities — the reference, measured in the same run.
Prints one Markdown row per phase: probe requests, latency p50 / p90 / p99 (ms), and the flood's
completed requests per second with its p50 latency. Each client is one keep-alive HTTP/1.1
connection (http.client): the client's own cost is the same in every phase.
"""
import http.client
import json
import statistics
import sys
import threading
import time


def body(ms, priority):
    b = {"inputs": [{"name": "INPUT0", "datatype": "INT32", "shape": [1], "data": [ms]}]}
    if priority is not None:
        b["parameters"] = {"priority": priority}
    return json.dumps(b)


def client(host, port, payload, stop, lat):
    conn = http.client.HTTPConnection(host, port, timeout=30)
    hdr = {"Content-Type": "application/json"}
    while not stop.is_set():
        t0 = time.perf_counter()
        conn.request("POST", "/v2/models/prio/infer", payload, hdr)
        r = conn.getresponse()
        data = r.read()
        if r.status != 200:
            raise SystemExit("HTTP %d: %s" % (r.status, data[:200]))
        lat.append((time.perf_counter() - t0) * 1000)
    conn.close()


def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(p / 100 * len(v)))]


def phase(host, port, ms, flood, seconds, probe_priority):
    stop = threading.Event()
    probe, flooded = [], []
    threads = [threading.Thread(target=client, args=(host, port, body(ms, 2), stop, flooded))
               for _ in range(flood)]
    threads.append(threading.Thread(target=client,
                                    args=(host, port, body(ms, probe_priority), stop, probe)))
    for t in threads:
        t.start()
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join()
    return probe, flooded


def main():
    host, port = sys.argv[1], int(sys.argv[2])
    ms = int(sys.argv[3]) if len(sys.argv) > 3 else 2
    flood = int(sys.argv[4]) if len(sys.argv) > 4 else 16
    seconds = float(sys.argv[5]) if len(sys.argv) > 5 else 5.0
    print("| phase | probe requests | probe p50 / p90 / p99 ms | flood req/s | flood p50 ms |")
    print("|---|---|---|---|---|")
    for name, n, prio in (("alone", 0, 1), ("flood, probe at priority 1", flood, 1),
                          ("flood, probe at the default level (reference)", flood, None)):
        probe, flooded = phase(host, port, ms, n, seconds, prio)
        fl = ("%.0f" % (len(flooded) / seconds), "%.1f" % statistics.median(flooded)) \
            if flooded else ("-", "-")
        print("| %s | %d | %.1f / %.1f / %.1f | %s | %s |" % (
            name, len(probe), pct(probe, 50), pct(probe, 90), pct(probe, 99), fl[0], fl[1]))


if __name__ == "__main__":
    main()
