#!/usr/bin/env bash
# bench/loop_stall.sh — how long ONE large request holds the host's libuv loop (bench/README.md).
#
#   bench/loop_stall.sh      build bench/loop_stall, run the cases, print a table (~1 min)
#
# bench/loop_stall.c is a host with a 1 ms probe timer on the loop it gives the server; the
# worst lateness of that timer while requests run is the stall a host sees. The server is pinned
# to one core, curl to the other; each case sends STALL_ITERS sequential requests, then SIGUSR1
# makes loop_stall print the probe's figures for that case (and start over).
#
#   case          request                                                   response
#   idle          none: STALL_IDLE_S seconds (the probe's own noise)
#   json-16MiB    ~16 MiB of V2 JSON, FP32 [N] (numbers like -1234.0625)    JSON, the same size
#   json-64MiB    ~64 MiB of V2 JSON, FP32 [N]                              JSON, the same size
#   binary-64MiB  binary tensor extension: JSON header + 64 MiB FP32        binary OUTPUT0
#                 [16777216] (Inference-Header-Content-Length)
#   grpc-64MiB    gRPC ModelInfer over h2c, 64 MiB FP32 [16777216] as         raw_output_contents
#                 raw_input_contents (bench/grpc_rt: one connection, ITERS round trips after
#                 one checked warm-up)
#   h2c-json-16MiB    json-16MiB's request over h2c (curl --http2-prior-knowledge)  as json-16MiB
#   h2c-binary-64MiB  binary-64MiB's request over h2c                       as binary-64MiB
#   inline-binary-64MiB  binary-64MiB's request to identity_inline: its copy runs ON the loop
#                 (the model's own work, timed apart: "model copy ms"), into an output from
#                 isv_request_alloc_output — fresh memory unless STALL_PREFAULT asks for blocks
#   tls-json-16MiB, tls-binary-64MiB  the same requests over TLS (HTTP/1.1; a throw-away
#                 self-signed certificate made by openssl here): every record decrypted and
#                 encrypted on the loop thread
#
# Environment (all optional):
#   BUILD_DIR=build-bench      meson build directory (set up with -Dbench=true if absent)
#   STALL_NO_BUILD=1           do not run meson/ninja
#   STALL_ITERS=5              requests per case
#   STALL_IDLE_S=2             length of the idle case
#   STALL_SERVER_CPU=0 STALL_LOAD_CPU=1   taskset cores for loop_stall / curl
#   STALL_KEEP=1               keep the work directory (bodies, server output, curl timings)
#   STALL_PREFAULT=65          the server asks isv_options_set_buffer_prefault for two blocks
#                              of that many MiB (65: a 64 MiB body or output fits)
#   STALL_CASES="a b"          run only these cases (default: all, in the order above)
#
# Loopback only. Every step is bounded (curl --max-time, timeouts on waits), a watchdog ends
# the run after 200 s, and a trap stops every process started here, on success, failure or
# signal. Prints only; nothing is written to bench/RESULTS.md.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
CMDLINE="bench/loop_stall.sh${*:+ $*}"
for v in BUILD_DIR STALL_NO_BUILD STALL_ITERS STALL_IDLE_S STALL_SERVER_CPU STALL_LOAD_CPU STALL_KEEP \
  STALL_PREFAULT STALL_CASES; do
  if [ -n "${!v:-}" ]; then CMDLINE="$v=${!v} $CMDLINE"; fi
done
BUILD_DIR=${BUILD_DIR:-$ROOT/build-bench}
BIN=$BUILD_DIR/bench/loop_stall
ITERS=${STALL_ITERS:-5}
IDLE_S=${STALL_IDLE_S:-2}
SCPU=${STALL_SERVER_CPU:-0}
LCPU=${STALL_LOAD_CPU:-1}
PY=/usr/bin/python3
START=$(date +%s)

WORK=$(mktemp -d /tmp/isv-loop-stall.XXXXXX)
SERVER_PID=""
WATCHDOG=""

exec 3>&2
log() { printf '[loop_stall %3ds] %s\n' $(($(date +%s) - START)) "$*" >&3; }
die() { log "FAILED: $*"; exit 1; }

