#!/usr/bin/env bash
# Installs the Debian packages libinferserve needs to build, test and fuzz. Idempotent: it
# only calls apt-get when a package is missing. Run as root (or with sudo available).
#
#   scripts/install-deps.sh           # everything: build, tests, fuzzing, benchmarks, examples
#   scripts/install-deps.sh --build   # only what the library and its demo need to build, and
#                                     # the clients scripts/pgo.sh trains the production build
#                                     # with (deploy/Containerfile's build stage)
set -euo pipefail

# What building needs (--build installs these alone): the compilers and meson, the libraries
# the library links, nanopb's generator and protoc with protobuf's own .proto files
# (proto/meson.build imports google/protobuf/*.proto), and scripts/pgo.sh's training clients
# (wrk, h2load, curl, openssl; python3-protobuf for bench/isvbench.py's gRPC bodies).
BUILD_PKGS=(
  build-essential g++ meson ninja-build pkg-config
  libuv1-dev libnghttp2-dev node-llhttp nanopb libnanopb-dev zlib1g-dev libssl-dev openssl
  protobuf-compiler libprotobuf-dev python3 python3-protobuf
  curl wrk nghttp2-client
)

# and what testing, fuzzing, benchmarking and the other examples add
PKGS=(
  "${BUILD_PKGS[@]}"
  libcmocka-dev libjansson-dev
  clang libclang-rt-14-dev
  python3-requests python3-pytest
  python3-grpcio protobuf-compiler-grpc
  haproxy nginx python3-yaml libmicrohttpd-dev chromium
  doxygen
  libxgboost-dev python3-xgboost python3-sklearn python3-numpy
  libtorch-dev python3-torch
  prometheus
)

# Node and npm (the OpenAI and gRPC reflection tests install real clients from npm): Debian's
# packages, unless a Node with its npm is there already — NodeSource's nodejs bundles npm and
# conflicts with Debian's npm package, so asking for both would fail.
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  PKGS+=(nodejs npm)
fi

case "${1:-}" in
  "") ;;
  --build) PKGS=("${BUILD_PKGS[@]}") ;;
  *) echo "usage: $0 [--build]" >&2; exit 2 ;;
esac

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PKGS[@]} packages present"
  exit 0
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
