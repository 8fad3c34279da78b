#!/bin/sh
# bench/install-deps.sh — the Debian packages bench/run.sh needs (Debian 12). Idempotent: only
# missing packages are installed; nothing is installed when everything is present.
# (Building libinferserve itself needs scripts/install-deps.sh.)
#
#   wrk               HTTP/1.1 load generator (LuaJIT scripts)
#   nghttp2-client    h2load (HTTP/2 and gRPC load)
#   nginx             the reference HTTP server (run by run.sh from a generated config; installing
#                     the package may also enable the system nginx service, which the
#                     benchmark does not use)
#   linux-perf        profiles of the missed targets (optional: run.sh works without it)
#   python3-grpcio python3-protobuf protobuf-compiler   the gRPC clients and payload generator
#   gcc libc6-dev     bench/memcpy_bw.c
#   libnghttp2-dev    bench/grpc_rt.c (the lean gRPC client for the 16 MiB round trips)
#   curl procps util-linux coreutils   curl, pgrep, taskset, timeout
#   libyajl-dev libjansson-dev libjson-c-dev   bench/json/run.sh (the JSON codec's references)
#   valgrind          bench/instructions.sh (instructions per request under callgrind)
set -eu

PKGS="wrk nghttp2-client nginx linux-perf python3-grpcio python3-protobuf protobuf-compiler
gcc libc6-dev libnghttp2-dev curl procps util-linux coreutils libyajl-dev libjansson-dev
libjson-c-dev valgrind"

missing=""
for p in $PKGS; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing="$missing $p"
  fi
done
if [ -z "$missing" ]; then
  echo "bench/install-deps.sh: everything is installed"
  exit 0
fi
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
echo "bench/install-deps.sh: installing$missing"
$SUDO apt-get update
# shellcheck disable=SC2086
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends $missing