cleanup() {
  local rc=$? p
  trap - EXIT INT TERM
  if [ -n "$WATCHDOG" ]; then
    for p in $(pgrep -P "$WATCHDOG" 2>/dev/null); do kill -TERM "$p" 2>/dev/null || true; done
    kill -TERM "$WATCHDOG" 2>/dev/null || true
  fi
  if [ -n "$SERVER_PID" ]; then
    kill -TERM "$SERVER_PID" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$SERVER_PID" 2>/dev/null || true
  fi
  wait 2>/dev/null || true
  if [ "${STALL_KEEP:-0}" = 1 ]; then log "work directory kept: $WORK"; else rm -rf "$WORK"; fi
  exit $rc
}
trap cleanup EXIT
trap 'log "interrupted"; exit 130' INT TERM

for t in taskset timeout curl; do command -v "$t" >/dev/null || die "$t not found"; done
if [ "$(nproc)" -lt 2 ]; then
  log "only $(nproc) CPU: loop_stall and curl share core 0"
  SCPU=0 LCPU=0
fi

( sleep 200; log "watchdog: the run exceeded 200 s"; kill -TERM $$ ) 2>/dev/null &
WATCHDOG=$!

# ---- build ----------------------------------------------------------------------------------
# shellcheck disable=SC2015 # A && B || die: die runs when any step fails, as intended
if [ "${STALL_NO_BUILD:-0}" != 1 ]; then
  log "building $BIN"
  { [ -f "$BUILD_DIR/build.ninja" ] ||
      meson setup "$BUILD_DIR" "$ROOT" -Dbench=true --buildtype=debugoptimized; } >"$WORK/build.log" 2>&1 &&
    meson configure "$BUILD_DIR" -Dbench=true >>"$WORK/build.log" 2>&1 &&
    timeout -k 3 150 ninja -C "$BUILD_DIR" bench/loop_stall bench/grpc_rt >>"$WORK/build.log" 2>&1 ||
    { tail -20 "$WORK/build.log" >&2; die "build failed"; }
fi
[ -x "$BIN" ] || die "$BIN not built (meson setup $BUILD_DIR -Dbench=true && ninja -C $BUILD_DIR bench/loop_stall)"
GRPC_RT=$BUILD_DIR/bench/grpc_rt
[ -x "$GRPC_RT" ] || die "$GRPC_RT not built (ninja -C $BUILD_DIR bench/grpc_rt)"

# ---- request bodies -------------------------------------------------------------------------
log "generating the request bodies"
timeout -k 3 60 "$PY" - "$WORK" <<'EOF' || die "body generation failed"
import array, json, random, sys

work = sys.argv[1]
rng = random.Random(20240601)
FRAC = [".5", ".25", ".125", ".0625", ".75", ".375", ".625", ".875", ".1875", ".3125", ".4375",
        ".5625"]
# 2^20 distinct numbers as a client prints them: -1234.0625, 517.5, 3.125 ... (exact in FP32,
# ~10 bytes each with the comma), cycled through for the longer bodies
POOL = ["%s%d%s" % ("-" if rng.getrandbits(1) else "", rng.randrange(10000), rng.choice(FRAC))
        for _ in range(1 << 20)]

def json_body(path, target):
    # as many numbers as fit in `target` bytes of body
    head = '{"inputs":[{"name":"INPUT0","datatype":"FP32","shape":[%d],"data":['
    tail = ']}]}'
    room = target - len(head % 99999999) - len(tail)
    parts, size = [], -1
    while True:
        for t in POOL:
            if size + len(t) + 1 > room:
                break
            parts.append(t)
            size += len(t) + 1
        else:
            continue
        break
    body = (head % len(parts) + ",".join(parts) + tail).encode()
    assert len(body) <= target
    with open(path, "wb") as f:
        f.write(body)
    return len(parts), len(body)

def binary_body(path, nbytes):
    n = nbytes // 4
    hdr = json.dumps({"inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [n],
                                  "parameters": {"binary_data_size": nbytes}}],
                      "outputs": [{"name": "OUTPUT0", "parameters": {"binary_data": True}}]},
                     separators=(",", ":")).encode()
    block = array.array("f", (rng.gauss(0.0, 1.0) for _ in range(1 << 18)))  # 1 MiB, repeated
    if sys.byteorder != "little":
        block.byteswap()
    with open(path, "wb") as f:
        f.write(hdr)
        for _ in range(nbytes // len(block.tobytes())):
            f.write(block.tobytes())
    with open(path + ".hlen", "w") as f:
        f.write(str(len(hdr)))
    return n, len(hdr) + nbytes

def varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)

