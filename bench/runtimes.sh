#!/usr/bin/env bash
# bench/runtimes.sh — two real runtimes through the library against the same runtime called
# directly, in one run (issue 17): inferserve-xgboost (examples/xgboost, the XGBoost C API) and
# inferserve-torch (examples/torch, LibTorch), one row per request.
#
# For each runtime: the model is built (bench/runtimes.py gen: the iris booster and the MLP of
# the integration tests), the server is started on core 0 (--max-batch 64 --batch-delay-us 0
# --instances 1), one REST and one gRPC answer are checked bit for bit against the runtime's
# own, then:
#   native    the runtime called in a loop on the same row from C / C++, the very call the
#             example's backend makes (bench/xgb_direct.c, bench/torch_direct.cpp), on core 0
#             (the server idle) — calls/s, p50/p99
#   direct    /usr/bin/python3 calling the runtime in a loop on the same row, on core 0:
#             xgboost Booster.inplace_predict, torch forward — calls/s, p50/p99
#   V2 REST   wrk -t1 -c{CONCURRENCY} --latency (bench/runtime.lua) on core 1
#   V2 gRPC   h2load -c{CONCURRENCY} -m1, ModelInfer with raw_input_contents, on core 1
# and the server's CPU time per request. Prints a Markdown section (requests/s, p50/p99, the
# direct loop's calls/s ÷ the library's requests/s) and appends it to bench/RESULTS.md.
#
# Environment: BUILD_DIR=build, BENCH_NO_BUILD=1, BENCH_DURATION=5 (s per measurement),
# BENCH_CONCURRENCY="1 16", BENCH_SERVER_CPU=0 BENCH_LOAD_CPU=1, BENCH_RESULTS=bench/RESULTS.md
# ("-": stdout only), BENCH_KEEP=1 (keep the work directory).
# Loopback only. Every process started here is stopped on exit, failure or signal; every step
# runs under `timeout`.
set -euo pipefail
CMDLINE="bench/runtimes.sh"
for v in BUILD_DIR BENCH_NO_BUILD BENCH_DURATION BENCH_CONCURRENCY BENCH_SERVER_CPU \
  BENCH_LOAD_CPU BENCH_RESULTS BENCH_KEEP; do
  if [ -n "${!v:-}" ]; then CMDLINE="$v=${!v} $CMDLINE"; fi
done
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh" # cpu_ns, free_port, wait_port
ROOT=$(cd "$HERE/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
DUR=${BENCH_DURATION:-5}
CONCS=${BENCH_CONCURRENCY:-1 16}
SCPU=${BENCH_SERVER_CPU:-0}
LCPU=${BENCH_LOAD_CPU:-1}
RESULTS_MD=${BENCH_RESULTS:-$HERE/RESULTS.md}
PY=/usr/bin/python3
CLIENT="$HERE/runtimes.py"
START=$(date +%s)

for t in wrk h2load taskset timeout; do
  command -v $t >/dev/null || { echo "$t is missing: bench/install-deps.sh" >&2; exit 1; }
done
XGB=$BUILD_DIR/examples/xgboost/inferserve-xgboost
TORCH=$BUILD_DIR/examples/torch/inferserve-torch
if [ "${BENCH_NO_BUILD:-0}" != 1 ]; then # the native loops are bench programs: -Dbench=true
  { [ -f "$BUILD_DIR/build.ninja" ] || meson setup "$BUILD_DIR"; } >/dev/null
  meson configure "$BUILD_DIR" -Dbench=true >/dev/null
  ninja -C "$BUILD_DIR" examples/xgboost/inferserve-xgboost examples/torch/inferserve-torch \
    bench/xgb_direct bench/torch_direct >/dev/null
fi
for b in "$XGB" "$TORCH" "$BUILD_DIR/bench/xgb_direct" "$BUILD_DIR/bench/torch_direct"; do
  [ -x "$b" ] || { echo "$b is not built (libxgboost-dev / libtorch-dev: scripts/install-deps.sh; -Dbench=true)" >&2; exit 1; }
done

WORK=$(mktemp -d /tmp/isv-runtimes.XXXXXX)
RES=$WORK/results.jsonl
SRV_PID=""
CUR=""
exec 3>&2
log() { printf '[runtimes %3ds] %s\n' $(($(date +%s) - START)) "$*" >&3; }
die() { log "FAILED: $*"; exit 1; }
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  [ -n "$CUR" ] && kill -TERM "$CUR" 2>/dev/null || true
  if [ -n "$SRV_PID" ]; then
    kill -TERM "$SRV_PID" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$SRV_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$SRV_PID" 2>/dev/null || true
  fi
  wait 2>/dev/null || true
  if [ "${BENCH_KEEP:-0}" = 1 ]; then log "work directory kept: $WORK"; else rm -rf "$WORK"; fi
  exit $rc
}
trap cleanup EXIT
trap 'log "interrupted"; exit 130' INT TERM

