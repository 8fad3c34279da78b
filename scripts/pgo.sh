#!/usr/bin/env bash
# scripts/pgo.sh — a profile-guided (PGO) release build of libinferserve and the demo, with GCC.
#
#   scripts/pgo.sh BUILD_DIR [meson options...]        e.g. scripts/pgo.sh build-pgo
#
# 1. meson setup BUILD_DIR --buildtype=release -Db_lto=true -Dtests=disabled -Db_pgo=generate
#    (your options after ours: they win), ninja: an instrumented build.
# 2. Trains it: the demo serves a mix of every front end it carries, PGO_SECONDS (2) a case, each
#    driven by a real client — V2 REST (compact JSON, Python's json.dumps spacing, FP32, BYTES,
#    binary tensors, metadata, health, statistics, generate), Prometheus metrics, TF Serving
#    REST, Vertex AI predict, grps REST, OpenAI chat completions and embeddings, V2 REST over
#    TLS and over h2c, V2 ModelInfer, TF Serving Predict and grps Predict over gRPC, and a
#    pool-mode model — with wrk, h2load and curl; then SIGINT, and the counters are written.
# 3. meson configure -Db_pgo=use, ninja: the build to install (meson install -C BUILD_DIR).
#
# A profile belongs to the source it was made from: after the source changes, run this script
# again (it retrains in the same directory). `ninja -C BUILD_DIR` alone would meet the stale
# profile, and GCC refuses it (-Wcoverage-mismatch, an error by default: "the profile data may
# be out of date").
#
# What it buys and why: the request path is long and flat (~12k user-space instructions for a
# V2 REST call, no hot spot); without a profile GCC cannot tell the error branches from the
# path every request takes, so the code a request runs is spread over ~770 cache lines, twice
# nginx's. With the profile: hot code together and error code apart, hot calls inlined —
# bench/RESULTS.md, History "A profile-guided build". Code the training did not run keeps the
# plain build's optimization (-fprofile-partial-training), so a protocol outside the mix is not
# made slower.
#
# Needs what scripts/install-deps.sh installs (wrk, h2load from nghttp2-client, curl, openssl,
# python3-protobuf and protoc for the gRPC bodies). Exits non-zero, with a message, when a step
# fails or the profile did not reach the build.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 BUILD_DIR [meson options...]" >&2; exit 2; }
DIR=$(realpath -m -- "$1") # the caller's BUILD_DIR, before the cd to the source
shift
cd "$(dirname "$0")/.."
SECS=${PGO_SECONDS:-2}
PY=/usr/bin/python3
log() { echo "[pgo $(date -u +%H:%M:%S)] $*" >&2; }
for t in wrk h2load curl openssl meson ninja; do
  command -v "$t" >/dev/null || { echo "$0: $t is missing (scripts/install-deps.sh)" >&2; exit 1; }
done
case "$("${CC:-cc}" --version 2>/dev/null | head -1)" in
  *clang*) echo "$0: GCC only (meson's b_pgo with clang needs llvm-profdata; not done here)" >&2
           exit 1 ;;
esac

# Both phases see the same flags: partial training keeps untrained code optimized for speed
# (not size); atomic counter updates where the target has them (the pool's workers count
# concurrently); and no warning for the programs the training does not run (the other
# examples: no profile is expected for them, and -Dwerror=true must still build).
PGO_FLAGS="-fprofile-partial-training -fprofile-update=prefer-atomic -Wno-missing-profile"
export CFLAGS="${CFLAGS:-} $PGO_FLAGS" CXXFLAGS="${CXXFLAGS:-} $PGO_FLAGS"
. bench/lib.sh # quietly
step() { quietly "$@" || { echo "$0: failed: $*" >&2; exit 1; }; } # CMD...: its output if it fails
# meson keeps the CFLAGS of its first setup: a directory this script did not make lacks them
if [ -e "$DIR" ] && [ ! -f "$DIR/.isv-pgo" ]; then
  echo "$0: $DIR exists and was not made by $0: remove it or name another" >&2
  exit 1
elif [ -f "$DIR/build.ninja" ]; then
  step meson configure "$DIR" -Db_pgo=generate "$@"
else
  step meson setup "$DIR" --buildtype=release -Db_lto=true -Dtests=disabled -Db_pgo=generate "$@"
  touch "$DIR/.isv-pgo"
fi
log "instrumented build in $DIR"
step ninja -C "$DIR"
find "$DIR" -name '*.gcda' -delete