def field(num, payload):  # a length-delimited protobuf field
    return varint(num << 3 | 2) + varint(len(payload)) + payload

def grpc_body(path, nbytes):
    # ModelInferRequest {model_name 1, inputs 5 {name 1, datatype 2, shape 3 (packed)},
    # raw_input_contents 7}, behind the 5-byte gRPC prefix
    n = nbytes // 4
    tensor = field(1, b"INPUT0") + field(2, b"FP32") + field(3, varint(n))
    block = array.array("f", (rng.gauss(0.0, 1.0) for _ in range(1 << 18))).tobytes()
    head = field(1, b"identity_fp32") + field(5, tensor) + varint(7 << 3 | 2) + varint(nbytes)
    with open(path, "wb") as f:
        f.write(b"\0" + (len(head) + nbytes).to_bytes(4, "big") + head)
        for _ in range(nbytes // len(block)):
            f.write(block)
    return n, 5 + len(head) + nbytes

MiB = 1 << 20
with open(work + "/bodies.txt", "w") as f:
    for name, target in (("json-16MiB", 16 * MiB), ("json-64MiB", 64 * MiB)):
        k, size = json_body("%s/%s.body" % (work, name), target)
        f.write("%s %d %d\n" % (name, k, size))
    k, size = binary_body(work + "/binary-64MiB.body", 64 * MiB)
    f.write("binary-64MiB %d %d\n" % (k, size))
    k, size = grpc_body(work + "/grpc-64MiB.grpc", 64 * MiB)
    f.write("grpc-64MiB %d %d\n" % (k, size))
EOF

# ---- the server -----------------------------------------------------------------------------
OUT=$WORK/server.out
TLS_ENV=()
if command -v openssl >/dev/null; then # a throw-away certificate for the tls- cases
  openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 \
    -keyout "$WORK/key.pem" -out "$WORK/cert.pem" >/dev/null 2>&1 &&
    TLS_ENV=(STALL_TLS_CERT="$WORK/cert.pem" STALL_TLS_KEY="$WORK/key.pem")
fi
env "${TLS_ENV[@]}" STALL_PREFAULT="${STALL_PREFAULT:-}" taskset -c "$SCPU" "$BIN" 0 >"$OUT" 2>"$WORK/server.err" &
SERVER_PID=$!
PORT=""
for _ in $(seq 100); do
  PORT=$(sed -n 's/^listening on \([0-9]*\)$/\1/p' "$OUT" | head -1)
  [ -n "$PORT" ] && break
  kill -0 "$SERVER_PID" 2>/dev/null || { cat "$WORK/server.err" >&2; die "loop_stall exited"; }
  sleep 0.1
done
[ -n "$PORT" ] || die "loop_stall did not report its port"
BASE=http://127.0.0.1:$PORT/v2/models
TLS_PORT=$(sed -n 's/^tls listening on \([0-9]*\)$/\1/p' "$OUT" | head -1)
log "loop_stall pid $SERVER_PID on core $SCPU, port $PORT; curl on core $LCPU"

# stats: SIGUSR1, then the line loop_stall prints for it
stats() {
  local before
  before=$(grep -c '^stall ' "$OUT" || true)
  kill -USR1 "$SERVER_PID"
  for _ in $(seq 200); do
    [ "$(grep -c '^stall ' "$OUT" || true)" -gt "$before" ] && { grep '^stall ' "$OUT" | tail -1; return 0; }
    sleep 0.05
  done
  die "loop_stall printed no stats within 10 s"
}

# post CASE FILE CONTENT-TYPE [curl options]: one request, its answer to $POST_OUT (default
# /dev/null); appends "code seconds bytes" to CASE.rt
post() {
  local c=$1 file=$2 ctype=$3
  shift 3
  local w
  w=$(taskset -c "$LCPU" curl -s -o "${POST_OUT:-/dev/null}" --max-time 30 --data-binary @"$file" \
    -H "Content-Type: $ctype" "$@" -w '%{http_code} %{time_total} %{size_download}' \
    "${URL_BASE:-$BASE}/${MODEL:-identity_fp32}/infer") ||
    die "$c: curl failed ($w)"
  [ "${w%% *}" = 200 ] || die "$c: HTTP ${w%% *}: $(head -c 300 "$WORK/server.err")"
  echo "$w" >>"$WORK/$c.rt"
}

LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
ROWS=$WORK/rows.txt
: >"$ROWS"
# CPU time (ns, scheduler accounting) of the loop thread / of the other threads (the workers)
cpu() { # prints "LOOP OTHERS"
  local t l=0 o=0 v
  for t in /proc/"$SERVER_PID"/task/*; do
    v=$(cut -d' ' -f1 "$t/schedstat" 2>/dev/null) || continue
    if [ "${t##*/}" = "$SERVER_PID" ]; then l=$v; else o=$((o + v)); fi
  done
  echo "$l $o"
}
row() { # CASE BODY_BYTES "LOOP0 OTHERS0"
  local s l0 o0 l o
  s=$(stats) || die "no stats for $1"
  read -r l0 o0 <<<"$3"
  read -r l o <<<"$(cpu)"
  echo "$1 $2 ${s#stall } loop_cpu_ns=$((l - l0)) worker_cpu_ns=$((o - o0))" >>"$ROWS"
}