# bounded SECONDS CMD...: a step under timeout that the trap can stop
bounded() {
  local t=$1 rc=0
  shift
  timeout -k 3 "$t" "$@" &
  CUR=$!
  wait "$CUR" || rc=$?
  CUR=""
  return $rc
}
record() { echo "$1" >>"$RES"; }

COMMIT=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
if ! git -C "$ROOT" diff --quiet HEAD -- lib include examples 2>/dev/null; then COMMIT="$COMMIT (+ uncommitted changes)"; fi
BUILDTYPE=$(meson introspect --buildoptions "$BUILD_DIR" 2>/dev/null |
  $PY -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"]=="buildtype"))' 2>/dev/null || echo "?")
VERSIONS=$($PY -c 'import xgboost, torch; print("xgboost %s, torch %s (Debian; BLAS: %s)." % (xgboost.__version__, torch.__version__, __import__("os").path.realpath("/usr/lib/x86_64-linux-gnu/libblas.so.3")))' 2>/dev/null || echo "")
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)

log "building the models"
bounded 300 $PY "$CLIENT" gen "$WORK" || die "gen"
record "$($PY -c 'import json,sys; a=sys.argv[1:]; print(json.dumps({"kind":"meta","date":a[0],"commit":a[1],
"command":a[2],"nproc":int(a[3]),"cpu":a[4],"buildtype":a[5],"server_cpu":a[6],"load_cpu":a[7],
"duration":a[8],"loadavg":a[9],"versions":a[10]}))' \
  "$(date -u '+%Y-%m-%d %H:%M UTC')" "$COMMIT" "$CMDLINE" "$(nproc)" \
  "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')" "$BUILDTYPE" "$SCPU" "$LCPU" \
  "$DUR" "$LOAD_START" "$VERSIONS")"

