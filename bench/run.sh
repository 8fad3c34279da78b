#!/usr/bin/env bash
# bench/run.sh — the end-to-end benchmarks of libinferserve, in one command (see bench/README.md).
#
#   bench/run.sh            build, measure everything, append a section to bench/RESULTS.md
#
# Environment (all optional):
#   BUILD_DIR=build          where inferserve-demo is built (ninja -C $BUILD_DIR first)
#   BENCH_NO_BUILD=1         do not run ninja (use the binary as it is)
#   BENCH_DURATION=5         seconds per wrk / h2load run
#   BENCH_CONCURRENCY="1 16 64"
#   BENCH_SERVER_CPU=0 BENCH_LOAD_CPU=1   taskset cores for the servers / the load generators
#   BENCH_IDLE_CONNS=1000    idle connections for the memory measurement
#   BENCH_LARGE_ITERS=5      16 MiB round trips per path (after one warm-up)
#   BENCH_PROFILE=auto       auto: profile the targets that are missed; 1: always; 0: never
#   BENCH_RESULTS=bench/RESULTS.md   where the section is appended ("-": stdout only)
#   BENCH_KEEP=1             keep the work directory (raw wrk/h2load/perf output)
#
# Loopback only (127.0.0.1). Every process started here is stopped on exit, failure or signal
# (trap), every step runs under `timeout`, and a watchdog ends the whole run after 420 s.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh" # cpu_ns, free_port, wait_port
. "$HERE/nginx_ref.sh"
ROOT=$(cd "$HERE/.." && pwd)
CMDLINE="bench/run.sh${*:+ $*}"
for v in BUILD_DIR BENCH_NO_BUILD BENCH_DURATION BENCH_CONCURRENCY BENCH_SERVER_CPU BENCH_LOAD_CPU \
  BENCH_IDLE_CONNS BENCH_LARGE_ITERS BENCH_PROFILE BENCH_RESULTS BENCH_KEEP; do
  if [ -n "${!v:-}" ]; then CMDLINE="$v=${!v} $CMDLINE"; fi
done
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
DEMO=$BUILD_DIR/examples/demo/inferserve-demo
DUR=${BENCH_DURATION:-5}
CONCS=${BENCH_CONCURRENCY:-1 16 64}
SCPU=${BENCH_SERVER_CPU:-0}
LCPU=${BENCH_LOAD_CPU:-1}
IDLE_CONNS=${BENCH_IDLE_CONNS:-1000}
LARGE_ITERS=${BENCH_LARGE_ITERS:-5}
PROFILE=${BENCH_PROFILE:-auto}
RESULTS_MD=${BENCH_RESULTS:-$HERE/RESULTS.md}
PY=/usr/bin/python3
PATH=$PATH:/usr/sbin:/sbin # nginx
CLIENT="$HERE/isvbench.py"
START=$(date +%s)

WORK=$(mktemp -d /tmp/isv-bench.XXXXXX)
RES=$WORK/results.jsonl
PIDS=()   # long-lived processes we started (servers, background load, watchdog)
NGINX_WORKERS=()
WATCHDOG=""
CUR=""    # the bounded foreground step running now

exec 3>&2 # the log goes here even from a trap that fires inside a redirected step
log() { printf '[bench %3ds] %s\n' $(($(date +%s) - START)) "$*" >&3; }
die() { log "FAILED: $*"; exit 1; }

cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  [ -n "$CUR" ] && kill -TERM "$CUR" 2>/dev/null || true
  local p
  # the watchdog's sleep first (a child of the watchdog subshell, found by its parent's pid)
  [ -n "$WATCHDOG" ] && for p in $(pgrep -P "$WATCHDOG" 2>/dev/null); do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for _ in $(seq 50); do
    local alive=0
    for p in "${PIDS[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
    [ $alive = 0 ] && break
    sleep 0.1
  done
  for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  for p in "${NGINX_WORKERS[@]:-}"; do # orphaned workers, if the master was killed
    [ -n "$p" ] && grep -q '^nginx: worker' "/proc/$p/cmdline" 2>/dev/null && kill -KILL "$p" 2>/dev/null || true
  done
  wait 2>/dev/null || true
  if [ "${BENCH_KEEP:-0}" = 1 ]; then log "work directory kept: $WORK"; else rm -rf "$WORK"; fi
  exit $rc
}
trap cleanup EXIT
trap 'log "interrupted"; exit 130' INT TERM

