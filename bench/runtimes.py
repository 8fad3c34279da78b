#!/usr/bin/python3
"""Python side of bench/runtimes.sh: two real runtimes through the library against the same
runtime called directly, in one run (see bench/README.md, "Real runtimes").

Subcommands (loopback only, every one bounded):

  gen DIR                 trains the XGBoost iris model (python3-xgboost on scikit-learn's iris,
                          as tests/integration/test_xgboost.py) -> DIR/iris.json, scripts the
                          MLP of tests/integration/test_torch.py (16 -> 64 -> 64 -> 10, seed 0)
                          -> DIR/mlp.pt, and writes each one's single-row request:
                          DIR/KIND.json (V2 REST body) and DIR/KIND.grpc (a length-prefixed
                          ModelInferRequest with raw_input_contents, for h2load -d) and
                          DIR/KIND.f32 (the row's float32s, for bench/xgb_direct.c and
                          bench/torch_direct.cpp); KIND is xgboost or torch
  check PORT DIR KIND     one REST and one gRPC request of that row: the answer must equal the
                          runtime's own, bit for bit (so that what is measured is right)
  direct DIR KIND SECS    the runtime called in a loop on the same row, one thread, after a
                          warm-up: xgboost Booster.inplace_predict / torch forward under
                          inference_mode; prints JSON: calls/s, p50/p99 of a call
  parse wrk|h2load FILE [k=v]...   as bench/isvbench.py parse
  report RESULTS.jsonl    the Markdown section for bench/RESULTS.md
"""
import json
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import isvbench  # noqa: E402  (payload helpers and the wrk / h2load parsers)

TIMEOUT = 30.0
MODEL = {"xgboost": "iris", "torch": "mlp"}
INPUT = {"xgboost": "features", "torch": "INPUT__0"}
OUTPUT = {"xgboost": "probabilities", "torch": "OUTPUT__0"}


def die(msg):
    print("runtimes: " + msg, file=sys.stderr)
    sys.exit(1)


def row(d, kind):
    with open(os.path.join(d, "rows.json")) as f:
        return np.array(json.load(f)[kind], dtype=np.float32)


