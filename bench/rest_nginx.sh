#!/usr/bin/env bash
# bench/rest_nginx.sh — V2 REST `simple` against nginx, alternated run by run (issue 28's REST
# target): wrk -c64 and -c1 with bench/infer.lua against one or more inferserve-demo builds and
# an nginx worker answering `return 200` with a body of the demo's answer's size (bench/run.sh's
# reference), each on core 0, wrk on core 1. Per run: req/s, p50 / p99, and the server's CPU
# time per request (every thread, /proc/PID/task/*/schedstat; nginx: its worker), split into user
# and kernel time by the share /proc/PID/stat gives (bench/lib.sh), and how busy wrk kept its
# own core (near 100%, the client set the pace and the ratio to nginx is capped). The order
# rotates each round so that drift on a shared machine hits every server alike. Prints a TSV
# and the medians; nothing is written to RESULTS.md.
#
#   bench/rest_nginx.sh after=build-bench/examples/demo/inferserve-demo [before=/tmp/x/...]
#
# Knobs: RN_ROUNDS (3), RN_DURATION (5 s), RN_CASES ("64 1": wrk connections), RN_SERVER_CPU /
# RN_LOAD_CPU (0 / 1), RN_KEEP=1 (keep the work directory), RN_LUA (the wrk script: bench/infer.lua;
# bench/infer_dumps.lua is the same request as Python's json.dumps writes it).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh" # cpu_ns, cpu_ticks, free_port, wait_port
. "$HERE/nginx_ref.sh"
ROUNDS=${RN_ROUNDS:-3} DUR=${RN_DURATION:-5} CASES=${RN_CASES:-"64 1"}
LUA=${RN_LUA:-$HERE/infer.lua}
SCPU=${RN_SERVER_CPU:-0} LCPU=${RN_LOAD_CPU:-1}
PY=/usr/bin/python3
WORK=$(mktemp -d /tmp/rest_nginx.XXXXXX)
TSV=$WORK/runs.tsv
LABELS=() BINS=()
for a in "$@"; do LABELS+=("${a%%=*}"); BINS+=("${a#*=}"); done
[ ${#BINS[@]} -gt 0 ] || { echo "usage: $0 label=path/to/inferserve-demo ..." >&2; exit 2; }
PIDS=()
log() { echo "[rest_nginx $(date -u +%H:%M:%S)] $*" >&2; }
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  [ "${RN_KEEP:-}" = 1 ] && log "kept $WORK" || rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

start_demo() { # BIN: DEMO_PID, DEMO_PORT (bench/run.sh's flags)
  taskset -c "$SCPU" "$1" --listen 127.0.0.1:0 --threads 1 --max-connections 20000 \
    --idle-timeout-ms 300000 >"$WORK/demo.log" 2>&1 &
  DEMO_PID=$!
  PIDS+=("$DEMO_PID")
  DEMO_PORT=""
  for _ in $(seq 100); do
    DEMO_PORT=$(sed -n 's/^inferserve-demo listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$WORK/demo.log" | head -1)
    [ -n "$DEMO_PORT" ] && return 0
    sleep 0.1
  done
  log "FAILED: $1 did not report its port"; exit 1
}

# nginx as bench/run.sh configures it (REST part): one worker, the same answer size
start_demo "${BINS[0]}"
BYTES=$(curl -s -m 5 -X POST -H 'Content-Type: application/json' --data-binary \
  '{"inputs":[{"name":"INPUT0","shape":[1,16],"datatype":"INT32","data":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]},{"name":"INPUT1","shape":[1,16],"datatype":"INT32","data":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]}]}' \
  "http://127.0.0.1:$DEMO_PORT/v2/models/simple/infer" | wc -c)
kill "$DEMO_PID"; wait "$DEMO_PID" 2>/dev/null || true
NG=$WORK/nginx NG_PORT=$(free_port)
mkdir -p "$NG/logs"
BODY=$(nginx_ref_json_body "$BYTES")
nginx_ref_conf "$NG" "$NG_PORT" "$BODY"
taskset -c "$SCPU" nginx -p "$NG" -e "$NG/logs/error.log" -c "$NG/nginx.conf" >"$NG/stdout.log" 2>&1 &
NG_PID=$!
PIDS+=("$NG_PID")
wait_port "$NG_PORT" || { cat "$NG/logs/error.log" >&2; exit 1; }
NG_WORKER=$(pgrep -P "$NG_PID" | head -1)
log "nginx worker $NG_WORKER port $NG_PORT, answer $BYTES bytes; load $(cut -d' ' -f1-3 /proc/loadavg)"

printf 'round\tserver\tconns\treq_s\tp50_us\tp99_us\tus_cpu_per_req\trequests\tload1\tsys_pct\tload_cpu_pct\n' >"$TSV"
one_run() { # LABEL PORT PID CONNS ROUND
  local out=$WORK/$1-$4-$5.txt l1 c0 c1 u0 u1 s0 s1
  l1=$(cut -d' ' -f1 /proc/loadavg)
  read -r u0 s0 <<<"$(cpu_ticks "$3")"
  c0=$(cpu_ns "$3")
  run_timed "$out" timeout $((DUR + 30)) taskset -c "$LCPU" wrk -t1 -c"$4" -d"${DUR}s" --timeout 5s --latency \
    -s "$LUA" "http://127.0.0.1:$2/" || log "wrk exited with $?"
  c1=$(cpu_ns "$3")
  read -r u1 s1 <<<"$(cpu_ticks "$3")"
  $PY - "$out" "$1" "$4" "$5" "$c0" "$c1" "$l1" $((u1 - u0)) $((s1 - s0)) "$LOAD_CPU_S" "$DUR" >>"$TSV" <<'EOF'
import re, sys
out, label, conns, r, c0, c1, l1, ut, kt, lc, dur = sys.argv[1:]
ut, kt = int(ut), int(kt)
sys_pct = 100.0 * kt / (ut + kt) if ut + kt else float("nan")
t = open(out).read()
def us(s):
    m = re.match(r"([\d.]+)(us|ms|s)$", s)
    return float(m.group(1)) * {"us": 1, "ms": 1e3, "s": 1e6}[m.group(2)] if m else float("nan")
n = int(re.search(r"(\d+) requests in", t).group(1))
rps = float(re.search(r"Requests/sec:\s+([\d.]+)", t).group(1))
# the distribution's own line ("    50%  138.00us"): unanchored, "50%" also matches the end of a
# "+/- Stdev" figure such as "97.50%", and the next word is no latency
pct = lambda k: (lambda m: us(m.group(1)) if m else float("nan"))(re.search(r"^\s*" + k + r"%\s+(\S+)", t, re.M))
p50, p99 = pct("50"), pct("99")
bad = re.search(r"Non-2xx or 3xx responses: (\d+)", t)
if bad: print("non-2xx: %s" % bad.group(1), file=sys.stderr)
print("%s\t%s\t%s\t%.0f\t%.0f\t%.0f\t%.2f\t%d\t%s\t%.1f\t%.0f" % (int(r) + 1, label, conns, rps, p50, p99,
      (int(c1) - int(c0)) / 1e3 / n, n, l1, sys_pct, 100 * float(lc) / float(dur)))
EOF
}

N=$((${#BINS[@]} + 1))
for r in $(seq 0 $((ROUNDS - 1))); do
  for k in $(seq 0 $((N - 1))); do
    i=$(((k + r) % N))
    if [ "$i" = $((N - 1)) ]; then
      timeout 20 taskset -c "$LCPU" wrk -t1 -c64 -d1s -s "$LUA" "http://127.0.0.1:$NG_PORT/" >/dev/null 2>&1 || true
      for c in $CASES; do one_run nginx "$NG_PORT" "$NG_WORKER" "$c" "$r"; done
    else
      start_demo "${BINS[$i]}"
      timeout 20 taskset -c "$LCPU" wrk -t1 -c64 -d1s -s "$LUA" "http://127.0.0.1:$DEMO_PORT/" >/dev/null 2>&1 || true
      for c in $CASES; do one_run "${LABELS[$i]}" "$DEMO_PORT" "$DEMO_PID" "$c" "$r"; done
      kill "$DEMO_PID"; wait "$DEMO_PID" 2>/dev/null || true
    fi
    log "round $((r + 1)): ${LABELS[$i]:-nginx} done"
  done
done
cat "$TSV"
$PY - "$TSV" <<'EOF'
import csv, sys, statistics as st
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
print("\nmedians (min-max) over the rounds:")
print("| server | conns | req/s | µs CPU/req | µs user / kernel per req | p50 µs | p99 µs | wrk's core busy |")
print("|---|---|---|---|---|---|---|---|")
for key in sorted({(r["server"], r["conns"]) for r in rows}, key=lambda k: (int(k[1]) * -1, k[0])):
    rs = [r for r in rows if (r["server"], r["conns"]) == key]
    f = lambda c: [x for x in (float(r[c]) for r in rs) if x == x] or [float("nan")]  # a run's nan is left out
    m = lambda c, fmt: (fmt % st.median(f(c))) + " (" + (fmt % min(f(c))) + "–" + (fmt % max(f(c))) + ")"
    cpu, kern = st.median(f("us_cpu_per_req")), st.median(f("sys_pct")) / 100
    split = "%.2f / %.2f" % (cpu * (1 - kern), cpu * kern)  # the median CPU split by the median share
    print("| %s | %s | %s | %s | %s | %s | %s | %s |" % (key[0], key[1], m("req_s", "%.0f"), m("us_cpu_per_req", "%.2f"),
          split, m("p50_us", "%.0f"), m("p99_us", "%.0f"), m("load_cpu_pct", "%.0f%%")))
EOF