# bounded SECONDS CMD...: run a step under timeout; the trap can stop it.
bounded() {
  local t=$1 rc=0
  shift
  timeout -k 3 "$t" "$@" &
  CUR=$!
  wait "$CUR" || rc=$?
  CUR=""
  return $rc
}

forget_pid() {
  local p keep=()
  for p in "${PIDS[@]}"; do [ "$p" != "$1" ] && keep+=("$p"); done
  PIDS=("${keep[@]}")
}

# stop_pid PID: TERM, wait up to 10 s, KILL.
stop_pid() {
  kill -TERM "$1" 2>/dev/null || true
  for _ in $(seq 100); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
  forget_pid "$1"
}

load1() { cut -d' ' -f1 /proc/loadavg; }
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }

record() { echo "$1" >>"$RES"; }


# ---- preflight ------------------------------------------------------------------------------

for t in wrk h2load nginx taskset timeout perf cc; do
  command -v "$t" >/dev/null || {
    [ "$t" = perf ] && continue
    die "$t not found: run bench/install-deps.sh"
  }
done
$PY -c 'import grpc, google.protobuf' 2>/dev/null || die "python3-grpcio/python3-protobuf missing: run bench/install-deps.sh"
command -v protoc >/dev/null || die "protoc missing: run bench/install-deps.sh"
if [ "$(nproc)" -lt 2 ]; then
  log "only $(nproc) CPU: server and load generator share core 0"
  SCPU=0 LCPU=0
fi
# 1000 idle connections + wrk/h2load need descriptors
ulimit -n 65536 2>/dev/null || ulimit -n 8192 2>/dev/null || true

( sleep 420; log "watchdog: the run exceeded 420 s"; kill -TERM $$ ) 2>/dev/null &
WATCHDOG=$!
PIDS+=($WATCHDOG)

if [ "${BENCH_NO_BUILD:-0}" != 1 ]; then
  log "building ($BUILD_DIR, with -Dbench=true)"
  { [ -f "$BUILD_DIR/build.ninja" ] || meson setup "$BUILD_DIR"; } >"$WORK/build.log" 2>&1 &&
    meson configure "$BUILD_DIR" -Dbench=true >>"$WORK/build.log" 2>&1 &&
    bounded 600 ninja -C "$BUILD_DIR" >>"$WORK/build.log" 2>&1 ||
    { tail -20 "$WORK/build.log" >&2; die "build failed"; }
fi
[ -x "$DEMO" ] || die "$DEMO not built (meson setup $BUILD_DIR && ninja -C $BUILD_DIR)"
for b in memcpy_bw grpc_rt; do
  [ -x "$BUILD_DIR/bench/$b" ] || die "$BUILD_DIR/bench/$b not built (meson configure $BUILD_DIR -Dbench=true)"
  cp "$BUILD_DIR/bench/$b" "$WORK/$b"
done

# perf usable? (cpu-clock is a software event: works without hardware counters, e.g. in VMs)
PERF=0
if command -v perf >/dev/null && perf stat -e cpu-clock true >/dev/null 2>&1; then PERF=1; fi

# ---- servers --------------------------------------------------------------------------------

