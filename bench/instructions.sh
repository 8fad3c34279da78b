#!/usr/bin/env bash
# bench/instructions.sh — user-space instructions per request under callgrind: the figure that
# stays put when the machine's timings drift (a shared VM moves ±5% run to run). For each
# inferserve-demo binary given, in turn: start it under `valgrind --tool=callgrind` with a plain
# and a TLS listener (a throw-away self-signed certificate made here), warm it with wrk for
# INSTR_WARM s, zero the counters (callgrind_control -z), run wrk for INSTR_DURATION s, dump
# (callgrind_control -d), and divide the instructions by the requests wrk completed.
#
#   bench/instructions.sh before=/tmp/isv-before/build/examples/demo/inferserve-demo \
#                         after=build/examples/demo/inferserve-demo
#
# Cases (INSTR_CASES, default "rest tls grpc"): rest = V2 REST `simple` over http://, tls = the
# same over https:// (ALPN http/1.1), both wrk -t1 -c16 -s bench/infer.lua; grpc = ModelInfer
# `simple` over h2c, h2load -c16 -m1 (bench/isvbench.py's payload); the load pinned to core 1, the
# demo to core 0. Under valgrind the server is ~50× slower, so wrk may time out and reconnect: a TLS
# window then holds a few handshakes (~3.5M instructions each) — the same for every binary, and
# the top functions are printed so that it shows. Inclusive figures per request of the functions
# named in INSTR_FUNCS (default: OpenSSL's record calls) follow each line.
# Environment: INSTR_CASES, INSTR_FUNCS, INSTR_LUA (the wrk script of rest and tls: bench/infer.lua),
# INSTR_ROUNDS=1 INSTR_WARM=2 INSTR_DURATION=6 INSTR_CONNS=16 INSTR_KEEP=1.
#
# INSTR_CACHE=1 simulates the caches too (callgrind --cache-sim, a fixed 32 KiB 8-way L1i and L1d
# with 64-byte lines, whatever the host's): three more columns, the L1 instruction misses and the
# L1 data read and write misses per request — what instructions alone do not show: a request
# that touches more memory (a connection's state gone cold under the others') costs more time per
# instruction. The simulation sees user space only: bytes the kernel has just copied into a read
# buffer count as misses here, in the cache on the hardware.
#
# `nginx` in place of name=path runs bench/run.sh's reference (nginx_ref.sh: one worker, `return
# 200` with INSTR_NGINX_BODY bytes, 257 by default: the `simple` answer to bench/infer.lua) under
# the same callgrind, its worker measured; rest case only.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh" # free_port, wait_port
. "$HERE/nginx_ref.sh"
ROUNDS=${INSTR_ROUNDS:-1}
WARM=${INSTR_WARM:-2}
DUR=${INSTR_DURATION:-6}
CONNS=${INSTR_CONNS:-16}
CASES=${INSTR_CASES:-rest tls grpc}
LUA=${INSTR_LUA:-$HERE/infer.lua} # the REST body: bench/infer_wide.lua for values of 3-5 digits,
# bench/infer_dumps.lua for the same body as json.dumps writes it, bench/infer_fp32.lua for 64 floats
FUNCS=${INSTR_FUNCS:-SSL_read SSL_write SSL_do_handshake}
VG=(valgrind --tool=callgrind --dump-instr=no)
[ -z "${INSTR_CACHE:-}" ] || VG+=(--cache-sim=yes --I1=32768,8,64 --D1=32768,8,64 --LL=1048576,16,64)
for t in valgrind callgrind_control callgrind_annotate wrk h2load taskset openssl; do
  command -v $t >/dev/null || { echo "$t is missing: bench/install-deps.sh" >&2; exit 1; }
done
[ $# -gt 0 ] || { echo "usage: $0 name=path/to/inferserve-demo ... [nginx]" >&2; exit 2; }
for spec in "$@"; do
  [ "$spec" != nginx ] || command -v nginx >/dev/null || { echo "nginx is missing: bench/install-deps.sh" >&2; exit 1; }
  [ "$spec" = nginx ] || [ -x "${spec#*=}" ] || { echo "$spec: not an executable (name=path or nginx)" >&2; exit 2; }
done
WORK=$(mktemp -d /tmp/isv-instr.XXXXXX)
PID="" master="" # the server under valgrind; nginx's master (PID is then its worker)
cleanup() {
  [ -n "$master" ] && kill "$master" 2>/dev/null
  [ -n "$PID" ] && kill "$PID" 2>/dev/null
  wait 2>/dev/null
  [ -n "${INSTR_KEEP:-}" ] || rm -rf "$WORK"
}
trap cleanup EXIT INT TERM
case " $CASES " in *" grpc "*) /usr/bin/python3 "$HERE/isvbench.py" gen "$WORK" >/dev/null ;; esac
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$WORK/k.pem" \
  -out "$WORK/c.pem" -days 1 -subj /CN=localhost 2>/dev/null

