#!/usr/bin/env bash
# bench/cache.sh — the response cache: a hit, a miss and no cache at all, on one ~200 µs model,
# in one run.
#
# The demo's `cost` (200 µs per call + 1 µs per row, waited as an accelerator's call is; one
# instance) and `cost_cached` (the same with the response cache on). wrk sends one row of FP32
# [1,4] per request over REST: to cost (no cache), to cost_cached with the same row each time
# (hits after the first) and with a new row each time (misses: lookup, run, insert). Once with
# one connection (latency) and once with BENCH_CONNECTIONS (throughput). Prints a Markdown
# section and appends it to bench/RESULTS.md (BENCH_RESULTS=- : stdout only), with the cache's
# own lookup time per hit from the statistics.
#
# Environment: BUILD_DIR=build, BENCH_DURATION=10 (s per row), BENCH_CONNECTIONS=32,
# BENCH_SERVER_CPU=0 BENCH_LOAD_CPU=1 (taskset cores).
set -euo pipefail
BENCH_NAME=cache BENCH_DEFAULT_CONNECTIONS=32
. "$(dirname "$0")/demo_bench.sh"
start_demo --response-cache-bytes $((256 << 20)) # misses never evict

# One row's figures: "rps p50 p99 errors" (errors: non-2xx + socket errors).
measure() { # name model unique connections
  BENCH_MODEL=$2 BENCH_UNIQUE=$3 timeout $((DUR + 30)) taskset -c "$LCPU" wrk -t1 -c"$4" \
    -d"${DUR}s" --timeout 5s --latency -s "$HERE/cache.lua" "http://127.0.0.1:$port" \
    >"$WORK/$1.txt" 2>&1
  /usr/bin/python3 "$HERE/isvbench.py" parse wrk "$WORK/$1.txt" | /usr/bin/python3 -c '
import json, sys
r = json.loads(sys.stdin.read())
print("%.0f %.3f %.3f %d" % (r["rps"] or 0, r["p50_ms"] or 0, r["p99_ms"] or 0,
                             r["non2xx"] + r["socket_errors"]))'
}
row() { # label name model unique connections
  read -r rps p50 p99 errs < <(measure "$2" "$3" "$4" "$5")
  echo "| $1 | $5 | $rps | $p50 | $p99 | $errs |"
}
rows=$(
  for c in 1 "$CONNS"; do
    row "no cache (cost)" "none$c" cost 0 "$c"
    row "cache hit (cost_cached, same row)" "hit$c" cost_cached 0 "$c"
    row "cache miss (cost_cached, new rows)" "miss$c" cost_cached 1 "$c"
  done
)
# the cache's own time per hit and per miss, from Triton's statistics
lookup=$(curl -s "http://127.0.0.1:$port/v2/models/cost_cached/stats" | /usr/bin/python3 -c '
import json, sys
s = json.load(sys.stdin)["model_stats"][0]["inference_stats"]
h, m, i = s["cache_hit"], s["cache_miss"], s["compute_infer"]
print("%.2f µs per hit (%d hits), %.2f µs per miss (lookup + insertion, %d misses); the model: "
      "%.0f µs per call" % (h["ns"] / max(h["count"], 1) / 1e3, h["count"],
                            m["ns"] / max(m["count"], 1) / 1e3, m["count"],
                            i["ns"] / max(i["count"], 1) / 1e3))')

section=$(cat <<MD

## Response cache — $(date -u '+%Y-%m-%d %H:%M') UTC, $(git -C "$ROOT" rev-parse --short HEAD)

\`$CMDLINE\` — $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')),
server (one loop) on core $SCPU, wrk -t1 -d${DUR}s on core $LCPU, load average at the start
$(cut -d' ' -f1-3 /proc/loadavg). Model: 200 µs per call + 1 µs per row, one instance; one row of
FP32 [1,4] per request over REST (JSON).

| requests | connections | requests/s | p50 ms | p99 ms | errors |
|---|---|---|---|---|---|
$rows

Inside the server (statistics): $lookup.
MD
)
echo "$section"
if [ "$RESULTS_MD" != "-" ]; then echo "$section" >>"$RESULTS_MD"; fi