# start_demo NAME: DEMO_PID, DEMO_PORT
start_demo() {
  local out=$WORK/$1.log
  # one loop, pinned to its core (the demo's default is a loop per core: bench/loops.sh);
  # --shared-memory for the shm rows (BENCH_SHM_FLAGS=--shared-memory-in-place: zero copy)
  taskset -c "$SCPU" "$DEMO" --listen 127.0.0.1:0 --threads 1 --max-connections 20000 \
    --idle-timeout-ms 300000 ${BENCH_SHM_FLAGS:---shared-memory} >"$out" 2>&1 &
  DEMO_PID=$!
  PIDS+=($DEMO_PID)
  DEMO_PORT=""
  for _ in $(seq 100); do
    DEMO_PORT=$(sed -n 's/^inferserve-demo listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$out" | head -1)
    [ -n "$DEMO_PORT" ] && break
    kill -0 "$DEMO_PID" 2>/dev/null || { cat "$out" >&2; die "inferserve-demo exited"; }
    sleep 0.1
  done
  [ -n "$DEMO_PORT" ] || die "inferserve-demo did not report its port"
}

COMMIT=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git -C "$ROOT" status --porcelain -- lib include examples 2>/dev/null)" ]; then
  COMMIT="$COMMIT (+ uncommitted changes in lib/include/examples)"
fi
BUILDTYPE=$($PY -c 'import json,sys
try:
  o={x["name"]:x["value"] for x in json.load(open(sys.argv[1]))}; print(o.get("buildtype","?"))
except Exception: print("?")' "$BUILD_DIR/meson-info/intro-buildoptions.json")
CPU_MODEL=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')
TOOLS="$(wrk -v 2>&1 | head -1 | cut -d' ' -f1-2), h2load $(h2load --version 2>&1 | awk '{print $NF}'), $(nginx -v 2>&1 | sed 's/.*: //'), python3 grpcio $($PY -c 'import grpc; print(grpc.__version__)')"
OS=$(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME" || echo "")
LOAD_START=$(loadavg)
if awk -v l="$(load1)" -v n="$(nproc)" 'BEGIN{exit !(l > 0.5 * n)}'; then
  BUSY="the machine was busy at the start (load average $LOAD_START on $(nproc) CPUs): other processes share the cores, so the absolute figures are low and noisy; the ratios against nginx (same run, same cores) are the meaningful part."
  log "WARNING: load average $LOAD_START — figures will be noisy"
else
  BUSY=""
fi

log "starting inferserve-demo on core $SCPU"
start_demo demo
MAIN_PID=$DEMO_PID MAIN_PORT=$DEMO_PORT
log "demo pid $MAIN_PID port $MAIN_PORT"

bounded 60 $PY "$CLIENT" gen "$WORK" >"$WORK/gen.json" || die "could not generate the gRPC payloads"
bounded 30 $PY "$CLIENT" check "$MAIN_PORT" "$WORK" >"$WORK/check.json" || die "the demo's simple answers are wrong"
REST_BYTES=$($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["rest_response_bytes"])' "$WORK/check.json")
GRPC_BYTES=$($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["grpc_response_body_bytes"])' "$WORK/check.json")

# nginx reference: one worker, return 200 with same-sized bodies; HTTP/1.1 and h2c ports.
NG=$WORK/nginx
mkdir -p "$NG/logs"
NG_PORT=$(free_port)
NG_H2_PORT=$(free_port)
while [ "$NG_H2_PORT" = "$NG_PORT" ]; do NG_H2_PORT=$(free_port); done
REST_BODY=$(nginx_ref_json_body "$REST_BYTES")
GRPC_BODY=$($PY -c 'import sys; print("g" * int(sys.argv[1]))' "$GRPC_BYTES")
nginx_ref_conf "$NG" "$NG_PORT" "$REST_BODY" "$NG_H2_PORT" "$GRPC_BODY"
log "starting nginx on core $SCPU (ports $NG_PORT, h2c $NG_H2_PORT)"
taskset -c "$SCPU" nginx -p "$NG" -e "$NG/logs/error.log" -c "$NG/nginx.conf" >"$NG/stdout.log" 2>&1 &
NG_PID=$!
PIDS+=($NG_PID)
wait_port "$NG_PORT" && wait_port "$NG_H2_PORT" || { cat "$NG/stdout.log" "$NG/logs/error.log" >&2; die "nginx did not start"; }
NGINX_WORKERS=($(pgrep -P "$NG_PID" || true))
ng_size=$(curl -s -m 5 -X POST -d x "http://127.0.0.1:$NG_PORT/v2/models/simple/infer" | wc -c)
[ "$ng_size" = "$REST_BYTES" ] || die "nginx body is $ng_size bytes, want $REST_BYTES"

record "$($PY -c 'import json,sys; a=sys.argv[1:]; print(json.dumps({"kind":"meta","date":a[0],"commit":a[1],
"command":a[2],"nproc":int(a[3]),"cpu":a[4],"kernel":a[5],"os":a[6],"build":a[7],"buildtype":a[8],
"server_cpu":a[9],"load_cpu":a[10],"tools":a[11],"loadavg":a[12],"duration":a[13],
"rest_body_bytes":int(a[14]),"grpc_body_bytes":int(a[15]),"busy_note":a[16]}))' \
  "$(date -u '+%Y-%m-%d %H:%M UTC')" "$COMMIT" "$CMDLINE" "$(nproc)" "$CPU_MODEL" "$(uname -r)" "$OS" \
  "${BUILD_DIR#$ROOT/}" "$BUILDTYPE" "$SCPU" "$LCPU" "$TOOLS" "$LOAD_START" "$DUR" "$REST_BYTES" \
  "$GRPC_BYTES" "$BUSY")"

