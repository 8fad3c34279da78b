#!/usr/bin/env bash
# bench/tfs_grpc.sh — issue 31's row: TF Serving gRPC Predict beside V2 ModelInfer, the same
# `simple` request (INPUT0, INPUT1 INT32 [1,16]; TF: tensor_content, V2: raw_input_contents),
# h2load -c64 -m1, alternated ROUNDS times, demo pinned to core 0 with one loop, h2load to core
# 1; req/s and the demo's CPU per request. Target: TF's req/s >= 90% of V2's. Prints Markdown.
#
#   bench/tfs_grpc.sh      (BUILD_DIR=build, BENCH_DURATION=5, ROUNDS=2)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh" # cpu_ns, free_port, wait_port
ROOT=$(cd "$HERE/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
DUR=${BENCH_DURATION:-5}
ROUNDS=${ROUNDS:-2}
DEMO=$BUILD_DIR/examples/demo/inferserve-demo
for t in h2load taskset; do command -v $t >/dev/null || { echo "$t is missing" >&2; exit 1; }; done
WORK=$(mktemp -d /tmp/isv-tfs-grpc.XXXXXX)
SRV=""
cleanup() { [ -n "$SRV" ] && kill "$SRV" 2>/dev/null; wait 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT INT TERM

/usr/bin/python3 "$HERE/isvbench.py" gen "$WORK" >/dev/null # simple.grpc, tf.grpc

taskset -c 0 "$DEMO" --listen 127.0.0.1:0 --threads 1 >"$WORK/demo.out" 2>"$WORK/demo.err" &
SRV=$!
PORT=""
for _ in $(seq 100); do
  PORT=$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$WORK/demo.out" | head -1)
  [ -n "$PORT" ] && break
  sleep 0.05
done
[ -n "$PORT" ] || { cat "$WORK/demo.err" >&2; exit 1; }
load() { # $1 label $2 body $3 path
  local c0 c1 out rps n failed
  c0=$(cpu_ns "$SRV")
  out=$(taskset -c 1 h2load -c64 -m1 -D "$DUR" --warm-up-time 1 -d "$WORK/$2" \
    -H 'content-type: application/grpc' -H 'te: trailers' "http://127.0.0.1:$PORT$3" 2>&1)
  c1=$(cpu_ns "$SRV")
  rps=$(echo "$out" | sed -n 's/.*finished in [0-9.]*s, \([0-9.]*\) req\/s.*/\1/p')
  n=$(echo "$out" | sed -n 's/^requests: \([0-9]*\) total.*/\1/p')
  failed=$(echo "$out" | sed -n 's/.* \([0-9]*\) failed, \([0-9]*\) errored.*/\1+\2/p')
  echo "| $1 | ${rps%.*} | $(( (c1 - c0) / (n > 0 ? n : 1) / 1000 )) µs | ${failed:-?} |"
}
echo "| call | req/s | demo CPU per request | failed |"
echo "|---|---|---|---|"
for _ in $(seq "$ROUNDS"); do
  load "V2 ModelInfer" simple.grpc /inference.GRPCInferenceService/ModelInfer
  load "TF Serving Predict" tf.grpc /tensorflow.serving.PredictionService/Predict
done
echo
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)  ($(date -u '+%Y-%m-%d %H:%M UTC'), $(git -C "$ROOT" rev-parse --short HEAD))"
