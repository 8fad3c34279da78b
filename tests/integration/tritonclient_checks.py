#!/usr/bin/env python3
"""The project's own checks with Triton's Python client (tritonclient), for what Triton's example
programs do not exercise: its `priority` and `timeout` arguments (issue 29), over HTTP and gRPC,
against the demo's `prio` model (3 levels, 2 by default; level 1 holds 2 waiting requests, level
2 rejects at a request's timeout; INPUT0 ms per call). Run by triton_examples.sh with tritonclient
importable (it is not a Debian package: the sweep builds it from a checkout), like the example
programs: exit 0 when every check holds, else "FAILED: ..." and exit 1. It starts its own demo
with one loop (--threads 1: the prio model's one instance, so the order is the queue's), on a
port of the kernel's choosing (every port speaks HTTP and gRPC).

    tritonclient_checks.py DEMO_BINARY
"""
import re
import subprocess
import sys
import threading
import time

import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException


def inputs(mod, ms):
    x = mod.InferInput("INPUT0", [1], "INT32")
    x.set_data_from_numpy(np.array([ms], dtype=np.int32))
    return [x]


def order(result):
    return int(result.as_numpy("OUTPUT0")[0])


def expect_error(fn, *needles):
    try:
        fn()
    except InferenceServerException as e:
        text = str(e)
        for n in needles:
            if n not in text:
                raise AssertionError("error %r does not say %r" % (text, n))
        return text
    raise AssertionError("expected an error saying %r" % (needles,))


def start(client, mod, ms, priority):
    """One call to prio under way, answered later by the returned function (its result). HTTP:
    tritonclient's async_infer (its gevent client is used from this thread only); gRPC: a
    thread (its client is thread-safe)."""
    if mod is httpclient:
        handle = client.async_infer("prio", inputs(mod, ms), priority=priority)
        return handle.get_result
    box = {}

    def run():
        try:
            box["r"] = client.infer("prio", inputs(mod, ms), priority=priority)
        except InferenceServerException as e:
            box["e"] = e
    t = threading.Thread(target=run)
    t.start()

    def result():
        t.join()
        if "e" in box:
            raise box["e"]
        return box["r"]
    return result


def check(name, fn):
    try:
        fn()
        print("ok   %s" % name)
        return True
    except Exception as e:  # noqa: BLE001 — every failure is reported, then the next check runs
        print("FAILED: %s: %s" % (name, e))
        return False


def start_demo(path):
    proc = subprocess.Popen([path, "--threads", "1", "--listen", "127.0.0.1:0"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    for line in proc.stdout:
        m = re.search(r"listening on ([0-9.]+):(\d+)", line)
        if m:
            threading.Thread(target=proc.stdout.read, daemon=True).start()  # drain the rest
            return proc, "%s:%s" % m.groups()
    raise SystemExit("FAILED: the demo did not start")


def main():
    proc, addr = start_demo(sys.argv[1])
    N = 3  # a client per concurrent call: the checks hold at most 3 at once
    hc = [httpclient.InferenceServerClient(addr, concurrency=1) for _ in range(N)]
    gc = [grpcclient.InferenceServerClient(addr) for _ in range(N)]

    def accepted():
        for lvl in (0, 1, 2, 3):  # 0: the default level, as Triton's
            assert hc[0].infer("prio", inputs(httpclient, 0), priority=lvl).get_response()
            assert gc[0].infer("prio", inputs(grpcclient, 0), priority=lvl).get_response()

    def out_of_range():
        expect_error(lambda: hc[0].infer("prio", inputs(httpclient, 0), priority=4),
                     "priority 4 is out of range for model 'prio'")
        expect_error(lambda: gc[0].infer("prio", inputs(grpcclient, 0), priority=9),
                     "priority 9 is out of range")

    def timeout(mod, clients):
        def run():
            blocker = start(clients[1], mod, 1500, 2)
            time.sleep(0.3)  # it runs: prio's one instance is taken
            t0 = time.monotonic()
            expect_error(lambda: clients[0].infer("prio", inputs(mod, 0), priority=2,
                                                  timeout=50000),
                         "Request timeout expired")
            took = time.monotonic() - t0
            blocker()
            assert took < 1.2, "rejected after %.2f s: not while it waited" % took
        return run

    def priority_first(mod, clients):
        def run():
            blocker = start(clients[2], mod, 800, 2)
            time.sleep(0.3)
            low = start(clients[0], mod, 0, 3)
            time.sleep(0.1)  # queued at level 3
            high = order(clients[1].infer("prio", inputs(mod, 0), priority=1))
            low_order = order(low())
            blocker()
            assert high < low_order, "level 1 ran after level 3: %d, %d" % (high, low_order)
        return run

    results = [
        check("priority 0-3 accepted (http, grpc)", accepted),
        check("priority out of range refused (http, grpc)", out_of_range),
        check("timeout rejects a waiting request (http)", timeout(httpclient, hc)),
        check("timeout rejects a waiting request (grpc)", timeout(grpcclient, gc)),
        check("priority 1 runs before priority 3 (http)", priority_first(httpclient, hc)),
        check("priority 1 runs before priority 3 (grpc)", priority_first(grpcclient, gc)),
    ]
    for c in hc + gc:
        c.close()
    proc.terminate()
    if proc.wait(timeout=10) != 0:
        print("FAILED: the demo exited %d" % proc.returncode)
        return 1
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
