#!/usr/bin/env bash
# Configure (once) and build a meson build directory: scripts/build.sh [DIR] [meson options...]
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
shift || true
if [ ! -f "$dir/build.ninja" ]; then
  log=$(mktemp)
  if ! meson setup "$dir" "$@" >"$log" 2>&1; then
    cat "$log"
    rm -f "$log"
    rm -rf "$dir" # a half-configured dir would be taken as configured next time
    exit 1
  fi
  rm -f "$log"
fi
ninja -C "$dir"
