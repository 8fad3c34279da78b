#!/usr/bin/env bash
# bench/ab.sh — two (or more) inferserve-demo binaries, the same small loads, interleaved, so that
# the machine's drift hits every binary alike. Prints a Markdown section (nothing is written to
# RESULTS.md). See bench/README.md, "Before / after (ab.sh)".
#
#   bench/ab.sh before=/tmp/isv-before/build/examples/demo/inferserve-demo \
#               after=build/examples/demo/inferserve-demo
#
# Each round starts every binary in turn (the order rotates from round to round: A B, B A, ...),
# fresh, pinned to AB_SERVER_CPU with the flags bench/run.sh uses, checks its `simple` answers
# (REST and gRPC, bench/isvbench.py check), warms it up for 1 s (wrk -c64, not measured), then
# runs, pinned to AB_LOAD_CPU:
#   rest64  wrk -t1 -c64 -d${AB_DURATION}s -s bench/infer.lua     (V2 REST simple, keep-alive)
#   rest1   wrk -t1 -c1  ...
#   grpc64  h2load -c64 -m1 -D ${AB_DURATION} -d simple.grpc     (gRPC ModelInfer simple)
# and reads the demo's CPU time (every thread: /proc/PID/task/*/schedstat, ns; and utime+stime
# from /proc/PID/stat as a cross-check) before and after each load: µs of demo CPU per completed
# request, and requests/s as the client reports it. A step with errors (non-2xx, failed
# requests, socket errors other than wrk's closing ones) is marked.
#
# Environment (all optional):
#   AB_ROUNDS=3  AB_DURATION=5  AB_CASES="rest64 rest1 grpc64"
#   AB_SERVER_CPU=0 AB_LOAD_CPU=1   taskset cores
#   AB_KEEP=1    keep the work directory (raw wrk/h2load output, per-step TSV)
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh" # cpu_ns, free_port, wait_port
PY=/usr/bin/python3
ROUNDS=${AB_ROUNDS:-3}
DUR=${AB_DURATION:-5}
CASES=${AB_CASES:-rest64 rest1 grpc64}
SCPU=${AB_SERVER_CPU:-0}
LCPU=${AB_LOAD_CPU:-1}
START=$(date +%s)
[ $# -ge 2 ] || { echo "usage: bench/ab.sh LABEL=DEMO_BINARY LABEL=DEMO_BINARY [...]" >&2; exit 2; }
LABELS=() BINS=()
for a in "$@"; do
  case $a in *=*) ;; *) echo "bench/ab.sh: $a: want LABEL=PATH" >&2; exit 2 ;; esac
  LABELS+=("${a%%=*}") BINS+=("${a#*=}")
  [ -x "${a#*=}" ] || { echo "bench/ab.sh: ${a#*=} is not an executable" >&2; exit 2; }
done
N=${#LABELS[@]}

WORK=$(mktemp -d /tmp/isv-ab.XXXXXX)
TSV=$WORK/steps.tsv
DEMO_PID=""
log() { printf '[ab %3ds] %s\n' $(($(date +%s) - START)) "$*" >&2; }
stop_demo() {
  [ -n "$DEMO_PID" ] || return 0
  kill -TERM "$DEMO_PID" 2>/dev/null || true
  for _ in $(seq 50); do kill -0 "$DEMO_PID" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$DEMO_PID" 2>/dev/null || true
  wait "$DEMO_PID" 2>/dev/null || true
  DEMO_PID=""
}
cleanup() {
  trap - EXIT INT TERM
  stop_demo
  if [ "${AB_KEEP:-0}" = 1 ]; then log "kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

cpu_ticks() { awk '{print $14 + $15}' /proc/"$1"/stat; }

start_demo() { # BIN LOGFILE: DEMO_PID, DEMO_PORT (the flags of bench/run.sh's start_demo)
  taskset -c "$SCPU" "$1" --listen 127.0.0.1:0 --threads 1 --max-connections 20000 \
    --idle-timeout-ms 300000 >"$2" 2>&1 &
  DEMO_PID=$!
  DEMO_PORT=""
  for _ in $(seq 100); do
    DEMO_PORT=$(sed -n 's/^inferserve-demo listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$2" | head -1)
    [ -n "$DEMO_PORT" ] && return 0
    kill -0 "$DEMO_PID" 2>/dev/null || { cat "$2" >&2; log "FAILED: $1 exited"; exit 1; }
    sleep 0.1
  done
  log "FAILED: $1 did not report its port"
  exit 1
}

timeout 60 $PY "$HERE/isvbench.py" gen "$WORK" >/dev/null
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
printf 'round\tlabel\tcase\treq_s\tus_per_req\tus_per_req_stat\trequests\tload1\terrors\n' >"$TSV"

for r in $(seq 0 $((ROUNDS - 1))); do
  for k in $(seq 0 $((N - 1))); do
    i=$(((k + r) % N))
    label=${LABELS[$i]} bin=${BINS[$i]}
    start_demo "$bin" "$WORK/demo-$label-$r.log"
    log "round $((r + 1)) $label (pid $DEMO_PID, port $DEMO_PORT)"
    timeout 30 $PY "$HERE/isvbench.py" check "$DEMO_PORT" "$WORK" >/dev/null ||
      { log "FAILED: $label's simple answers are wrong"; exit 1; }
    timeout 20 taskset -c "$LCPU" wrk -t1 -c64 -d1s -s "$HERE/infer.lua" "http://127.0.0.1:$DEMO_PORT/" >/dev/null 2>&1 || true
    for c in $CASES; do
      out=$WORK/$c-$label-$r.txt
      case $c in
        rest64 | rest1)
          cmd=(wrk -t1 -c"${c#rest}" -d"${DUR}s" --timeout 5s -s "$HERE/infer.lua" "http://127.0.0.1:$DEMO_PORT/") ;;
        grpc64 | grpc1)
          cmd=(h2load -c"${c#grpc}" -m1 -D "$DUR" -d "$WORK/simple.grpc" -H 'content-type: application/grpc'
            -H 'te: trailers' "http://127.0.0.1:$DEMO_PORT/inference.GRPCInferenceService/ModelInfer") ;;
        *) log "unknown case $c"; exit 2 ;;
      esac
      l1=$(cut -d' ' -f1 /proc/loadavg)
      c0=$(cpu_ns "$DEMO_PID") t0=$(cpu_ticks "$DEMO_PID")
      timeout $((DUR + 30)) taskset -c "$LCPU" "${cmd[@]}" >"$out" 2>&1 || log "$c exited with $?"
      c1=$(cpu_ns "$DEMO_PID") t1=$(cpu_ticks "$DEMO_PID")
      $PY - "$out" "$c" "$r" "$label" "$c0" "$c1" "$t0" "$t1" "$l1" "$(getconf CLK_TCK)" >>"$TSV" <<'EOF'
