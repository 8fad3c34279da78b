#!/usr/bin/env bash
# Installs the Debian packages libinferserve needs to build, test and fuzz. Idempotent: it
# only calls apt-get when a package is missing. Run as root (or with sudo available).
set -euo pipefail

PKGS=(
  build-essential g++ meson ninja-build pkg-config
  libuv1-dev libnghttp2-dev node-llhttp nanopb libnanopb-dev zlib1g-dev
  libcmocka-dev libjansson-dev
  clang libclang-rt-14-dev
  curl python3 python3-requests python3-pytest
  python3-grpcio python3-protobuf protobuf-compiler protobuf-compiler-grpc nghttp2-client
  wrk haproxy nginx python3-yaml libmicrohttpd-dev chromium
  libssl-dev openssl
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
