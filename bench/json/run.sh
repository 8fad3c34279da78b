#!/bin/sh
# Build and run the JSON codec benchmark and (optionally) the exhaustive FP32 check.
#   bench/json/run.sh            benchmark only
#   bench/json/run.sh --all-f32  also check all 2^32 FP32 patterns (minutes, all cores)
# Needs: libyajl-dev libjansson-dev libjson-c-dev (Debian).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${BUILD_DIR:-/tmp/isv-bench-json}
mkdir -p "$out"
CC=${CC:-cc}
CFLAGS="-std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -O2 -Wall -Wextra -I$root/include -I$root/lib"
SRC="$root/lib/codec/buf.c $root/lib/codec/base64.c $root/lib/codec/half.c $root/lib/codec/utf8.c \
     $root/lib/codec/json_reader.c $root/lib/codec/json_writer.c"
$CC $CFLAGS -o "$out/bench_json" "$here/bench_json.c" "$here/bench_jsonc.c" $SRC \
  $(pkg-config --cflags --libs yajl jansson) -ldl -lm
echo "# $($CC --version | head -1); $(uname -m); $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
"$out/bench_json"
if [ "${1:-}" = "--all-f32" ]; then
  $CC $CFLAGS -pthread -o "$out/check_all_f32" "$here/check_all_f32.c" $SRC -lm
  "$out/check_all_f32" "$(nproc)"
fi
