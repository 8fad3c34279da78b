#!/usr/bin/env bash
# Triton's own client example programs (tritonclient, Python) against the demo, unmodified: the
# conformance sweep of issue 16. Not part of the test suite (it needs a checkout of Triton's
# client repository, which the project does not vendor); its results are recorded in
# tests/integration/README.md.
#
#   tests/integration/triton_examples.sh CLIENT_CHECKOUT [COMMON_CHECKOUT]
#
# CLIENT_CHECKOUT: a checkout of github.com/triton-inference-server/client. COMMON_CHECKOUT
# (optional): one of triton-inference-server/common, whose protobuf/ holds the .proto files the
# client's build uses; without it the copies under the client's src/rust/triton-client/proto are
# used. The library is made importable from Debian packages only (no pip): its Python sources
# go on PYTHONPATH and the gRPC modules are generated with protoc and grpc_python_plugin, named
# and patched as the client's build_wheel.py does.
#
# Needs: /usr/bin/python3 with python3-grpcio, python3-protobuf, python3-numpy,
# python3-geventhttpclient, python3-gevent, python3-rapidjson, python3-aiohttp,
# python3-packaging; protobuf-compiler and protobuf-compiler-grpc. The demo (INFERSERVE_DEMO,
# default build/examples/demo/inferserve-demo) listens on HTTP_PORT and GRPC_PORT (default
# 8000 and 8001, the examples' defaults; every port speaks both protocols); programs get
# "-u localhost:PORT", except memory_growth_test.py, which has no such flag and runs only on
# the default ports. Prints one line per program — PASS, FAIL (with the first error line) or
# SKIP — and a markdown table at the end (TABLE=path writes it there too). Exit status: the
# number of failures (capped at 100).
set -uo pipefail

CLIENT=${1:?usage: $0 CLIENT_CHECKOUT [COMMON_CHECKOUT]}
COMMON=${2:-}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DEMO=${INFERSERVE_DEMO:-$ROOT/build/examples/demo/inferserve-demo}
HTTP_PORT=${HTTP_PORT:-8000}
GRPC_PORT=${GRPC_PORT:-8001}
PY=/usr/bin/python3
EX=$CLIENT/src/python/examples
LIB=$CLIENT/src/python/library/tritonclient

[ -d "$EX" ] && [ -d "$LIB" ] || { echo "no src/python/{examples,library} in $CLIENT" >&2; exit 100; }
[ -x "$DEMO" ] || { echo "no demo at $DEMO (build it, or set INFERSERVE_DEMO)" >&2; exit 100; }
if [ -n "$COMMON" ]; then PROTO=$COMMON/protobuf; else PROTO=$CLIENT/src/rust/triton-client/proto; fi
for f in grpc_service.proto model_config.proto; do
  [ -f "$PROTO/$f" ] || { echo "no $PROTO/$f" >&2; exit 100; }
done
PLUGIN=$(command -v grpc_python_plugin) || { echo "grpc_python_plugin missing (apt: protobuf-compiler-grpc)" >&2; exit 100; }