sleep 0.5
stats >/dev/null # start over: the server's start-up is not part of any case

log "idle: ${IDLE_S} s"
c0=$(cpu)
sleep "$IDLE_S"
row idle 0 "$c0"

for c in ${STALL_CASES:-json-16MiB json-64MiB binary-64MiB grpc-64MiB h2c-json-16MiB h2c-binary-64MiB \
  inline-binary-64MiB tls-json-16MiB tls-binary-64MiB}; do
  if [[ $c == tls-* ]] && [ -z "$TLS_PORT" ]; then
    log "$c: skipped (no openssl to make a certificate, or no TLS in this build)"
    continue
  fi
  stats >/dev/null
  if [ "$c" = grpc-64MiB ]; then # grpc_rt checks its warm-up answer (identity), then times ITERS
    size=$(awk -v c="$c" '$1 == c {print $3}' "$WORK/bodies.txt")
    log "$c: 1 checked + $ITERS requests of $size bytes (grpc_rt)"
    c0=$(cpu)
    timeout -k 3 120 taskset -c "$LCPU" "$GRPC_RT" 127.0.0.1 "$PORT" "$WORK/$c.grpc" $((64 * 1048576)) \
      "$ITERS" >"$WORK/$c.json" 2>"$WORK/$c.err" || die "$c: grpc_rt failed: $(head -c 300 "$WORK/$c.err")"
    "$PY" - "$WORK/$c.json" "$WORK/$c.rt" <<'PYEOF' || die "$c: no figures from grpc_rt"
import json, sys
r = json.load(open(sys.argv[1]))
# the .rt lines curl writes (code seconds bytes), one per request the CPU figures cover (the
# timed ones and the warm-up): grpc_rt reports only min, median and max, which these keep
times = [r["min_s"], r["max_s"]] + [r["median_s"]] * (r["iters"] - 1)
with open(sys.argv[2], "w") as f:
    for s in times:
        f.write("200 %f %d\n" % (s, r["response_bytes"]))
PYEOF
    row "$c" "$size" "$c0"
    continue
  fi
  # the body: the case's name less its h2c- / inline- prefix
  b=${c#h2c-}
  b=${b#inline-}
  b=${b#tls-}
  size=$(awk -v c="$b" '$1 == c {print $3}' "$WORK/bodies.txt")
  log "$c: $ITERS requests of $size bytes"
  case $b in
    json-*) ctype=application/json hdr=() ;;
    binary-*) ctype=application/octet-stream
      hdr=(-H "Inference-Header-Content-Length: $(cat "$WORK/$b.body.hlen")") ;;
  esac
  URL_BASE=$BASE
  case $c in
    h2c-*) hdr+=(--http2-prior-knowledge) MODEL=identity_fp32 ;;
    inline-*) MODEL=identity_inline ;;
    tls-*) hdr+=(-k --http1.1) MODEL=identity_fp32 URL_BASE=https://127.0.0.1:$TLS_PORT/v2/models ;;
    *) MODEL=identity_fp32 ;;
  esac
  c0=$(cpu)
  for _ in $(seq "$ITERS"); do post "$c" "$WORK/$b.body" "$ctype" "${hdr[@]}"; done
  row "$c" "$size" "$c0"
  # one more request, after the figures were taken: its answer is checked (identity)
  POST_OUT=$WORK/$c.resp post "$c.check" "$WORK/$b.body" "$ctype" "${hdr[@]}" -D "$WORK/$c.resp.h"
  timeout -k 3 60 "$PY" - "$WORK" "$c" "$b" <<'PYEOF' || die "$c: the answer is not the input"
