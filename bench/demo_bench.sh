# Sourced by the one-model demo benchmarks (bench/batching.sh, bench/cache.sh): their settings
# from the environment (BUILD_DIR=build, BENCH_DURATION=10 s, BENCH_CONNECTIONS, BENCH_SERVER_CPU=0,
# BENCH_LOAD_CPU=1, BENCH_RESULTS), the command line to record, a work directory and the trap
# that stops the demo. Set BENCH_NAME (the script's name) and BENCH_DEFAULT_CONNECTIONS first;
# then start_demo [FLAGS...] starts the demo on one loop pinned to its core, on $port.
CMDLINE="bench/$BENCH_NAME.sh"
for v in BUILD_DIR BENCH_DURATION BENCH_CONNECTIONS BENCH_SERVER_CPU BENCH_LOAD_CPU; do
  if [ -n "${!v:-}" ]; then CMDLINE="$v=${!v} $CMDLINE"; fi
done
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
DUR=${BENCH_DURATION:-10}
CONNS=${BENCH_CONNECTIONS:-$BENCH_DEFAULT_CONNECTIONS}
SCPU=${BENCH_SERVER_CPU:-0}
LCPU=${BENCH_LOAD_CPU:-1}
RESULTS_MD=${BENCH_RESULTS:-$HERE/RESULTS.md}
command -v wrk >/dev/null || { echo "wrk is missing: bench/install-deps.sh" >&2; exit 1; }
ninja -C "$BUILD_DIR" examples/demo/inferserve-demo >/dev/null

WORK=$(mktemp -d "/tmp/isv-$BENCH_NAME.XXXXXX")
DEMO_PID=""
cleanup() {
  [ -n "$DEMO_PID" ] && kill -TERM "$DEMO_PID" 2>/dev/null && wait "$DEMO_PID" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT

start_demo() {
  port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  # one loop, pinned to its core (the demo's default is a loop per core: bench/loops.sh)
  taskset -c "$SCPU" "$BUILD_DIR/examples/demo/inferserve-demo" --listen "127.0.0.1:$port" \
    --threads 1 "$@" >"$WORK/demo.log" 2>&1 &
  DEMO_PID=$!
  for _ in $(seq 100); do grep -q listening "$WORK/demo.log" && break; sleep 0.1; done
  grep -q listening "$WORK/demo.log" || { cat "$WORK/demo.log"; exit 1; }
}