# measure NAME SERVER_PIDS -- CMD...: run a load step, record CPU% of the server processes.
# Sets CPU_PCT.
measure() {
  local pids=$1
  shift
  local t0 c0 t1 c1
  t0=$(date +%s.%N)
  c0=$(cpu_ns $pids)
  bounded $((DUR + 30)) taskset -c "$LCPU" "$@" || log "step exited with $?: $*"
  c1=$(cpu_ns $pids)
  t1=$(date +%s.%N)
  CPU_PCT=$(awk -v a="$c0" -v b="$c1" -v s="$t0" -v e="$t1" 'BEGIN{printf "%.1f", (b-a)/1e9/(e-s)*100}')
}

# ---- HTTP/1.1: wrk ---------------------------------------------------------------------------

for c in $CONCS; do
  for srv in demo nginx; do
    if [ $srv = demo ]; then url="http://127.0.0.1:$MAIN_PORT/"; pids=$MAIN_PID
    else url="http://127.0.0.1:$NG_PORT/"; pids="$NG_PID ${NGINX_WORKERS[*]}"; fi
    out=$WORK/wrk-$srv-c$c.txt
    l=$(load1)
    log "wrk $srv c=$c"
    measure "$pids" wrk -t1 -c"$c" -d"${DUR}s" --timeout 5s --latency -s "$HERE/infer.lua" "$url" >"$out" 2>&1
    record "$($PY "$CLIENT" parse wrk "$out" kind='"wrk"' server="\"$srv\"" conc="$c" cpu_pct="$CPU_PCT" load1="\"$l\"")"
  done
done

# TF Serving REST predict on the same model, same harness (the demo only: nginx's figure above
# is the reference for both)
for c in $CONCS; do
  out=$WORK/wrk-tfs-c$c.txt
  l=$(load1)
  log "wrk demo TF Serving predict c=$c"
  measure "$MAIN_PID" wrk -t1 -c"$c" -d"${DUR}s" --timeout 5s --latency -s "$HERE/tfs_predict.lua" \
    "http://127.0.0.1:$MAIN_PORT/" >"$out" 2>&1
  record "$($PY "$CLIENT" parse wrk "$out" kind='"wrk_tfs"' server='"demo"' conc="$c" cpu_pct="$CPU_PCT" load1="\"$l\"")"
done

