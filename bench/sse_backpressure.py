"""Peak and after-close RSS of the demo while 10 clients request /custom/sse?n=100000 and never
read (issue #34, finding 5b). Usage: /usr/bin/python3 bench/sse_backpressure.py DEMO_BINARY"""
import os
import socket
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "integration"))
from isvtest import Demo  # noqa: E402


def rss(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) // 1024
    return 0


d = Demo(binary=sys.argv[1])
try:
    time.sleep(0.5)
    base = rss(d.proc.pid)
    socks = []
    for _ in range(10):
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.connect((d.host, d.port))
        s.sendall(b"POST /custom/sse?n=100000 HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
        socks.append(s)
    peak, end = 0, time.time() + 6
    while time.time() < end:
        peak = max(peak, rss(d.proc.pid))
        time.sleep(0.05)
    for s in socks:
        s.close()
    time.sleep(3)
    print("baseline %d MiB, peak %d MiB (+%d), 3 s after close %d MiB (+%d)"
          % (base, peak, peak - base, rss(d.proc.pid), rss(d.proc.pid) - base))
finally:
    d.stop()
