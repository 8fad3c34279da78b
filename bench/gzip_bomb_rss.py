#!/usr/bin/env python3
"""Peak RSS of the demo under N concurrent gzip bombs (issue #34, finding 5): each body is
~61 KB of gzip that decodes to 60 MiB, sent to /v2/models/simple/infer by N clients at once.
Prints the demo's peak RSS (VmHWM) before and after, its RSS once they are answered, and the
statuses they got. Usage:

    bench/gzip_bomb_rss.py DEMO [N=40] [extra demo flags...]

Run it on two builds in one go to compare (bench/RESULTS.md records such runs)."""
import gzip
import re
import subprocess
import sys
import threading
import time

import requests


def status_kb(pid, key):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def main():
    demo = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 40
    p = subprocess.Popen([demo, "--listen", "127.0.0.1:0", "--threads", "1"] + sys.argv[3:],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    port = None
    for line in p.stdout:
        m = re.search(r"127\.0\.0\.1:(\d+)", line)
        if m:
            port = int(m.group(1))
            break
    try:
        bomb = gzip.compress(b" " * (60 << 20), 9)
        before = status_kb(p.pid, "VmHWM") / 1024
        statuses = []

        def one():
            r = requests.post("http://127.0.0.1:%d/v2/models/simple/infer" % port, data=bomb,
                              headers={"Content-Encoding": "gzip"}, timeout=120)
            statuses.append(r.status_code)

        ts = [threading.Thread(target=one) for _ in range(n)]
        t0 = time.time()
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        peak = status_kb(p.pid, "VmHWM") / 1024
        print("%d clients, body %d B: peak RSS %.0f -> %.0f MiB (+%.0f), RSS after %.0f MiB, "
              "statuses %s, %.2f s" % (n, len(bomb), before, peak, peak - before,
                                       status_kb(p.pid, "VmRSS") / 1024,
                                       {s: statuses.count(s) for s in sorted(set(statuses))},
                                       time.time() - t0))
    finally:
        p.terminate()
        p.wait()


if __name__ == "__main__":
    main()