# grps REST predict (str_data to the default model, echo), same harness, the demo only
for c in $CONCS; do
  out=$WORK/wrk-grps-c$c.txt
  l=$(load1)
  log "wrk demo grps predict c=$c"
  measure "$MAIN_PID" wrk -t1 -c"$c" -d"${DUR}s" --timeout 5s --latency -s "$HERE/grps_predict.lua" \
    "http://127.0.0.1:$MAIN_PORT/" >"$out" 2>&1
  record "$($PY "$CLIENT" parse wrk "$out" kind='"wrk_grps"' server='"demo"' conc="$c" cpu_pct="$CPU_PCT" load1="\"$l\"")"
done

# ---- gRPC: h2load ----------------------------------------------------------------------------

H2_RUNS=""
for c in $CONCS; do H2_RUNS="$H2_RUNS $c:1"; done
H2_RUNS="$H2_RUNS 4:16" # 64 streams multiplexed on 4 connections, the usual gRPC client shape
for run in $H2_RUNS; do
  c=${run%%:*} m=${run##*:}
  for srv in demo nginx; do
    if [ $srv = demo ]; then
      url="http://127.0.0.1:$MAIN_PORT/inference.GRPCInferenceService/ModelInfer"; pids=$MAIN_PID
    else
      url="http://127.0.0.1:$NG_H2_PORT/inference.GRPCInferenceService/ModelInfer"; pids="$NG_PID ${NGINX_WORKERS[*]}"
    fi
    out=$WORK/h2load-$srv-c$c-m$m.txt
    l=$(load1)
    log "h2load $srv -c$c -m$m"
    measure "$pids" h2load -c"$c" -m"$m" -D "$DUR" --warm-up-time 1 -d "$WORK/simple.grpc" \
      -H 'content-type: application/grpc' -H 'te: trailers' --log-file="$out.log" "$url" >"$out" 2>&1
    record "$($PY "$CLIENT" parse h2load "$out" log="\"$out.log\"" kind='"h2load"' server="\"$srv\"" conc="$c" m="$m" cpu_pct="$CPU_PCT" load1="\"$l\"")"
    rm -f "$out.log"
  done
done

# grps Predict (GrpsMessage str_data to the default model, echo) at the same shapes, the demo only
for run in $H2_RUNS; do
  c=${run%%:*} m=${run##*:}
  out=$WORK/h2load-grps-c$c-m$m.txt
  l=$(load1)
  log "h2load demo grps -c$c -m$m"
  measure "$MAIN_PID" h2load -c"$c" -m"$m" -D "$DUR" --warm-up-time 1 -d "$WORK/grps.grpc" \
    -H 'content-type: application/grpc' -H 'te: trailers' --log-file="$out.log" \
    "http://127.0.0.1:$MAIN_PORT/grps.protos.v1.GrpsService/Predict" >"$out" 2>&1
  record "$($PY "$CLIENT" parse h2load "$out" log="\"$out.log\"" kind='"h2load_grps"' server='"demo"' conc="$c" m="$m" cpu_pct="$CPU_PCT" load1="\"$l\"")"
  rm -f "$out.log"
done

# ---- large tensors ----------------------------------------------------------------------------

log "memcpy reference"
bounded 30 taskset -c "$SCPU" "$WORK/memcpy_bw" 16 1 >"$WORK/memcpy.json"
record "$($PY "$CLIENT" parse json "$WORK/memcpy.json" kind='"memcpy"')"

for mode in json binary grpc grpc-aligned shm shm-grpc; do
  log "16 MiB round trips: $mode"
  iters=$LARGE_ITERS
  [ $mode = json ] && iters=$(( LARGE_ITERS < 3 ? LARGE_ITERS : 3 ))
  out=$WORK/large-$mode.json
  if bounded 120 taskset -c "$LCPU" $PY "$CLIENT" large "$MAIN_PORT" "$WORK" "$mode" "$iters" "$MAIN_PID" >"$out"; then
    record "$($PY "$CLIENT" parse json "$out" kind='"large"')"
  else
    log "large $mode failed"
  fi
