#!/usr/bin/env bash
# bench/batching.sh — dynamic batching against the same model unbatched, in one run.
#
# The demo's `cost` and `cost_batched` cost 200 µs per backend call + 1 µs per row (a wait, as
# an accelerator's call is), one instance each; cost_batched batches up to 32 rows, waiting at
# most 500 µs. wrk -c64 sends one row per request to each in turn. Prints a Markdown section
# with requests/s, p50/p99 and the batch sizes the server ran, and appends it to
# bench/RESULTS.md (BENCH_RESULTS=- : stdout only).
#
# Environment: BUILD_DIR=build, BENCH_DURATION=10 (s per model), BENCH_CONNECTIONS=64,
# BENCH_SERVER_CPU=0 BENCH_LOAD_CPU=1 (taskset cores).
set -euo pipefail
BENCH_NAME=batching BENCH_DEFAULT_CONNECTIONS=64
. "$(dirname "$0")/demo_bench.sh"
start_demo

# One model's figures: "rps p50 p99 non2xx".
measure() {
  BENCH_MODEL=$1 timeout $((DUR + 30)) taskset -c "$LCPU" wrk -t1 -c"$CONNS" -d"${DUR}s" \
    --timeout 5s --latency -s "$HERE/batched.lua" "http://127.0.0.1:$port" >"$WORK/$1.txt" 2>&1
  /usr/bin/python3 - "$WORK/$1.txt" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
def ms(tok):
    v, u = float(re.match(r"[\d.]+", tok).group()), re.search(r"[a-z]+$", tok).group()
    return v * {"us": 1e-3, "ms": 1, "s": 1e3}[u]
rps = float(re.search(r"Requests/sec:\s+([\d.]+)", t).group(1))
p50 = ms(re.search(r"^\s+50%\s+(\S+)", t, re.M).group(1))
p99 = ms(re.search(r"^\s+99%\s+(\S+)", t, re.M).group(1))
bad = re.search(r"Non-2xx or 3xx responses: (\d+)", t)
errs = re.search(r"Socket errors: (.*)", t)
print("%.0f %.2f %.2f %s %s" % (rps, p50, p99, bad.group(1) if bad else 0,
                                 "'" + errs.group(1) + "'" if errs else "none"))
PY
}
read -r rps1 p501 p991 bad1 err1 < <(measure cost)
read -r rps2 p502 p992 bad2 err2 < <(measure cost_batched)
# the batch sizes the server ran, from /metrics
sizes=$(curl -s "http://127.0.0.1:$port/metrics" | /usr/bin/python3 -c '
import re, sys
execs = {}
for line in sys.stdin:
    m = re.match(r"isv_batch_executions_total\{model=\"cost_batched\",version=\"1\",batch_size=\"(\d+)\"\} (\d+)", line)
    if m: execs[int(m.group(1))] = int(m.group(2))
n = sum(execs.values()); rows = sum(k * v for k, v in execs.items())
top = sorted(execs.items(), key=lambda kv: -kv[1])[:3]
print("%.1f rows per call on average over %d calls; most frequent: %s" % (rows / n if n else 0, n,
      ", ".join("%d rows x%d" % kv for kv in top)))')
ratio=$(/usr/bin/python3 -c "print('%.1f' % ($rps2 / $rps1 if $rps1 else 0))")

section=$(cat <<MD

## Dynamic batching — $(date -u '+%Y-%m-%d %H:%M') UTC, $(git -C "$ROOT" rev-parse --short HEAD)

\`$CMDLINE\` — $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')),
server on core $SCPU, wrk -t1 -c$CONNS -d${DUR}s on core $LCPU, load average at the start
$(cut -d' ' -f1-3 /proc/loadavg). Model: 200 µs per call + 1 µs per row, one instance, one row per
request.

| model | requests/s | p50 ms | p99 ms | non-2xx | socket errors |
|---|---|---|---|---|---|
| cost (unbatched) | $rps1 | $p501 | $p991 | $bad1 | $err1 |
| cost_batched (max 32, 500 µs) | $rps2 | $p502 | $p992 | $bad2 | $err2 |

Throughput ratio batched / unbatched: **${ratio}x**. Batches run: $sizes.
MD
)
echo "$section"
if [ "$RESULTS_MD" != "-" ]; then echo "$section" >>"$RESULTS_MD"; fi
