#!/usr/bin/env bash
# A storm for the sanitizers (issue #34): tests/soak/storm.py against a demo it starts with
# --threads 2 --shared-memory: repository churn, metrics and statistics, SSE clients that read
# slowly or stop, gzip bodies and bombs, shared memory objects truncated mid-request, V2 infer over
# HTTP and gRPC, all at once for SECONDS; then SIGTERM. It passes when the demo exits 0 with no
# sanitizer report and every answer was one the storm allows (see storm.py).
#
#   scripts/storm.sh [SECONDS]        (default 120)
#
# BUILD_DIR (default build-tsan) is built here: ThreadSanitizer (-Db_sanitize=thread), or, when
# its name has "asan" in it (or SANITIZER=address), ASan+UBSan as scripts/soak.sh builds it.
# TSan runs with halt_on_error=0 (every report is collected from the demo's stderr) and
# tests/soak/tsan.supp if there is one; ASan with LeakSanitizer on. A report or a crash leaves
# the demo's whole stderr in /tmp/storm-report-*.log.
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-120}
BUILD_DIR=${BUILD_DIR:-build-tsan}
PY=/usr/bin/python3
if [ -z "${SANITIZER:-}" ]; then
  case "$BUILD_DIR" in *asan*) SANITIZER=address ;; *) SANITIZER=thread ;; esac
fi

case "$SANITIZER" in
  thread)
    scripts/build.sh "$BUILD_DIR" -Db_sanitize=thread -Db_lundef=false >/dev/null
    unset ASAN_OPTIONS UBSAN_OPTIONS
    TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=0:second_deadlock_stack=1}
    [ -f tests/soak/tsan.supp ] && TSAN_OPTIONS="$TSAN_OPTIONS:suppressions=$PWD/tests/soak/tsan.supp"
    export TSAN_OPTIONS
    ;;
  address)
    scripts/build.sh "$BUILD_DIR" -Db_sanitize=address,undefined -Db_lundef=false >/dev/null
    unset TSAN_OPTIONS
    export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:quarantine_size_mb=64}
    export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
    ;;
  *) echo "storm: SANITIZER is thread or address, not '$SANITIZER'"; exit 2 ;;
esac

# the directory may have been configured before, otherwise: its sanitizer is the one asked for
actual=$(meson introspect "$BUILD_DIR" --buildoptions | $PY -c \
  'import json, sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "b_sanitize"))')
case "$SANITIZER:$actual" in
  thread:thread | address:address*) ;;
  *) echo "storm: $BUILD_DIR is configured with b_sanitize=$actual, not $SANITIZER"; exit 2 ;;
esac

exec $PY tests/soak/storm.py --demo "$BUILD_DIR/examples/demo/inferserve-demo" "$SECS"