done
# bench/grpc_rt.c: a lean C client (nghttp2, request from memory by reference, DATA frames as
# large as the server takes, 4 MiB reads), so that the client is not what is measured.
for v in big big-aligned; do
  log "16 MiB round trips: grpc_rt $v.grpc"
  echo 5 >"/proc/$MAIN_PID/clear_refs" 2>/dev/null || true
  out=$WORK/grpc_rt-$v.json
  c0=$(cpu_ns "$MAIN_PID")
  if bounded 120 taskset -c "$LCPU" "$WORK/grpc_rt" 127.0.0.1 "$MAIN_PORT" "$WORK/$v.grpc" 16777216 \
    $((LARGE_ITERS * 6)) >"$out"; then
    c1=$(cpu_ns "$MAIN_PID")
    hwm=$(awk '/^VmHWM/{print $2}' "/proc/$MAIN_PID/status")
    mode=grpc; [ $v = big-aligned ] && mode=grpc-aligned
    off=$($PY -c 'import json,sys; g=json.load(open(sys.argv[1])); print(g["big_raw_offset" if sys.argv[2]=="big" else "big_aligned_raw_offset"])' "$WORK/gen.json" $v)
    rec=$($PY "$CLIENT" parse json "$out" kind='"large"' mode="\"$mode\"" client='"bench/grpc_rt.c -n '$((LARGE_ITERS * 6))' (after 1 checked)"' hwm_kib="$hwm" raw_offset="$off")
    # the warm-up round trip is not in c1 - c0 alone: count it in (iters + 1)
    rec=$(echo "$rec" | $PY -c 'import json,sys; r=json.loads(sys.stdin.read()); r["cpu_ms_per_rt"]=round('"$((c1 - c0))"'/(r["iters"]+1)/1e6,2); print(json.dumps(r))')
    record "$rec"
  else
    log "grpc_rt $v failed"
  fi
done