WORK=$(mktemp -d /tmp/triton-examples.XXXXXX)
DEMO_PID=
cleanup() {
  [ -n "$DEMO_PID" ] && kill "$DEMO_PID" 2>/dev/null && wait "$DEMO_PID" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT

# ---- the library, importable -------------------------------------------------------------
cp -r "$LIB" "$WORK/tritonclient"
G=$WORK/tritonclient/grpc
protoc -I"$PROTO" --python_out="$G" --grpc_out="$G" --plugin=protoc-gen-grpc="$PLUGIN" \
  "$PROTO/grpc_service.proto" "$PROTO/model_config.proto" || exit 100
mv "$G/grpc_service_pb2.py" "$G/service_pb2.py"
mv "$G/grpc_service_pb2_grpc.py" "$G/service_pb2_grpc.py"
rm -f "$G/model_config_pb2_grpc.py"
sed -i -E 's/^import ([^ ]*)_pb2 as ([^ ]*)$/from tritonclient.grpc import \1_pb2 as \2/' \
  "$G/service_pb2.py" "$G/model_config_pb2.py"
sed -i -E 's/^import grpc_([^ ]*)_pb2 as ([^ ]*)$/from tritonclient.grpc import \1_pb2 as \2/' \
  "$G/service_pb2_grpc.py"
export PYTHONPATH=$WORK
$PY -c 'import tritonclient.grpc, tritonclient.http, tritonclient.grpc.aio, tritonclient.http.aio, tritonclient.utils.shared_memory' \
  || { echo "tritonclient is not importable (see above: a missing Debian package?)" >&2; exit 100; }

# ---- the demo ----------------------------------------------------------------------------
"$DEMO" --listen "127.0.0.1:$HTTP_PORT" --listen "127.0.0.1:$GRPC_PORT" \
  --server-name triton >"$WORK/demo.log" 2>&1 &
DEMO_PID=$!
for _ in $(seq 50); do
  curl -sf "http://127.0.0.1:$HTTP_PORT/v2/health/ready" >/dev/null && break
  sleep 0.1
done
curl -sf "http://127.0.0.1:$HTTP_PORT/v2/health/ready" >/dev/null \
  || { echo "the demo did not start:" >&2; cat "$WORK/demo.log" >&2; exit 100; }

# ---- the programs ------------------------------------------------------------------------
# name|arguments (PORT_H / PORT_G replaced) — or name|SKIP reason
PROGRAMS=(
  "simple_http_health_metadata.py|-u localhost:PORT_H"
  "simple_http_infer_client.py|-u localhost:PORT_H"
  "simple_http_async_infer_client.py|-u localhost:PORT_H"
  "simple_http_aio_infer_client.py|-u localhost:PORT_H"
  "simple_http_string_infer_client.py|-u localhost:PORT_H"
  "simple_http_sequence_sync_infer_client.py|-u localhost:PORT_H"
  "simple_http_sequence_sync_infer_client.py|-u localhost:PORT_H -d"
  "simple_http_model_control.py|-u localhost:PORT_H"
  "simple_http_shm_client.py|-u localhost:PORT_H"
  "simple_http_shm_string_client.py|-u localhost:PORT_H"
  "reuse_infer_objects_client.py|-u localhost:PORT_H"
  "reuse_infer_objects_client.py|-u localhost:PORT_G -i grpc"
  "simple_grpc_health_metadata.py|-u localhost:PORT_G"
  "simple_grpc_infer_client.py|-u localhost:PORT_G"
  "simple_grpc_async_infer_client.py|-u localhost:PORT_G"
  "simple_grpc_aio_infer_client.py|-u localhost:PORT_G"
  "simple_grpc_string_infer_client.py|-u localhost:PORT_G"
  "simple_grpc_sequence_sync_infer_client.py|-u localhost:PORT_G"
  "simple_grpc_sequence_sync_infer_client.py|-u localhost:PORT_G -d"
  "simple_grpc_sequence_stream_infer_client.py|-u localhost:PORT_G"
  "simple_grpc_sequence_stream_infer_client.py|-u localhost:PORT_G -d"
  "simple_grpc_aio_sequence_stream_infer_client.py|-u localhost:PORT_G"
  "simple_grpc_aio_sequence_stream_infer_client.py|-u localhost:PORT_G -d"
  "simple_grpc_custom_args_client.py|-u localhost:PORT_G"
  "simple_grpc_custom_repeat.py|-u localhost:PORT_G"
  "simple_grpc_keepalive_client.py|-u localhost:PORT_G"
  "simple_grpc_model_control.py|-u localhost:PORT_G"
  "simple_grpc_shm_client.py|-u localhost:PORT_G"
  "simple_grpc_shm_string_client.py|-u localhost:PORT_G"
  "grpc_explicit_byte_content_client.py|-u localhost:PORT_G"
  "grpc_explicit_int_content_client.py|-u localhost:PORT_G"
  "grpc_explicit_int8_content_client.py|-u localhost:PORT_G"
  "memory_growth_test.py|-i http -r 20"
  "memory_growth_test.py|-i grpc -r 20"
  "simple_http_cudashm_client.py|SKIP needs a GPU (CUDA shared memory)"
  "simple_grpc_cudashm_client.py|SKIP needs a GPU (CUDA shared memory)"
  "grpc_client.py|SKIP image model (densenet_onnx)"
  "grpc_image_client.py|SKIP image model"
  "image_client.py|SKIP image model"
  "ensemble_image_client.py|SKIP image model (ensemble)"
)

TABLE_ROWS=()
pass=0 fail=0 skip=0
for entry in "${PROGRAMS[@]}"; do
  prog=${entry%%|*}
  args=${entry#*|}
  args=${args//PORT_H/$HTTP_PORT}
  args=${args//PORT_G/$GRPC_PORT}
  label="$prog${args:+ $args}"
  if [[ $args == SKIP* ]]; then
    label=$prog
    result="SKIP"
    detail=${args#SKIP }
  elif [ ! -f "$EX/$prog" ]; then
    result="SKIP"
    detail="not in this checkout"
  elif [[ $prog == memory_growth_test.py ]] && { [ "$HTTP_PORT" != 8000 ] || [ "$GRPC_PORT" != 8001 ]; }; then
    result="SKIP"
    detail="fixed ports 8000/8001"
  else
    # shellcheck disable=SC2086  # args are words
    out=$(cd "$EX" && timeout 120 "$PY" "$prog" $args 2>&1)
    rc=$?
    echo "$out" >"$WORK/$(echo "$label" | tr ' /:' '___').log"
    if [ $rc -eq 0 ] && ! grep -qE '^(FAILED|error:)' <<<"$out"; then
      result="PASS"
      detail=""
    else
      result="FAIL"
      # the first line that says what went wrong: an exception, "FAILED", an "expected" dump
      detail=$(grep -m1 -E 'Exception:|Error:|^FAILED|^error|expected|unexpected' <<<"$out" \
               || tail -n1 <<<"$out")
      [ $rc -eq 124 ] && detail="timed out after 120 s"
      detail=$(cut -c1-300 <<<"$detail")
    fi
  fi
  case $result in PASS) pass=$((pass + 1)) ;; FAIL) fail=$((fail + 1)) ;; *) skip=$((skip + 1)) ;; esac
  printf '%-4s %s%s\n' "$result" "$label" "${detail:+ — $detail}"
  TABLE_ROWS+=("| \`$label\` | $result | ${detail//|/\\|} |")
done

{
  echo "| program | result | first error / reason |"
  echo "|---|---|---|"
  printf '%s\n' "${TABLE_ROWS[@]}"
} >"$WORK/table.md"
echo
cat "$WORK/table.md"
[ -n "${TABLE:-}" ] && cp "$WORK/table.md" "$TABLE"
echo
echo "$pass passed, $fail failed, $skip skipped"
exit $((fail > 100 ? 100 : fail))