def cmd_gen(d):
    import torch
    import xgboost as xgb
    from sklearn import datasets

    X, y = datasets.load_iris(return_X_y=True)
    clf = xgb.XGBClassifier(n_estimators=20, max_depth=3, learning_rate=0.3,
                            objective="multi:softprob", random_state=0)
    clf.fit(X, y)
    clf.save_model(os.path.join(d, "iris.json"))

    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.ReLU(), torch.nn.Linear(64, 64),
                              torch.nn.ReLU(), torch.nn.Linear(64, 10))

    class MLP(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.net = net

        def forward(self, x):
            return torch.softmax(self.net(x), dim=1)

    torch.jit.script(MLP().eval()).save(os.path.join(d, "mlp.pt"))

    rows = {"xgboost": X[100].astype(np.float32),
            "torch": np.random.default_rng(0).standard_normal(16).astype(np.float32)}
    with open(os.path.join(d, "rows.json"), "w") as f:
        json.dump({k: [float(v) for v in r] for k, r in rows.items()}, f)
    pb = isvbench.load_pb(d)
    for kind, r in rows.items():
        body = {"inputs": [{"name": INPUT[kind], "datatype": "FP32", "shape": [1, len(r)],
                            "data": [float(v) for v in r]}]}
        with open(os.path.join(d, kind + ".json"), "w") as f:
            f.write(json.dumps(body, separators=(",", ":")))
        req = pb.ModelInferRequest(model_name=MODEL[kind])
        t = req.inputs.add()
        t.name, t.datatype = INPUT[kind], "FP32"
        t.shape.extend([1, len(r)])
        req.raw_input_contents.append(r.astype("<f4").tobytes())
        with open(os.path.join(d, kind + ".grpc"), "wb") as f:
            f.write(isvbench.grpc_frame(req.SerializeToString()))
        r.astype("<f4").tofile(os.path.join(d, kind + ".f32"))  # for xgb_direct / torch_direct


class Direct:
    """The runtime, called as a Python program would: one thread, the same row every time."""

    def __init__(self, d, kind):
        self.kind = kind
        r = row(d, kind)[None, :]
        if kind == "xgboost":
            import xgboost as xgb
            self.booster = xgb.Booster(model_file=os.path.join(d, "iris.json"))
            self.booster.set_param({"nthread": 1})
            self.x = r
            self.call = lambda: self.booster.inplace_predict(self.x)
        else:
            import torch
            torch.set_num_threads(1)
            self.torch = torch
            self.module = torch.jit.load(os.path.join(d, "mlp.pt"))
            self.module.eval()
            self.x = torch.from_numpy(r)

            def call():
                with torch.inference_mode():
                    return self.module(self.x)
            self.call = call

    def answer(self):
        y = self.call()
        return np.asarray(y if self.kind == "xgboost" else y.numpy(), dtype=np.float32)


def cmd_check(port, d, kind):
    import grpc
    import requests
    want = Direct(d, kind).answer().ravel()
    with open(os.path.join(d, kind + ".json")) as f:
        body = f.read()
    r = requests.post("http://127.0.0.1:%d/v2/models/%s/infer" % (port, MODEL[kind]), data=body,
                      timeout=TIMEOUT)
    if r.status_code != 200:
        die("REST %d: %s" % (r.status_code, r.text))
    got = np.array(r.json()["outputs"][0]["data"], dtype=np.float32)
    if not np.array_equal(got, want):
        die("REST answer %s != %s" % (got, want))
    pb = isvbench.load_pb(d)
    with open(os.path.join(d, kind + ".grpc"), "rb") as f:
        msg = f.read()[5:]
    with grpc.insecure_channel("127.0.0.1:%d" % port) as ch:
        call = ch.unary_unary("/inference.GRPCInferenceService/ModelInfer",
                              request_serializer=lambda b: b,
                              response_deserializer=pb.ModelInferResponse.FromString)
        resp = call(msg, timeout=TIMEOUT)
    got = np.frombuffer(resp.raw_output_contents[0], dtype="<f4")
    if not np.array_equal(got, want):
        die("gRPC answer %s != %s" % (got, want))
    print(json.dumps({"kind": "check", "runtime": kind, "outputs": len(want)}))


def cmd_direct(d, kind, secs):
    rt = Direct(d, kind)
    t_end = time.perf_counter() + 1.0  # warm-up: caches, torch's profiling executor
    while time.perf_counter() < t_end:
        rt.call()
    lat = []
    clock = time.perf_counter_ns
    start = clock()
    stop = start + int(secs * 1e9)
    call = rt.call
    while True:
        t0 = clock()
        call()
        t1 = clock()
        lat.append(t1 - t0)
        if t1 >= stop:
            break
    elapsed = (clock() - start) / 1e9
    lat.sort()
    q = lambda p: lat[min(len(lat) - 1, int(len(lat) * p / 100))] / 1e6  # noqa: E731
    print(json.dumps({"calls": len(lat), "seconds": round(elapsed, 3),
                      "rps": round(len(lat) / elapsed, 1), "p50_ms": q(50), "p99_ms": q(99),
                      "mean_ms": sum(lat) / len(lat) / 1e6}))


# ---- the report --------------------------------------------------------------------------------

def f(x, fmt="%.0f"):
    return "—" if x is None else fmt % x


def cmd_report(path):
    rows = [json.loads(ln) for ln in open(path) if ln.strip()]
    meta = next(r for r in rows if r.get("kind") == "meta")
    end = next((r for r in rows if r.get("kind") == "meta_end"), {})
    out = []
    w = out.append
    w("## Real runtimes through the library — %s, %s" % (meta["date"], meta["commit"]))
    w("")
    w("`%s` — %d CPUs (%s), %s build, servers and the direct loops on core %s, wrk / h2load on "
      "core %s, %s s per measurement; load average %s at the start, %s at the end. %s"
      % (meta["command"], meta["nproc"], meta["cpu"], meta["buildtype"], meta["server_cpu"],
         meta["load_cpu"], meta["duration"], meta["loadavg"], end.get("loadavg", "?"),
         meta.get("versions", "")))
    w("")
    w("Each server: `--max-batch 64 --batch-delay-us 0 --instances 1` (the batcher gathers what "
      "is waiting when the instance frees, and never waits for more); one row per request "
      "(xgboost: iris, 4 features -> 3 probabilities, 20 trees of depth 3; torch: the MLP "
      "16 -> 64 -> 64 -> 10 + softmax of test_torch.py, one intra-op thread). The direct loop "
      "is `/usr/bin/python3` calling the runtime on the same row (xgboost "
      "`Booster.inplace_predict` with nthread 1, torch `module(x)` under `inference_mode` with "
      "1 thread), one call at a time, each call timed. Every answer was first checked bit for "
      "bit against the runtime's own (REST and gRPC).")
    w("")
    native_name = {"xgboost": "direct, C API loop (bench/xgb_direct.c)",
                   "torch": "direct, C++ forward loop (bench/torch_direct.cpp)"}
    for kind in ("xgboost", "torch"):
        d = next((r for r in rows if r.get("kind") == "direct" and r["runtime"] == kind), None)
        nat = next((r for r in rows if r.get("kind") == "native" and r["runtime"] == kind), None)
        if d is None and nat is None:
            continue
        w("### %s" % kind)
        w("")
        w("| path | concurrency | requests/s | p50 ms | p99 ms | server CPU (µs/req) | "
          "errors | native ÷ this | Python ÷ this |")
        w("|---|---:|---:|---:|---:|---:|---:|---:|---:|")

        def ratios(rps):
            return tuple(f(ref["rps"] / rps, "%.2f") if ref and rps else "—" for ref in (nat, d))
        for ref, label in ((nat, native_name[kind]), (d, "direct, Python loop (runtimes.py)")):
            if ref:
                w("| %s | 1 | %s | %s | %s | — | — | %s | %s |"
                  % ((label, f(ref["rps"]), f(ref["p50_ms"], "%.4f"), f(ref["p99_ms"], "%.4f"))
                     + ratios(ref["rps"])))
        for r in rows:
            if r.get("runtime") != kind or r.get("kind") not in ("wrk", "h2load"):
                continue
            path = "V2 REST (wrk -t1)" if r["kind"] == "wrk" else "V2 gRPC (h2load -m1)"
            errs = (r.get("non2xx") or 0) + (r.get("socket_errors") or 0) + (r.get("failed") or 0)
            w("| %s | %d | %s | %s | %s | %s | %d | %s | %s |"
              % ((path, r["conc"], f(r.get("rps")), f(r.get("p50_ms"), "%.3f"),
                  f(r.get("p99_ms"), "%.3f"), f(r.get("cpu_us_per_req"), "%.1f"), errs)
                 + ratios(r.get("rps"))))
        if nat:
            one = [r for r in rows if r.get("runtime") == kind and r.get("conc") == 1
                   and r.get("cpu_us_per_req")]
            if one:  # at concurrency 1 every batch is one row: one native call per request
                call = nat.get("mean_ms", nat["p50_ms"]) * 1e3
                w("")
                w("At concurrency 1 (one row per forward / predict) the server spends %s µs of "
                  "CPU per request (every thread) against %.1f µs for the same call in the native "
                  "loop (mean): the library's own cost is about %s µs per request."
                  % (" / ".join("%.1f (%s)" % (r["cpu_us_per_req"], "REST" if r["kind"] == "wrk"
                                                else "gRPC") for r in one), call,
                     " / ".join("%.1f" % (r["cpu_us_per_req"] - call) for r in one)))
        w("")
    w("Overhead ratio = a direct loop's calls/s ÷ this row's requests/s: above 1, a request "
      "through the library costs more than a direct call (by that factor); below 1, the "
      "library serves more rows per second than that loop calls the runtime (batching; no "
      "interpreter per call). The native loops make the very call the example's backend makes "
      "(XGBoosterPredictFromDense on the row's memory; forward on a from_blob tensor), so "
      "native ÷ library is the library's overhead; Python ÷ library is what serving costs "
      "against calling the runtime from a Python program. Server CPU: the server process's CPU "
      "time (every thread) per request over the measurement; load generators on the other "
      "core.")
    print("\n".join(out))


def main(a):
    if len(a) >= 2 and a[0] == "gen":
        cmd_gen(a[1])
    elif len(a) == 4 and a[0] == "check":
        cmd_check(int(a[1]), a[2], a[3])
    elif len(a) == 4 and a[0] == "direct":
        cmd_direct(a[1], a[2], float(a[3]))
    elif len(a) >= 3 and a[0] == "parse":
        isvbench.cmd_parse(a[1], a[2], a[3:])
    elif len(a) == 2 and a[0] == "report":
        cmd_report(a[1])
    else:
        die("usage: see the top of bench/runtimes.py")


if __name__ == "__main__":
    main(sys.argv[1:])