# h2load as it comes (SETTINGS_MAX_FRAME_SIZE 16 KiB: the answer in 1,024 DATA frames) and
# advertising 4 MiB frames as grpcio does (-f 4M: 16 frames of 1 MiB); it always sends 16 KiB
# frames. Its own CPU time is measured too: it shows when the client is the bottleneck.
for v in big big-aligned; do
  for fr in 16K 4M; do
    log "16 MiB round trips: h2load $v.grpc -f $fr"
    echo 5 >"/proc/$MAIN_PID/clear_refs" 2>/dev/null || true
    out=$WORK/h2load-$v-$fr.txt
    # warm-up (not measured), as the python paths do: the first round trips map fresh blocks
    bounded 60 taskset -c "$LCPU" h2load -n 2 -c 1 -m 1 -f "$fr" -d "$WORK/$v.grpc" \
      -H 'content-type: application/grpc' -H 'te: trailers' \
      "http://127.0.0.1:$MAIN_PORT/inference.GRPCInferenceService/ModelInfer" >/dev/null 2>&1 || true
    c0=$(cpu_ns "$MAIN_PID")
    rm -f "$out.log"
    TIMEFORMAT='%U %S'
    { time bounded 120 taskset -c "$LCPU" h2load -n $((LARGE_ITERS * 6)) -c 1 -m 1 -f "$fr" \
      -d "$WORK/$v.grpc" --log-file "$out.log" -H 'content-type: application/grpc' \
      -H 'te: trailers' "http://127.0.0.1:$MAIN_PORT/inference.GRPCInferenceService/ModelInfer" \
      >"$out" 2>&1 || log "h2load $v -f $fr exited with $?"; } 2>"$out.time"
    unset TIMEFORMAT
    c1=$(cpu_ns "$MAIN_PID")
    ccpu=$(awk '{printf "%.0f", ($1 + $2) * 1e9}' "$out.time")
    hwm=$(awk '/^VmHWM/{print $2}' "/proc/$MAIN_PID/status")
    mode=grpc; [ $v = big-aligned ] && mode=grpc-aligned
    flag=""; [ $fr = 4M ] && flag=" -f 4M"
    off=$($PY -c 'import json,sys; g=json.load(open(sys.argv[1])); print(g["big_raw_offset" if sys.argv[2]=="big" else "big_aligned_raw_offset"])' "$WORK/gen.json" $v)
    rec=$($PY "$CLIENT" parse h2load "$out" log="\"$out.log\"" kind='"large_h2load"' mode="\"$mode\"" client='"h2load -n '$((LARGE_ITERS * 6))' -c1 -m1'"$flag"' (after 2 unmeasured)"' hwm_kib="$hwm" raw_offset="$off" cpu_ns="$((c1 - c0))" client_cpu_ns="${ccpu:-0}")
    rec=$(echo "$rec" | $PY -c 'import json,sys; r=json.loads(sys.stdin.read()); m=r.get("p50_ms") or r.get("mean_ms")
if m: r["median_s"]=m/1000; r["mb_per_s"]=round(16777216/(m/1000)/1e6,1); r["mb_per_s_both_directions"]=round(2*r["mb_per_s"],1)
if r.get("succeeded"):
    r["cpu_ms_per_rt"]=round(r["cpu_ns"]/r["succeeded"]/1e6,2)
    if r.get("client_cpu_ns"): r["client_cpu_ms_per_rt"]=round(r["client_cpu_ns"]/r["succeeded"]/1e6,2)
print(json.dumps(r))')
    record "$rec"
  done
done

# ---- memory: idle connections on a fresh demo ---------------------------------------------------

stop_pid "$MAIN_PID"
for proto in h1 h1req h2; do
  log "memory: $IDLE_CONNS idle $proto connections"
  start_demo "demo-idle-$proto"
  out=$WORK/idle-$proto.json
  if bounded 90 taskset -c "$LCPU" $PY "$CLIENT" idle "$DEMO_PORT" "$DEMO_PID" "$IDLE_CONNS" "$proto" >"$out"; then
    record "$($PY "$CLIENT" parse json "$out" kind='"idle"')"
  else
    log "idle $proto failed"
  fi
  stop_pid "$DEMO_PID"
done

# ---- profiles of the missed targets -------------------------------------------------------------

MISSED=$($PY "$CLIENT" targets "$RES")
todo=""
case $PROFILE in
  0) ;;
  1) todo="rest grpc large" ;;
  *) for t in $MISSED; do case $t in rest | grpc | large) todo="$todo $t" ;; esac; done ;;