WORK=$(mktemp -d /tmp/isv-pgo.XXXXXX)
DEMO_PID=""
cleanup() {
  [ -z "$DEMO_PID" ] || kill "$DEMO_PID" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- the training bodies ------------------------------------------------------------------
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$WORK/k.pem" \
  -out "$WORK/c.pem" -days 1 -subj /CN=localhost 2>/dev/null
$PY - "$WORK" <<'PYEOF'
import json, struct, sys
work = sys.argv[1]
a, b = list(range(1, 17)), [1] * 16
def put(name, data):
    open("%s/%s" % (work, name), "wb").write(data if isinstance(data, bytes) else data.encode())
def v2(inputs, **dumps):  # a V2 JSON body (the model is in the path)
    return json.dumps({"inputs": [{"name": n, "shape": s, "datatype": d, "data": x}
                                  for n, s, d, x in inputs]}, **dumps)
simple = [("INPUT0", [1, 16], "INT32", a), ("INPUT1", [1, 16], "INT32", b)]
put("v2_compact.json", v2(simple, separators=(",", ":")))
put("v2_dumps.json", v2(simple))
put("v2_fp32.json", v2([("INPUT0", [1, 64], "FP32", [i * 0.37 - 3.5 for i in range(64)])]))
put("v2_bytes.json", v2([("INPUT0", [1, 16], "BYTES", [str(x) for x in a]),
                         ("INPUT1", [1, 16], "BYTES", [str(x) for x in b])]))
head = json.dumps({"inputs": [{"name": n, "shape": [1, 16], "datatype": "INT32",
                               "parameters": {"binary_data_size": 64}}
                              for n in ("INPUT0", "INPUT1")],
                   "outputs": [{"name": "OUTPUT0", "parameters": {"binary_data": True}},
                               {"name": "OUTPUT1"}]}, separators=(",", ":")).encode()
put("v2_binary.bin", head + struct.pack("<16i", *a) + struct.pack("<16i", *b))
put("v2_binary.len", str(len(head)))
put("tfs_row.json", json.dumps({"instances": [{"INPUT0": a, "INPUT1": b}]}))
put("tfs_col.json", json.dumps({"inputs": {"INPUT0": [a], "INPUT1": [b]}}))
put("grps.json", json.dumps({"str_data": "hello grps"}))
put("slow.json", v2([("INPUT0", [1], "INT32", [0])]))
put("generate.json", json.dumps({"x": [1, 2, 3]}))
put("chat.json", json.dumps({"model": "tiny_lm", "max_tokens": 8,
                             "messages": [{"role": "user", "content": "tell me about the server"}]}))
put("embed.json", json.dumps({"model": "tiny_embed", "input": ["abc", "abd"]}))
PYEOF
# the gRPC bodies (simple.grpc: V2 ModelInfer, tf.grpc: TF Serving Predict, grps.grpc), as the
# benchmarks send them
$PY bench/isvbench.py gen "$WORK" >/dev/null
# one wrk script for every HTTP/1.1 case: method, path, body file and headers from the environment
cat >"$WORK/req.lua" <<'LUAEOF'
wrk.method = os.getenv("PGO_METHOD")
wrk.path = os.getenv("PGO_PATH")
local f = os.getenv("PGO_BODY")
if f and f ~= "" then
  local h = assert(io.open(f, "rb")); wrk.body = h:read("*a"); h:close()
end
for k, v in string.gmatch(os.getenv("PGO_HEADERS") or "", "([^:|]+): ([^|]+)") do wrk.headers[k] = v end
LUAEOF

# start_demo [flags...]: the build's demo on a free loopback port (PORT; TLS_PORT when it has a
# TLS listener), DEMO_PID set
start_demo() {
  "$DIR/examples/demo/inferserve-demo" --listen 127.0.0.1:0 "$@" >"$WORK/demo.out" \
    2>"$WORK/demo.err" &
  DEMO_PID=$!
  local tls=0
  case " $* " in *" --tls-listen "*) tls=1 ;; esac
  PORT="" TLS_PORT=""
  for _ in $(seq 100); do
    PORT=$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$WORK/demo.out" | head -1)
    TLS_PORT=$(sed -n 's/.*with TLS at 127.0.0.1:\([0-9]*\).*/\1/p' "$WORK/demo.out" | head -1)
    if [ -n "$PORT" ] && { [ "$tls" = 0 ] || [ -n "$TLS_PORT" ]; }; then return 0; fi
    sleep 0.1
  done
  cat "$WORK/demo.err" >&2
  echo "$0: the demo did not start" >&2
  exit 1
}

# ---- the training run ---------------------------------------------------------------------
start_demo --tls-listen 127.0.0.1:0 --tls-cert "$WORK/c.pem" --tls-key "$WORK/k.pem"
URL=http://127.0.0.1:$PORT
JSON="Content-Type: application/json"

