#!/usr/bin/env bash
# bench/grpc_nginx.sh — gRPC ModelInfer `simple` against nginx h2c, alternated run by run (issue
# 28's gRPC target): h2load with bench/isvbench.py's payload against one or more
# inferserve-demo builds and an nginx worker answering h2c with a gRPC-shaped body of the demo's
# answer's size (bench/run.sh's reference), each on core 0, h2load on core 1. The servers run
# for the whole script; each round measures every server once per case, in an order that
# rotates with the round. Per run: calls/s and the server's CPU time per call (every thread,
# /proc/PID/task/*/schedstat; nginx: its worker), split into user and kernel time by the share
# /proc/PID/stat gives (bench/lib.sh), and how busy h2load kept its own core (its CPU time over
# the run's: near 100%, the client set the pace and the ratio to nginx is capped by it). Prints a
# TSV and the medians; nothing is written to RESULTS.md.
#
#   bench/grpc_nginx.sh after=build/examples/demo/inferserve-demo [before=/tmp/x/...]
#
# Knobs: GN_ROUNDS (3), GN_DURATION (5 s), GN_CASES ("c64m1 c4m16": h2load -cN -mM),
# GN_SERVER_CPU / GN_LOAD_CPU (0 / 1).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh" # cpu_ns, cpu_ticks, free_port, wait_port
. "$HERE/nginx_ref.sh"
ROUNDS=${GN_ROUNDS:-3} DUR=${GN_DURATION:-5} CASES=${GN_CASES:-"c64m1 c4m16"}
SCPU=${GN_SERVER_CPU:-0} LCPU=${GN_LOAD_CPU:-1}
PY=/usr/bin/python3
WORK=$(mktemp -d /tmp/grpc_nginx.XXXXXX)
TSV=$WORK/runs.tsv
LABELS=() PIDS=() PORTS=() SERVERS=()
for t in h2load nginx taskset; do
  command -v $t >/dev/null || { echo "$t is missing: bench/install-deps.sh" >&2; exit 1; }