import json, sys
work, case, body = sys.argv[1], sys.argv[2], sys.argv[3]
req = open("%s/%s.body" % (work, body), "rb").read()
resp = open("%s/%s.resp" % (work, case), "rb").read()
if body.startswith("json"):
    a, b = json.loads(req)["inputs"][0], json.loads(resp)["outputs"][0]
    ok = b["datatype"] == "FP32" and b["shape"] == a["shape"] and b["data"] == a["data"]
else:
    hl = int(open("%s/%s.body.hlen" % (work, body)).read())
    rl = [int(l.split(":", 1)[1]) for l in open("%s/%s.resp.h" % (work, case), errors="replace")
          if l.lower().startswith("inference-header-content-length:")][-1]
    b = json.loads(resp[:rl])["outputs"][0]
    ok = (b["parameters"]["binary_data_size"] == len(req) - hl and resp[rl:] == req[hl:])
sys.exit(0 if ok else 1)
PYEOF
  rm -f "$WORK/$c.resp"
done
LOAD_END=$(cut -d' ' -f1-3 /proc/loadavg)

# ---- report ---------------------------------------------------------------------------------
COMMIT=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git -C "$ROOT" status --porcelain -- lib include 2>/dev/null)" ]; then
  # which uncommitted state: a digest of the diff and of the new files
  DIGEST=$(cd "$ROOT" && { git diff HEAD -- lib include
    git ls-files -o --exclude-standard -- lib include | sort | while read -r f; do echo "$f"; cat "$f"; done
  } | sha1sum | cut -c1-12)
  COMMIT="$COMMIT + uncommitted changes in lib/include (digest $DIGEST)"
fi
echo
echo "loop_stall: $(date -u '+%Y-%m-%d %H:%M UTC'), $COMMIT, $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'))"
echo "command: $CMDLINE   (loop_stall on core $SCPU, curl on core $LCPU; $ITERS sequential requests per case; probe 1 ms)"
echo "load average: start $LOAD_START, end $LOAD_END"
echo
"$PY" - "$WORK" "$ROWS" <<'EOF'
import os, statistics, sys
work, rows = sys.argv[1], sys.argv[2]
def mib(n):
    return "-" if n == 0 else "%.1f MiB (%d)" % (n / 1048576, n)
print("| case | request body | response body | max stall ms | p99 ms | p99.9 ms | ticks | longest loop turn, CPU ms | loop turns over 2 / 1 ms CPU (of all) | model copy ms (max) | round trip ms (median, min-max) | loop / worker CPU ms per request |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for line in open(rows):
    f = line.split()
    case, size = f[0], int(f[1])
    kv = dict(x.split("=", 1) for x in f[2:] if "=" in x)
    rt, resp = "-", "-"
    per = 1
    p = os.path.join(work, case + ".rt")
    if os.path.exists(p):
        r = [l.split() for l in open(p)]
        t = [float(x[1]) * 1000 for x in r]
        rt = "%.0f (%.0f-%.0f)" % (statistics.median(t), min(t), max(t))
        resp = mib(int(r[0][2]))
        per = len(r)
    cpu = "%.0f / %.0f" % (int(kv["loop_cpu_ns"]) / 1e6 / per, int(kv["worker_cpu_ns"]) / 1e6 / per)
    if per == 1 and case == "idle":
        cpu += " (whole idle period)"
    over = "%s / %s (%s)" % (kv["turns_over_2ms"], kv["turns_over_1ms"], kv["turns"])
    copy = kv["model_copy_max_ms"] if case.startswith("inline") else "-"
    print("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (case, mib(size), resp,
          kv["max_ms"], kv["p99_ms"], kv["p999_ms"], kv["ticks"], kv["turn_cpu_max_ms"], over,
          copy, rt, cpu))
EOF
echo
log "done"