CACHE_COLS="" CACHE_SEP=""
[ -z "${INSTR_CACHE:-}" ] || CACHE_COLS=" L1i misses | L1d read misses | L1d write misses |" CACHE_SEP="---|---|---|"
echo "| round | binary | case | requests | Ir / request |$CACHE_COLS $(echo $FUNCS | sed 's/ / | /g') |"
echo "|---|---|---|---|---|$CACHE_SEP$(for f in $FUNCS; do printf -- '---|'; done)"
for r in $(seq "$ROUNDS"); do
  for spec in "$@"; do
    name=${spec%%=*} bin=${spec#*=}
    for cs in $CASES; do
      out="$WORK/cg.$r.$name.$cs"
      if [ "$spec" = nginx ]; then
        [ "$cs" = rest ] || continue # the reference answers plain HTTP/1.1 only here
        ng=$WORK/nginx port=$(free_port)
        nginx_ref_conf "$ng" "$port" "$(nginx_ref_json_body "${INSTR_NGINX_BODY:-257}")"
        # the master forks the worker: its own callgrind file, zeroed and dumped below
        taskset -c 0 "${VG[@]}" --trace-children=yes --callgrind-out-file="$out.%p" \
          nginx -p "$ng" -e "$ng/logs/error.log" -c "$ng/nginx.conf" >"$WORK/demo.out" 2>"$WORK/demo.err" &
        master=$!
        PID=""
        if wait_port "$port"; then # the master listens before it forks the worker
          for _ in $(seq 100); do
            PID=$(pgrep -P "$(cat "$ng/nginx.pid" 2>/dev/null || echo 0)" | head -1 || true)
            [ -n "$PID" ] && break
            sleep 0.1
          done
        fi
        [ -n "$PID" ] || { cat "$WORK/demo.err" >&2; echo "nginx did not start" >&2; exit 1; }
        plain=$port tls=""
      else
        taskset -c 0 "${VG[@]}" --callgrind-out-file="$out.%p" \
          "$bin" --listen 127.0.0.1:0 --threads 1 --tls-listen 127.0.0.1:0 \
          --tls-cert "$WORK/c.pem" --tls-key "$WORK/k.pem" >"$WORK/demo.out" 2>"$WORK/demo.err" &
        PID=$! master=""
        for _ in $(seq 200); do grep -q "with TLS" "$WORK/demo.out" 2>/dev/null && break; sleep 0.1; done
        plain=$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$WORK/demo.out" | head -1)
        tls=$(sed -n 's/.*with TLS at 127.0.0.1:\([0-9]*\).*/\1/p' "$WORK/demo.out" | head -1)
        [ -n "$plain" ] && [ -n "$tls" ] || { cat "$WORK/demo.err" >&2; echo "$name did not start" >&2; exit 1; }
      fi
      case $cs in
        rest) load=(wrk -t1 -c"$CONNS" -s "$LUA" "http://127.0.0.1:$plain") ;;
        tls) load=(wrk -t1 -c"$CONNS" -s "$LUA" "https://127.0.0.1:$tls") ;;
        grpc) load=(h2load -c"$CONNS" -m1 -d "$WORK/simple.grpc" -H 'content-type: application/grpc'
                -H 'te: trailers' "http://127.0.0.1:$plain/inference.GRPCInferenceService/ModelInfer") ;;
        *) echo "unknown case $cs" >&2; exit 2 ;;
      esac
      if [ "$cs" = grpc ]; then dur=(-D); else dur=(-d); fi
      timeout $((WARM + 60)) taskset -c 1 "${load[0]}" "${dur[@]}" "$WARM" "${load[@]:1}" >/dev/null 2>&1 || true
      callgrind_control -z "$PID" >/dev/null 2>&1
      timeout $((DUR + 60)) taskset -c 1 "${load[0]}" "${dur[@]}" "$DUR" "${load[@]:1}" >"$WORK/load.txt" 2>&1 || true
      callgrind_control -d "$PID" >/dev/null 2>&1
      sleep 1
      if [ -n "$master" ]; then kill "$master"; wait "$master" 2>/dev/null || true
      else kill "$PID"; wait "$PID" 2>/dev/null || true; fi
      PID="" master=""
      if [ "$cs" = grpc ]; then
        n=$(sed -n 's/^requests: .* \([0-9]*\) succeeded.*/\1/p' "$WORK/load.txt")
      else
        n=$(awk '/requests in/{print $1}' "$WORK/load.txt")
      fi
      dump=$(ls "$out".*.1 2>/dev/null | head -1) # the worker's, for nginx: the master dumps none
      [ -n "$dump" ] && [ -n "$n" ] && [ "$n" -gt 0 ] || { echo "$name $cs: no dump or no requests" >&2; exit 1; }
      ann=$(callgrind_annotate --inclusive=yes "$dump" 2>/dev/null)
      total=$(awk '/PROGRAM TOTALS/{gsub(",","",$1); print $1}' <<<"$ann")
      cols=""
      if [ -n "${INSTR_CACHE:-}" ]; then # the events' totals, in the order callgrind names them
        for e in I1mr D1mr D1mw; do
          v=$(awk -v e="$e" '/^events:/{for (i = 2; i <= NF; i++) k[$i] = i - 1}
                             /^summary:/{s = $(k[e] + 1)} /^totals:/{t = $(k[e] + 1)}
                             END{print t != "" ? t : s}' "$dump")
          cols="$cols $(awk -v v="${v:-0}" -v n="$n" 'BEGIN{printf "%.1f", v / n}') |"
        done
      fi
      for f in $FUNCS; do
        # awk reads a here-string: an `echo | awk ... exit` dies of SIGPIPE under pipefail
        v=$(awk -v f=":$f " 'index($0, f){gsub(",","",$1); print $1; exit}' <<<"$ann")
        cols="$cols $(( ${v:-0} / n )) |"
      done
      echo "| $r | $name | $cs | $n | $(( total / n )) |$cols"
    done
  done
done