done
[ $# -gt 0 ] || { echo "usage: $0 label=path/to/inferserve-demo ..." >&2; exit 2; }
log() { echo "[grpc_nginx $(date -u +%H:%M:%S)] $*" >&2; }
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

$PY "$HERE/isvbench.py" gen "$WORK" >/dev/null
for a in "$@"; do
  label=${a%%=*} bin=${a#*=}
  taskset -c "$SCPU" "$bin" --listen 127.0.0.1:0 --threads 1 --max-connections 20000 \
    --idle-timeout-ms 300000 >"$WORK/$label.log" 2>&1 &
  pid=$! port=""
  PIDS+=("$pid")
  for _ in $(seq 100); do
    port=$(sed -n 's/^inferserve-demo listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$WORK/$label.log" | head -1)
    [ -n "$port" ] && break
    sleep 0.1
  done
  [ -n "$port" ] || { log "FAILED: $bin did not report its port"; exit 1; }
  LABELS+=("$label") SERVERS+=("$pid") PORTS+=("$port")
done
# nginx as bench/run.sh configures it: the h2c answer as large as the demo's gRPC answer body
$PY "$HERE/isvbench.py" check "${PORTS[0]}" "$WORK" >"$WORK/check.json"
GRPC_BYTES=$($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["grpc_response_body_bytes"])' "$WORK/check.json")
NG=$WORK/nginx NG_PORT=$(free_port) NG_H2_PORT=$(free_port)
while [ "$NG_H2_PORT" = "$NG_PORT" ]; do NG_H2_PORT=$(free_port); done
nginx_ref_conf "$NG" "$NG_PORT" '{}' "$NG_H2_PORT" "$($PY -c 'import sys; print("g" * int(sys.argv[1]))' "$GRPC_BYTES")"
taskset -c "$SCPU" nginx -p "$NG" -e "$NG/logs/error.log" -c "$NG/nginx.conf" >"$NG/stdout.log" 2>&1 &
NG_PID=$!
PIDS+=("$NG_PID")
wait_port "$NG_H2_PORT" || { cat "$NG/logs/error.log" >&2; exit 1; }
LABELS+=(nginx) SERVERS+=("$(pgrep -P "$NG_PID" | head -1)") PORTS+=("$NG_H2_PORT")
log "servers: ${LABELS[*]}; nginx answers $GRPC_BYTES body bytes; load $(cut -d' ' -f1-3 /proc/loadavg)"

printf 'round\tserver\tcase\tcalls_s\tus_cpu_per_call\tsys_pct\tload_cpu_pct\n' >"$TSV"
N=${#LABELS[@]}
for r in $(seq 0 $((ROUNDS - 1))); do
  for cs in $CASES; do
    c=${cs#c}; c=${c%m*}; m=${cs#*m}
    for k in $(seq 0 $((N - 1))); do
      i=$(((k + r) % N))
      read -r u0 s0 <<<"$(cpu_ticks "${SERVERS[$i]}")"
      c0=$(cpu_ns "${SERVERS[$i]}")
      run_timed "$WORK/h2load.txt" timeout $((DUR + 30)) taskset -c "$LCPU" h2load -c"$c" -m"$m" -D "$DUR" \
        -d "$WORK/simple.grpc" -H 'content-type: application/grpc' -H 'te: trailers' \
        "http://127.0.0.1:${PORTS[$i]}/inference.GRPCInferenceService/ModelInfer" || log "h2load exited with $?"
      out=$(cat "$WORK/h2load.txt")
      c1=$(cpu_ns "${SERVERS[$i]}")
      read -r u1 s1 <<<"$(cpu_ticks "${SERVERS[$i]}")"
      n=$(sed -n 's/^requests: .* \([0-9]*\) succeeded.*/\1/p' <<<"$out")
      awk -v r=$((r + 1)) -v s="${LABELS[$i]}" -v cs="$cs" -v n="${n:-0}" -v d="$DUR" -v c="$((c1 - c0))" \
        -v ut="$((u1 - u0))" -v kt="$((s1 - s0))" -v lc="$LOAD_CPU_S" \
        'BEGIN { printf "%d\t%s\t%s\t%.0f\t%.2f\t%s\t%.0f\n", r, s, cs, n / d, n ? c / 1e3 / n : 0,
                 ut + kt ? sprintf("%.1f", 100 * kt / (ut + kt)) : "nan", 100 * lc / d }' >>"$TSV"
    done
  done
  log "round $((r + 1)) done"
done
cat "$TSV"
$PY - "$TSV" <<'EOF'
import csv, sys, statistics as st
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
print("\nmedians (min-max) over the rounds, and each server's calls/s against nginx's run by run:")
print("| server | case | calls/s | µs CPU/call | µs user / kernel per call | h2load's core busy | / nginx |")
print("|---|---|---|---|---|---|---|")
ng = {(r["round"], r["case"]): float(r["calls_s"]) for r in rows if r["server"] == "nginx"}
for key in sorted({(r["server"], r["case"]) for r in rows}, key=lambda k: (k[1], k[0])):
    rs = [r for r in rows if (r["server"], r["case"]) == key]
    f = lambda c: [x for x in (float(r[c]) for r in rs) if x == x] or [float("nan")]  # a run's nan is left out
    m = lambda c, fmt: (fmt % st.median(f(c))) + " (" + (fmt % min(f(c))) + "–" + (fmt % max(f(c))) + ")"
    ratio = [float(r["calls_s"]) / ng[(r["round"], r["case"])] * 100 for r in rs if ng.get((r["round"], r["case"]))]
    rt = "%.0f–%.0f%%" % (min(ratio), max(ratio)) if ratio else "–"
    cpu, kern = st.median(f("us_cpu_per_call")), st.median(f("sys_pct")) / 100
    split = "%.2f / %.2f" % (cpu * (1 - kern), cpu * kern)  # the median CPU split by the median share
    print("| %s | %s | %s | %s | %s | %s | %s |" % (key[0], key[1], m("calls_s", "%.0f"), m("us_cpu_per_call", "%.2f"),
          split, m("load_cpu_pct", "%.0f%%"), rt))
EOF
