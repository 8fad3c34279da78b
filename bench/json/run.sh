#!/bin/sh
# Build and run the JSON codec benchmark and (optionally) the exhaustive FP32 check.
#   bench/json/run.sh            benchmark only
#   bench/json/run.sh --all-f32  also check all 2^32 FP32 patterns (minutes, all cores)
# Needs: libyajl-dev libjansson-dev libjson-c-dev (Debian).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${BUILD_DIR:-/tmp/isv-bench-json}
# the meson build with the bench programs (-O2, as a user's default build)
[ -f "$out/build.ninja" ] || meson setup "$out" "$root" -Dbench=true -Dtests=disabled >/dev/null
meson configure "$out" -Dbench=true >/dev/null
ninja -C "$out" bench/bench_json bench/check_all_f32 >/dev/null
CC=${CC:-cc}
echo "# $($CC --version | head -1); $(uname -m); $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
"$out/bench/bench_json"
if [ "${1:-}" = "--all-f32" ]; then
  "$out/bench/check_all_f32" "$(nproc)"
fi
