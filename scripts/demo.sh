#!/usr/bin/env bash
# Install dependencies, build, and start the demo server (Ctrl-C stops it).
#   scripts/demo.sh [--listen HOST:PORT]...     (default 127.0.0.1:8000 and 127.0.0.1:8001)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh build
exec build/examples/demo/inferserve-demo "$@"