# http1 METHOD PATH BODY_FILE HEADERS [CONNS [BASE_URL]]: wrk, after one curl that must answer 200
http1() {
  local base=${6:-$URL} code
  local -a data=()
  [ -z "$3" ] || data=(--data-binary "@$WORK/$3")
  local -a hdr=()
  local IFS='|'
  for h in $4; do hdr+=(-H "$h"); done
  unset IFS
  code=$(curl -sk -o "$WORK/answer" -w '%{http_code}' -X "$1" "${hdr[@]}" "${data[@]}" "$base$2")
  [ "$code" = 200 ] || { echo "$0: $1 $2 answered $code: $(head -c 300 "$WORK/answer")" >&2; exit 1; }
  PGO_METHOD=$1 PGO_PATH=$2 PGO_BODY=${3:+$WORK/$3} PGO_HEADERS=$4 \
    wrk -t1 -c"${5:-8}" -d"$SECS" -s "$WORK/req.lua" "$base" >"$WORK/wrk.txt" 2>&1 ||
    { cat "$WORK/wrk.txt" >&2; exit 1; }
  ! grep -q "Non-2xx" "$WORK/wrk.txt" ||
    { cat "$WORK/wrk.txt" >&2; echo "$0: $1 $2 did not answer 200 every time" >&2; exit 1; }
  log "$1 $2 ($base): $(awk '/requests in/{print $1}' "$WORK/wrk.txt") requests"
}
# h2 PATH BODY_FILE HEADERS...: h2load over h2c, every answer must be a 200
h2() {
  local path=$1 body=$2
  shift 2
  local -a hdr=()
  for h in "$@"; do hdr+=(-H "$h"); done
  h2load -c8 -m4 -D "$SECS" -d "$WORK/$body" "${hdr[@]}" "$URL$path" >"$WORK/h2.txt" 2>&1 ||
    { cat "$WORK/h2.txt" >&2; exit 1; }
  grep -q "status codes: [0-9]* 2xx, 0 3xx, 0 4xx, 0 5xx" "$WORK/h2.txt" ||
    { cat "$WORK/h2.txt" >&2; echo "$0: $path over h2c did not answer 200 every time" >&2; exit 1; }
  log "h2c $path: $(sed -n 's/^requests: .* \([0-9]*\) succeeded.*/\1/p' "$WORK/h2.txt") requests"
}
BIN_LEN=$(cat "$WORK/v2_binary.len")
http1 POST /v2/models/simple/infer v2_compact.json "$JSON"
http1 POST /v2/models/simple/infer v2_dumps.json "$JSON"
http1 POST /v2/models/identity_fp32/infer v2_fp32.json "$JSON"
http1 POST /v2/models/simple_string/infer v2_bytes.json "$JSON"
http1 POST /v2/models/simple/infer v2_binary.bin \
  "Content-Type: application/octet-stream|Inference-Header-Content-Length: $BIN_LEN"
http1 POST /v2/models/slow/infer slow.json "$JSON" 4
http1 GET /v2/models/simple "" ""
http1 GET /v2/health/ready "" ""
http1 GET /v2/models/simple/stats "" ""
http1 GET /metrics "" ""
http1 POST /v2/models/half_plus_three/generate generate.json "$JSON"
http1 POST /openai/v1/chat/completions chat.json "$JSON"
http1 POST /openai/v1/embeddings embed.json "$JSON"
http1 POST /v1/models/simple:predict tfs_row.json "$JSON"
http1 POST /v1/models/simple:predict tfs_col.json "$JSON"
http1 POST /v1/projects/p/models/simple:predict tfs_row.json "$JSON"
http1 POST /grps/v1/infer/predict grps.json "$JSON"
http1 POST /v2/models/simple/infer v2_compact.json "$JSON" 8 "https://127.0.0.1:$TLS_PORT"
h2 /v2/models/simple/infer v2_compact.json "content-type: application/json"
GRPC=("content-type: application/grpc" "te: trailers")
h2 /inference.GRPCInferenceService/ModelInfer simple.grpc "${GRPC[@]}"
h2 /tensorflow.serving.PredictionService/Predict tf.grpc "${GRPC[@]}"
h2 /grps.protos.v1.GrpsService/Predict grps.grpc "${GRPC[@]}"

kill -INT "$DEMO_PID"
wait "$DEMO_PID" || { cat "$WORK/demo.err" >&2; echo "$0: the demo did not exit cleanly" >&2; exit 1; }
DEMO_PID=""
n=$(find "$DIR" -name '*.gcda' | wc -l)
[ "$n" -gt 0 ] || { echo "$0: the training wrote no profile (*.gcda) under $DIR" >&2; exit 1; }
log "profile: $n files"

# ---- the build with the profile -----------------------------------------------------------
step meson configure "$DIR" -Db_pgo=use
step ninja -C "$DIR"
grep -q -- '-fprofile-use' "$DIR/build.ninja" ||
  { echo "$0: meson did not pass -fprofile-use" >&2; exit 1; }
# the result answers as the instrumented build did
start_demo
got=$(curl -s -X POST -H "$JSON" --data-binary "@$WORK/v2_compact.json" \
  "http://127.0.0.1:$PORT/v2/models/simple/infer")
case $got in
  *'"name":"OUTPUT0","datatype":"INT32","shape":[1,16],"data":[2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17]'*) ;;
  *) echo "$0: the PGO build answered: $got" >&2; exit 1 ;;
esac
log "done: $DIR (profile-guided; meson install -C $DIR)"
