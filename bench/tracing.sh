#!/usr/bin/env bash
# bench/tracing.sh — what tracing costs the demo per request (issue 30): one demo binary under
# bench/ab.sh's interleaved loads, four ways (the flags are the only difference):
#   nohook  --no-tracing                    no trace hook at all (the library records nothing)
#   off     (no flag)                       the demo's hook set, the trace extension's level OFF:
#                                           what a server that can be traced pays when it is not
#   hook1   --trace-rate 1                  every request traced: its timeline built and handed
#                                           to the hook, which writes it nowhere (no trace_file)
#   file1   --trace-rate 1 --trace-file F   every request traced and written by the demo as a
#                                           JSON line (one write(2) each)
# µs of demo CPU per request and requests/s per case, medians over the rounds (bench/ab.sh's
# report; nothing is written to RESULTS.md).
#
#   bench/tracing.sh [BUILD_DIR]     (default build/; AB_* variables as bench/ab.sh takes them)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
DEMO=$(cd "${1:-$HERE/../build}" && pwd)/examples/demo/inferserve-demo
[ -x "$DEMO" ] || { echo "bench/tracing.sh: no demo at $DEMO (ninja -C build)" >&2; exit 2; }
W=$(mktemp -d /tmp/isv-tracing.XXXXXX)
trap 'rm -rf "$W"' EXIT
# a wrapper per way: exec keeps the pid, so ab.sh reads the demo's own CPU time
mk() { printf '#!/bin/sh\nexec %s %s "$@"\n' "$DEMO" "$2" >"$W/$1"; chmod +x "$W/$1"; }
mk nohook "--no-tracing"
mk off ""
mk hook1 "--trace-rate 1"
mk file1 "--trace-rate 1 --trace-file $W/trace.jsonl"
AB_CASES=${AB_CASES:-rest64 grpc64} "$HERE/ab.sh" nohook="$W/nohook" off="$W/off" \
  hook1="$W/hook1" file1="$W/file1"
echo
echo "trace file after the runs: $(wc -l <"$W/trace.jsonl" 2>/dev/null || echo 0) lines"
