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
CMDLINE="bench/cache.sh"
for v in BUILD_DIR BENCH_DURATION BENCH_CONNECTIONS BENCH_SERVER_CPU BENCH_LOAD_CPU; do
  if [ -n "${!v:-}" ]; then CMDLINE="$v=${!v} $CMDLINE"; fi
done
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
DUR=${BENCH_DURATION:-10}
CONNS=${BENCH_CONNECTIONS:-32}
SCPU=${BENCH_SERVER_CPU:-0}
LCPU=${BENCH_LOAD_CPU:-1}
RESULTS_MD=${BENCH_RESULTS:-$HERE/RESULTS.md}
command -v wrk >/dev/null || { echo "wrk is missing: bench/install-deps.sh" >&2; exit 1; }
ninja -C "$BUILD_DIR" examples/demo/inferserve-demo >/dev/null

WORK=$(mktemp -d /tmp/isv-cache.XXXXXX)
DEMO_PID=""
cleanup() {
  [ -n "$DEMO_PID" ] && kill -TERM "$DEMO_PID" 2>/dev/null && wait "$DEMO_PID" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT

port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
# one loop pinned to its core; a cache large enough that the misses never evict
taskset -c "$SCPU" "$BUILD_DIR/examples/demo/inferserve-demo" --listen "127.0.0.1:$port" \
  --threads 1 --response-cache-bytes $((256 << 20)) >"$WORK/demo.log" 2>&1 &
DEMO_PID=$!
for _ in $(seq 100); do grep -q listening "$WORK/demo.log" && break; sleep 0.1; done
grep -q listening "$WORK/demo.log" || { cat "$WORK/demo.log"; exit 1; }

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
