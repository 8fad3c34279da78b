#!/usr/bin/env bash
# bench/contend.sh — run a command while every CPU also runs a busy loop (one shell loop pinned
# to each CPU the process may use), as a host whose cores are shared with other work would:
# what the library's hand-offs cost when the thread handed to is not always on a CPU.
#
#   bench/contend.sh build/bench/inproc 3 1000 20000 64 0 pool1
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: $0 command [args...]" >&2; exit 2; }
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
trap 'exit 130' INT TERM
for cpu in $(seq 0 $(($(nproc) - 1))); do
  taskset -c "$cpu" sh -c 'while :; do :; done' &
  PIDS+=("$!")
done
sleep 0.5 # the loops are running before the command starts
"$@"