import re, sys
out, case, r, label, c0, c1, t0, t1, l1, hz = sys.argv[1:]
t = open(out).read()
err = []
if case.startswith("rest"):
    n = int(re.search(r"(\d+) requests in", t).group(1))
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", t).group(1))
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", t)
    if m: err.append("non-2xx %s" % m.group(1))
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", t)
    if m and (int(m.group(1)) or int(m.group(3)) or int(m.group(4))): err.append(m.group(0))
else:
    m = re.search(r"requests: \d+ total, \d+ started, \d+ done, (\d+) succeeded, (\d+) failed, (\d+) errored, (\d+) timeout", t)
    n = int(m.group(1))
    if int(m.group(2)) or int(m.group(3)) or int(m.group(4)): err.append(m.group(0))
    m2 = re.search(r"status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", t)
    if m2 and (int(m2.group(3)) or int(m2.group(4))): err.append(m2.group(0))
    rps = float(re.search(r"finished in [\d.]+m?s, ([\d.]+) req/s", t).group(1))
us = (int(c1) - int(c0)) / 1e3 / n
us_stat = (int(t1) - int(t0)) / int(hz) * 1e6 / n
print("%d\t%s\t%s\t%.0f\t%.2f\t%.2f\t%d\t%s\t%s" % (int(r) + 1, label, case, rps, us, us_stat, n, l1, "; ".join(err) or "-"))
EOF
      tail -1 "$TSV" | awk -F'\t' '{printf "    %-7s %9s req/s %7s us/req (stat %s) load %s %s\n", $3, $4, $5, $6, $8, ($9 == "-" ? "" : "ERRORS " $9)}' >&2
    done
    stop_demo
  done
done
LOAD_END=$(cut -d' ' -f1-3 /proc/loadavg)

# ---- report -------------------------------------------------------------------------------------
$PY - "$TSV" "$LOAD_START" "$LOAD_END" "$DUR" "$ROUNDS" "$*" <<'EOF'
import csv, statistics, sys, subprocess
tsv, ls, le, dur, rounds, args = sys.argv[1:]
rows = list(csv.DictReader(open(tsv), delimiter="\t"))
labels = list(dict.fromkeys(r["label"] for r in rows))
cases = list(dict.fromkeys(r["case"] for r in rows))
print("Load average %s at the start, %s at the end; %s rounds of %s s per case; %s CPUs (%s)." % (
    ls, le, rounds, dur, subprocess.run(["nproc"], capture_output=True, text=True).stdout.strip(),
    open("/proc/cpuinfo").read().split("model name")[1].split(":")[1].split("\n")[0].strip()))
print()
print("Per round (µs = demo CPU per completed request, all threads, schedstat; stat = utime+stime):")
print()
print("| round | binary | case | req/s | µs/req | µs/req (stat) | requests | load1 | errors |")
print("|---|---|---|---|---|---|---|---|---|")
for r in rows:
    print("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (r["round"], r["label"], r["case"], r["req_s"],
          r["us_per_req"], r["us_per_req_stat"], r["requests"], r["load1"], r["errors"]))
print()
print("Medians over the rounds (min–max), ratios against %s:" % labels[0])
print()
print("| case | " + " | ".join("%s req/s | %s µs/req" % (l, l) for l in labels) + " | " +
      " | ".join("%s/%s req/s | %s/%s µs" % (l, labels[0], l, labels[0]) for l in labels[1:]) + " |")
print("|---|" + "---|---|" * len(labels) + "---|---|" * (len(labels) - 1))
for c in cases:
    med = {}
    cells = []
    for l in labels:
        q = [float(r["req_s"]) for r in rows if r["label"] == l and r["case"] == c]
        u = [float(r["us_per_req"]) for r in rows if r["label"] == l and r["case"] == c]
        med[l] = (statistics.median(q), statistics.median(u))
        cells.append("%.0f (%.0f–%.0f) | %.2f (%.2f–%.2f)" % (med[l][0], min(q), max(q), med[l][1], min(u), max(u)))
    rat = ["%.3f | %.3f" % (med[l][0] / med[labels[0]][0], med[l][1] / med[labels[0]][1]) for l in labels[1:]]
    print("| %s | %s | %s |" % (c, " | ".join(cells), " | ".join(rat)))
EOF
log "done in $(($(date +%s) - START)) s"
