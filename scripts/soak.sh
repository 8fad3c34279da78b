#!/usr/bin/env bash
# A soak of the demo server under mixed load and attacks, on the ASan+UBSan build:
#
#   scripts/soak.sh [SECONDS]        (default 600; scripts/test.sh runs a short one)
#
# For SECONDS, at once: wrk (keep-alive V2 REST infer), h2load (gRPC ModelInfer), and
# tests/soak/soak.py (16 MiB binary round trips and gRPC calls whose answers are checked, health
# probes, abandoned requests and cancelled calls, the attacks of issue 10 at a low rate, the
# server's RSS). Then SIGTERM. It passes when: every checked answer was right and every probe
# answered; wrk and h2load saw no error, no timeout and no non-2xx answer; RSS stayed flat after
# warm-up; the server exited 0 within its drain deadline with no sanitizer report (LeakSanitizer
# is on, so a leak fails it). BUILD_DIR (default build-asan) must be an ASan build, built here.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
SECS=${1:-600}
BUILD_DIR=${BUILD_DIR:-build-asan}
PY=/usr/bin/python3
. bench/lib.sh # free_port
DEMO=$BUILD_DIR/examples/demo/inferserve-demo

scripts/build.sh "$BUILD_DIR" -Db_sanitize=address,undefined -Db_lundef=false >/dev/null
for t in wrk h2load; do
  command -v $t >/dev/null || { echo "soak: $t is missing (scripts/install-deps.sh)"; exit 1; }
done

WORK=$(mktemp -d /tmp/isv-soak.XXXXXX)
DEMO_PID="" LOADS=()
cleanup() {
  for p in "${LOADS[@]}" $DEMO_PID; do kill -KILL "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
fail() { echo "soak: FAILED: $*"; [ -f "$WORK/demo.log" ] && tail -n 40 "$WORK/demo.log"; exit 1; }

port=$(free_port)
# A smaller quarantine than ASan's 256 MiB default: RSS settles within the warm-up quarter.
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:quarantine_size_mb=64 \
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  "$DEMO" --listen "127.0.0.1:$port" --drain-timeout-ms 5000 >"$WORK/demo.log" 2>&1 &
DEMO_PID=$!
for _ in $(seq 100); do grep -q listening "$WORK/demo.log" && break; sleep 0.1; done
grep -q listening "$WORK/demo.log" || fail "the demo did not start"

$PY bench/isvbench.py gen "$WORK" >/dev/null
wrk -t1 -c8 -d"${SECS}s" --timeout 10s -s bench/infer.lua "http://127.0.0.1:$port" \
  >"$WORK/wrk.txt" 2>&1 &
LOADS+=($!)
h2load -c2 -m8 -D "$SECS" -d "$WORK/simple.grpc" -H 'content-type: application/grpc' \
  -H 'te: trailers' "http://127.0.0.1:$port/inference.GRPCInferenceService/ModelInfer" \
  >"$WORK/h2load.txt" 2>&1 &
LOADS+=($!)
soak_rc=0
$PY tests/soak/soak.py 127.0.0.1 "$port" "$SECS" "$DEMO_PID" >"$WORK/soak.json" || soak_rc=$?
for p in "${LOADS[@]}"; do wait "$p" || true; done
LOADS=()

kill -TERM "$DEMO_PID"
demo_rc=0
timeout 30 tail --pid="$DEMO_PID" -f /dev/null || fail "the demo did not exit 30 s after SIGTERM"
wait "$DEMO_PID" || demo_rc=$?
DEMO_PID=""

echo "soak: ${SECS}s on $BUILD_DIR"
echo "soak.py: $(cat "$WORK/soak.json")"
grep -E 'Requests/sec|requests in|Socket errors|Non-2xx' "$WORK/wrk.txt" | sed 's/^/wrk: /'
grep -E '^requests:|^status codes:' "$WORK/h2load.txt" | sed 's/^/h2load: /'

[ "$soak_rc" -eq 0 ] || fail "soak.py found errors (exit $soak_rc)"
grep -q 'requests in' "$WORK/wrk.txt" || fail "wrk did not finish: $(tail -n 3 "$WORK/wrk.txt")"
! grep -qE 'Socket errors|Non-2xx' "$WORK/wrk.txt" || fail "wrk saw errors"
read -r total started done succeeded failed errored timeout < <(awk '/^requests:/ {
  print $2, $4, $6, $8, $10, $12, $14 }' "$WORK/h2load.txt") || true
[ -n "${succeeded:-}" ] && [ "$succeeded" -gt 0 ] || fail "h2load did no request: $(tail -n 3 "$WORK/h2load.txt")"
[ "$failed" = 0 ] && [ "$errored" = 0 ] && [ "$timeout" = 0 ] ||
  fail "h2load: $failed failed, $errored errored, $timeout timed out"
! grep -qE 'AddressSanitizer|LeakSanitizer|runtime error' "$WORK/demo.log" || fail "sanitizer report"
[ "$demo_rc" -eq 0 ] || fail "the demo exited $demo_rc"
echo "soak: ok"
