#!/usr/bin/env bash
# bench/loops.sh — one loop against two (the demo's --threads, SO_REUSEPORT), in one run: V2 REST
# `simple` with wrk -t2 -c64 (bench/infer.lua) and V2 gRPC with h2load -c64 -m1, nothing
# pinned — the server's loops and the load generator share the machine's cores, which is the
# point on a 2-core machine: a second loop can only take what the client leaves. Prints a
# Markdown section and appends it to bench/RESULTS.md (BENCH_RESULTS=- : stdout only).
# Environment: BUILD_DIR=build, BENCH_DURATION=5, BENCH_RESULTS.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
DUR=${BENCH_DURATION:-5}
RESULTS_MD=${BENCH_RESULTS:-$HERE/RESULTS.md}
DEMO=$BUILD_DIR/examples/demo/inferserve-demo
for t in wrk h2load timeout; do command -v $t >/dev/null || { echo "$t is missing" >&2; exit 1; }; done
WORK=$(mktemp -d /tmp/isv-loops.XXXXXX)
SRV_PID=""
cleanup() { [ -n "$SRV_PID" ] && kill "$SRV_PID" 2>/dev/null; wait 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT INT TERM
/usr/bin/python3 "$HERE/isvbench.py" gen "$WORK" >/dev/null
rows=()
for n in 1 2; do
  "$DEMO" --listen 127.0.0.1:0 --threads "$n" >"$WORK/demo.out" 2>"$WORK/demo.err" &
  SRV_PID=$!
  for _ in $(seq 100); do grep -q listening "$WORK/demo.out" 2>/dev/null && break; sleep 0.05; done
  PORT=$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$WORK/demo.out" | head -1)
  read -ra f0 <"/proc/$SRV_PID/stat"
  w=$(timeout $((DUR + 30)) wrk -t2 -c64 -d"${DUR}s" -s "$HERE/infer.lua" "http://127.0.0.1:$PORT")
  read -ra f1 <"/proc/$SRV_PID/stat"
  g=$(timeout $((DUR + 30)) h2load -c64 -m1 -D "$DUR" --warm-up-time 1 -d "$WORK/simple.grpc" \
    -H 'content-type: application/grpc' -H 'te: trailers' \
    "http://127.0.0.1:$PORT/inference.GRPCInferenceService/ModelInfer" 2>&1)
  rps=$(echo "$w" | sed -n 's/Requests\/sec:[[:space:]]*\([0-9.]*\)/\1/p')
  reqs=$(echo "$w" | sed -n 's/^[[:space:]]*\([0-9]*\) requests in.*/\1/p')
  grps=$(echo "$g" | sed -n 's/.*finished in [0-9.]*s, \([0-9.]*\) req\/s.*/\1/p')
  cpu=$(( (f1[13] + f1[14] - f0[13] - f0[14]) * 10 ))
  rows+=("| $n | ${rps%.*} | $(( cpu * 1000 / (reqs > 0 ? reqs : 1) )) µs | ${grps%.*} |")
  kill "$SRV_PID"; wait "$SRV_PID" 2>/dev/null || true; SRV_PID=""
done
{
  echo
  echo "## One loop against two (--threads) — $(date -u '+%Y-%m-%d %H:%M') UTC at $(git -C "$ROOT" rev-parse --short HEAD)"
  echo
  echo "\`bench/loops.sh\` (BENCH_DURATION=$DUR), $(nproc) cores shared by the demo and the load generator (nothing"
  echo "pinned); load average at the end $(cut -d' ' -f1 /proc/loadavg)."
  echo
  echo "| loops | V2 REST wrk -t2 -c64 req/s | demo CPU per REST request | V2 gRPC h2load -c64 -m1 req/s |"
  echo "|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
} >"$WORK/section.md"
cat "$WORK/section.md"
[ "$RESULTS_MD" = - ] || cat "$WORK/section.md" >>"$RESULTS_MD"
