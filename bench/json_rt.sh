#!/usr/bin/env bash
# bench/json_rt.sh — issue 28's JSON round trip: a 1M-element FP32 V2 JSON request (~10 MB,
# "%.7g" of uniform [0,1)) through the demo's identity_fp32 over loopback — decoded, copied by
# the model, encoded back, ~10 MB each way — against yajl merely DECODING the same body
# (bench/json/yajl_decode.c: number callback + strtof, bench_json's yajl row). The target is a
# round trip at least 1.5x as fast as that decode alone (ratio = yajl median / round trip
# median). In one run, alternating: yajl, round trips, yajl, round trips.
#
#   bench/json_rt.sh            (~30 s)
#
# Environment: BUILD_DIR=build (the demo), BENCH_BUILD=build-bench (yajl_decode: meson
# -Dbench=true, configured here if absent), RT_ITERS=9 per half, BENCH_SERVER_CPU=0,
# BENCH_LOAD_CPU=1. The demo is pinned to one core with one loop, curl and yajl to the other.
# The first answer is checked (every value the same FP32 as sent). Prints Markdown only.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh" # cpu_ns, free_port, wait_port
ROOT=$(cd "$HERE/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
BENCH_BUILD=${BENCH_BUILD:-$ROOT/build-bench}
ITERS=${RT_ITERS:-9}
SCPU=${BENCH_SERVER_CPU:-0}
LCPU=${BENCH_LOAD_CPU:-1}
PY=/usr/bin/python3
DEMO=$BUILD_DIR/examples/demo/inferserve-demo
N=1048576
for t in curl taskset timeout; do command -v $t >/dev/null || { echo "$t is missing" >&2; exit 1; }; done
[ -x "$DEMO" ] || { echo "$DEMO is not built" >&2; exit 1; }
if [ ! -x "$BENCH_BUILD/bench/yajl_decode" ]; then
  { [ -f "$BENCH_BUILD/build.ninja" ] || meson setup "$BENCH_BUILD" "$ROOT" -Dbench=true; } >/dev/null
  meson configure "$BENCH_BUILD" -Dbench=true >/dev/null
  ninja -C "$BENCH_BUILD" bench/yajl_decode >/dev/null ||
    { echo "yajl_decode not built (libyajl-dev: bench/install-deps.sh)" >&2; exit 1; }
fi
WORK=$(mktemp -d /tmp/isv-json-rt.XXXXXX)
SRV_PID=""
cleanup() { [ -n "$SRV_PID" ] && kill "$SRV_PID" 2>/dev/null; wait 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT INT TERM

"$PY" - "$WORK/body.json" "$N" <<'EOF'
import random, sys
random.seed(20261126)
n = int(sys.argv[2])
vals = ",".join("%.7g" % random.random() for _ in range(n))
open(sys.argv[1], "w").write('{"inputs":[{"name":"INPUT0","datatype":"FP32","shape":[1,%d],'
                             '"data":[%s]}]}' % (n, vals))
EOF
SIZE=$(stat -c %s "$WORK/body.json")

taskset -c "$SCPU" "$DEMO" --listen 127.0.0.1:0 --threads 1 >"$WORK/demo.out" 2>"$WORK/demo.err" &
SRV_PID=$!
PORT=""
for _ in $(seq 100); do
  PORT=$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$WORK/demo.out" | head -1)
  [ -n "$PORT" ] && break
  sleep 0.05
done
[ -n "$PORT" ] || { cat "$WORK/demo.err" >&2; echo "the demo did not start" >&2; exit 1; }
URL=http://127.0.0.1:$PORT/v2/models/identity_fp32/infer

rt() { # one round trip: prints its seconds
  taskset -c "$LCPU" curl -s -o "${1:-/dev/null}" --max-time 30 --data-binary @"$WORK/body.json" \
    -H "Content-Type: application/json" -w '%{http_code} %{time_total}\n' "$URL" |
    awk '$1 != 200 {exit 1} {print $2}'
}

# warm-up, and the answer checked
rt "$WORK/answer.json" >/dev/null || { echo "the round trip failed" >&2; exit 1; }
"$PY" - "$WORK/body.json" "$WORK/answer.json" <<'EOF' || { echo "the answer is not the input" >&2; exit 1; }
import json, struct, sys
f32 = lambda x: struct.unpack("<f", struct.pack("<f", x))[0]
a = json.load(open(sys.argv[1]))["inputs"][0]["data"]
b = json.load(open(sys.argv[2]))["outputs"][0]["data"]
sys.exit(0 if len(a) == len(b) and all(f32(x) == f32(y) for x, y in zip(a, b)) else 1)
EOF

: >"$WORK/yajl.txt"
: >"$WORK/rt.txt"
CPU=0
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
for half in 1 2; do
  taskset -c "$LCPU" "$BENCH_BUILD/bench/yajl_decode" "$WORK/body.json" "$N" "$ITERS" >>"$WORK/yajl.txt"
  c0=$(cpu_ns "$SRV_PID")
  for _ in $(seq "$ITERS"); do rt >>"$WORK/rt.txt"; done
  CPU=$((CPU + $(cpu_ns "$SRV_PID") - c0))
done
LOAD1=$(cut -d' ' -f1-3 /proc/loadavg)

"$PY" - "$WORK" "$SIZE" "$ITERS" "$CPU" <<EOF
import statistics, sys
work, size, iters, cpu = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
y = [float(l.split()[1]) for l in open(work + "/yajl.txt")]          # the two halves' medians
ymin = min(float(l.split()[2]) for l in open(work + "/yajl.txt"))
r = sorted(float(l) * 1000 for l in open(work + "/rt.txt"))
rm = statistics.median(r)
ym = statistics.median(y)
print("## JSON round trip against yajl's decode — $(date -u '+%Y-%m-%d %H:%M UTC') at $(git -C "$ROOT" rev-parse --short HEAD)")
print()
print("\`bench/json_rt.sh\` (RT_ITERS=%d): a %.1f MB V2 JSON body of 1,048,576 FP32 through "
      "identity_fp32 (demo on core $SCPU, one loop; curl and yajl on core $LCPU); load average "
      "$LOAD0 -> $LOAD1." % (iters, size / 1e6))
print()
print("| | median ms | best ms |")
print("|---|---:|---:|")
print("| yajl decode only (two halves' medians: %s) | %.1f | %.1f |" % (" / ".join("%.1f" % v for v in y), ym, ymin))
print("| round trip (decode, model, encode, loopback) | %.1f | %.1f |" % (rm, r[0]))
print("| demo CPU per round trip | %.1f | |" % (cpu / 1e6 / (2 * iters)))
print()
print("**ratio %.2fx** (yajl median / round trip median; target >= 1.5x), best-to-best %.2fx" % (ym / rm, ymin / r[0]))
EOF