for kind in xgboost torch; do
  if [ $kind = xgboost ]; then bin=$XGB model=$WORK/iris.json name=iris
  else bin=$TORCH model=$WORK/mlp.pt name=mlp; fi
  log "$kind: starting the server on core $SCPU"
  taskset -c "$SCPU" "$bin" --model "$model" --port 0 --max-batch 64 --batch-delay-us 0 \
    --instances 1 >"$WORK/$kind.log" 2>&1 &
  SRV_PID=$!
  for _ in $(seq 300); do grep -q ' on [0-9]*$' "$WORK/$kind.log" && break; sleep 0.1; done
  port=$(sed -n 's/.* on \([0-9]*\)$/\1/p' "$WORK/$kind.log")
  [ -n "$port" ] || { cat "$WORK/$kind.log" >&2; die "$kind did not start"; }
  bounded 60 $PY "$CLIENT" check "$port" "$WORK" $kind >/dev/null || die "$kind: wrong answer"

  native=$BUILD_DIR/bench/xgb_direct
  [ $kind = torch ] && native=$BUILD_DIR/bench/torch_direct
  log "$kind: native loop ($(basename "$native")) on core $SCPU"
  bounded $((DUR + 60)) taskset -c "$SCPU" "$native" "$model" "$WORK/$kind.f32" "$DUR" >"$WORK/native-$kind.json" ||
    die "$kind: native loop"
  record "$($PY "$CLIENT" parse json "$WORK/native-$kind.json" kind='"native"' runtime="\"$kind\"")"
  log "$kind: Python loop on core $SCPU"
  bounded $((DUR + 60)) taskset -c "$SCPU" $PY "$CLIENT" direct "$WORK" $kind "$DUR" >"$WORK/direct-$kind.json" ||
    die "$kind: direct loop"
  record "$($PY "$CLIENT" parse json "$WORK/direct-$kind.json" kind='"direct"' runtime="\"$kind\"")"

  for c in $CONCS; do
    log "$kind: wrk -c$c"
    out=$WORK/wrk-$kind-c$c.txt
    c0=$(cpu_ns $SRV_PID)
    export BENCH_BODY=$WORK/$kind.json BENCH_PATH=/v2/models/$name/infer # read by runtime.lua
    bounded $((DUR + 30)) taskset -c "$LCPU" wrk -t1 -c"$c" -d"${DUR}s" --timeout 5s --latency \
      -s "$HERE/runtime.lua" "http://127.0.0.1:$port" >"$out" 2>&1 || log "wrk exited with $?"
    c1=$(cpu_ns $SRV_PID)
    r=$($PY "$CLIENT" parse wrk "$out" kind='"wrk"' runtime="\"$kind\"" conc="$c" cpu_ns="$((c1 - c0))")
    record "$(echo "$r" | $PY -c 'import json,sys; r=json.loads(sys.stdin.read()); n=r.get("requests") or 0
r["cpu_us_per_req"]=round(r["cpu_ns"]/n/1e3,1) if n else None; print(json.dumps(r))')"
  done
  for c in $CONCS; do
    log "$kind: h2load -c$c -m1"
    out=$WORK/h2load-$kind-c$c.txt
    c0=$(cpu_ns $SRV_PID)
    bounded $((DUR + 30)) taskset -c "$LCPU" h2load -c"$c" -m1 -D "$DUR" -d "$WORK/$kind.grpc" \
      -H 'content-type: application/grpc' -H 'te: trailers' --log-file="$out.log" \
      "http://127.0.0.1:$port/inference.GRPCInferenceService/ModelInfer" >"$out" 2>&1 ||
      log "h2load exited with $?"
    c1=$(cpu_ns $SRV_PID)
    r=$($PY "$CLIENT" parse h2load "$out" log="\"$out.log\"" kind='"h2load"' runtime="\"$kind\"" conc="$c" cpu_ns="$((c1 - c0))")
    record "$(echo "$r" | $PY -c 'import json,sys; r=json.loads(sys.stdin.read()); n=r.get("succeeded") or 0
r["cpu_us_per_req"]=round(r["cpu_ns"]/n/1e3,1) if n else None; print(json.dumps(r))')"
    rm -f "$out.log"
  done

  kill -TERM "$SRV_PID"
  rc=0
  wait "$SRV_PID" || rc=$?
  SRV_PID=""
  [ $rc = 0 ] || die "$kind exited with $rc on SIGTERM"
done
record "$($PY -c 'import json,sys; print(json.dumps({"kind":"meta_end","loadavg":sys.argv[1]}))' "$(cut -d' ' -f1-3 /proc/loadavg)")"

$PY "$CLIENT" report "$RES" >"$WORK/report.md"
cat "$WORK/report.md"
if [ "$RESULTS_MD" != - ]; then
  { echo; cat "$WORK/report.md"; } >>"$RESULTS_MD"
  log "appended to $RESULTS_MD"
fi
log "done in $(($(date +%s) - START)) s"