esac
if [ -n "$todo" ]; then
  start_demo demo-profile
  for t in $todo; do
    case $t in
      rest) title="V2 REST simple under wrk -c64 (HTTP/1.1)"
        load=(wrk -t1 -c64 -d"${DUR}s" -s "$HERE/infer.lua" "http://127.0.0.1:$DEMO_PORT/") ;;
      grpc) title="gRPC ModelInfer simple under h2load -c64 -m1"
        load=(h2load -c64 -m1 -D "$DUR" -d "$WORK/simple.grpc" -H 'content-type: application/grpc'
          -H 'te: trailers' "http://127.0.0.1:$DEMO_PORT/inference.GRPCInferenceService/ModelInfer") ;;
      large) title="16 MiB gRPC raw round trips (h2load -c1 -m1, big-aligned.grpc: the raw contents used in place, the best case)"
        load=(h2load -D "$DUR" -c1 -m1 -d "$WORK/big-aligned.grpc" -H 'content-type: application/grpc'
          -H 'te: trailers' "http://127.0.0.1:$DEMO_PORT/inference.GRPCInferenceService/ModelInfer") ;;
    esac
    log "profiling: $title"
    prof=$WORK/profile-$t.txt
    if [ $PERF = 1 ]; then
      pcmd="perf record -e cpu-clock -F 999 --call-graph dwarf,16384 -p <demo> -- sleep $((DUR - 1))"
      taskset -c "$LCPU" "${load[@]}" >"$WORK/profile-load-$t.txt" 2>&1 &
      lp=$!
      PIDS+=($lp)
      sleep 0.5
      bounded $((DUR + 20)) taskset -c "$LCPU" perf record -e cpu-clock -F 999 --call-graph dwarf,16384 \
        -p "$DEMO_PID" -o "$WORK/perf-$t.data" -- sleep $((DUR - 1)) >/dev/null 2>&1 || true
      for _ in $(seq $((DUR * 10 + 100))); do kill -0 "$lp" 2>/dev/null || break; sleep 0.1; done
      stop_pid "$lp"
      {
        echo "== self time by object: perf report --no-children --sort dso -g none"
        perf report -i "$WORK/perf-$t.data" --no-children --sort dso -g none --percent-limit 0.5 \
          --stdio 2>/dev/null | grep -v '^#' | grep -v '^$' | head -8
        echo
        echo "== self time (flat), top entries: perf report --no-children --sort dso,sym -g none"
        perf report -i "$WORK/perf-$t.data" --no-children --sort dso,sym -g none --percent-limit 1 \
          --stdio 2>/dev/null | grep -v '^#' | grep -v '^$' | head -30
        echo
        echo "== samples by the innermost libinferserve (or demo) function on the stack, split into page"
        echo "   faults, system calls and user time (perf script; '?' = no such frame was unwound)"
        perf script -i "$WORK/perf-$t.data" 2>/dev/null | awk 'BEGIN { RS = "" }
          { n = split($0, L, "\n"); k = "user       "; fn = "?"
            if ($0 ~ /entry_SYSCALL/) k = "syscalls   "
            if ($0 ~ /asm_exc_page_fault/) k = "page faults"
            for (i = 2; i <= n; i++) if (L[i] ~ /libinferserve|inferserve-demo\)/) {
              split(L[i], F, " "); fn = F[2]; sub(/\+0x[0-9a-f]+$/, "", fn); break }
            c[k " in " fn]++; tot++ }
          END { for (x in c) printf "%6.1f%%  %s\n", 100 * c[x] / tot, x }' | sort -rn | head -15
        echo
        echo "== inclusive time (children) of libinferserve / libnghttp2 / llhttp functions"
        perf report -i "$WORK/perf-$t.data" --children --sort sym -g none --percent-limit 2 --stdio \
          2>/dev/null | grep -v '^#' | grep -v '^$' | grep -v '\[k\]' |
          grep -Ev '\] (0x[0-9a-f]+|main|_start|uv_run|__libc_start[a-z_]*( \(inlined\))?)$' | head -40
      } >"$prof" 2>&1 || true
    else
      pcmd="valgrind --tool=callgrind (perf unavailable)"
      echo "perf is not usable here; run the load under valgrind --tool=callgrind by hand (see bench/README.md)" >"$prof"
    fi
    record "$($PY -c 'import json,sys; print(json.dumps({"kind":"profile","target":sys.argv[1],"title":sys.argv[2],"command":sys.argv[3],"file":sys.argv[4]}))' "$t" "$title" "$pcmd" "$prof")"
  done
  stop_pid "$DEMO_PID"
fi

stop_pid "$NG_PID"
record "$($PY -c 'import json,sys; print(json.dumps({"kind":"meta_end","loadavg":sys.argv[1],"elapsed":int(sys.argv[2])}))' "$(loadavg)" $(($(date +%s) - START)))"

# ---- report -------------------------------------------------------------------------------------

$PY "$CLIENT" report "$RES" >"$WORK/report.md"
if [ "$RESULTS_MD" = - ]; then
  cat "$WORK/report.md"
else
  if [ ! -s "$RESULTS_MD" ]; then
    printf '# libinferserve benchmark results\n\nAppended by `bench/run.sh` (see bench/README.md). Newest last.\n\n' >"$RESULTS_MD"
  fi
  { cat "$WORK/report.md"; echo; } >>"$RESULTS_MD"
  cat "$WORK/report.md"
  log "appended to $RESULTS_MD"
fi
log "done in $(($(date +%s) - START)) s"
