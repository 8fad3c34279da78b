#!/usr/bin/env bash
# scripts/container-check.sh — builds deploy/Containerfile with podman, runs the image, and
# checks what it answers: the container image is tested as a user would build and run it.
#
#   scripts/container-check.sh            # ~3 min on 2 cores (the build stage installs the
#                                         # build's packages and trains the production build)
#
# 1. Installs podman, runc and mmdebstrap when missing (Debian packages, as install-deps.sh does).
# 2. The Containerfile's base images (debian:12, debian:12-slim): when the engine has none and
#    cannot pull them (a machine that reaches Debian's archive but no registry), they are made
#    from the Debian archive with mmdebstrap and imported under the names the Containerfile asks
#    for, so that the file is built unchanged.
# 3. podman build from the repository root (.dockerignore keeps build directories out), then
#    podman run with a published loopback port, and with real clients: readiness (HTTP/1.1 and
#    h2c), V2 REST `simple` (the sums and differences), the server's metadata, a malformed body
#    (400 with its message), and the process's user (unprivileged, 65532).
#
# runc, not the engine's default runtime: crun 1.8 (Debian 12's) refuses hosts whose cgroups mix
# v1 controllers with a v2 mount ("cgroups in hybrid mode not supported"). The container's file
# and process limits are the caller's own hard limits (--ulimit; processes at most 32768, what
# podman as root keeps for itself): podman's defaults ask for more than a caller without
# CAP_SYS_RESOURCE may set.
# Environment: IMAGE (localhost/inferserve-demo:check); KEEP_IMAGE=1 keeps the image (it and the
# untagged build stage it made — gigabytes — are removed otherwise; untagged images that were
# there before are left alone); NO_BUILD=1 checks IMAGE as it is. Tested as root.
# Exits non-zero, naming the step that failed, on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh # free_port, quietly
IMAGE=${IMAGE:-localhost/inferserve-demo:check}
NAME=isv-container-check-$$
log() { echo "[container-check $(date -u +%H:%M:%S)] $*" >&2; }
fail() { log "FAILED: $*"; exit 1; }
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"

need=()
for t in podman runc mmdebstrap curl; do # runc is in /usr/sbin: not on every user's PATH
  command -v "$t" >/dev/null || [ -x "/usr/sbin/$t" ] || need+=("$t")
done
if [ ${#need[@]} -gt 0 ]; then
  log "installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # with podman's recommended packages: its network backend and user-namespace tools come so
  quietly $SUDO apt-get update -qq && quietly $SUDO apt-get install -y -qq "${need[@]}" uidmap ||
    fail "apt-get install ${need[*]}"
fi
PODMAN=(podman --runtime runc) # by name: podman finds it where its configuration says

WORK=$(mktemp -d /tmp/isv-container-check.XXXXXX)
# untagged images there before us: not ours to remove (the build stage's image is untagged too)
"${PODMAN[@]}" images -q -f dangling=true >"$WORK/untagged.before" 2>/dev/null || true
cleanup() {
  "${PODMAN[@]}" rm -f "$NAME" >/dev/null 2>&1 || true
  if [ "${KEEP_IMAGE:-}" != 1 ]; then
    "${PODMAN[@]}" rmi -f "$IMAGE" >/dev/null 2>&1 || true
    for id in $("${PODMAN[@]}" images -q -f dangling=true 2>/dev/null); do
      grep -qx "$id" "$WORK/untagged.before" || "${PODMAN[@]}" rmi -f "$id" >/dev/null 2>&1 || true
    done
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- the base images ----------------------------------------------------------------------
base_image() { # NAME (as the Containerfile's FROM names it), SLIM (1: no docs, man pages, locales)
  "${PODMAN[@]}" image exists "$1" && return 0
  "${PODMAN[@]}" pull -q "$1" >/dev/null 2>&1 && return 0
  log "$1: no registry here; made from the Debian archive (mmdebstrap)"
  local slim=()
  [ "$2" = 1 ] && slim=(--dpkgopt='path-exclude=/usr/share/man/*'
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright'
    --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/info/*')
  printf '%s\n' 'deb http://deb.debian.org/debian bookworm main' \
    'deb http://deb.debian.org/debian bookworm-updates main' \
    'deb http://deb.debian.org/debian-security bookworm-security main' >"$WORK/sources.list"
  $SUDO mmdebstrap --quiet --variant=minbase --include=ca-certificates --format=tar "${slim[@]}" \
    --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin' \
    bookworm "$WORK/base.tar" - <"$WORK/sources.list" || fail "mmdebstrap for $1"
  "${PODMAN[@]}" import -q --change 'CMD ["bash"]' "$WORK/base.tar" "$1" >/dev/null ||
    fail "podman import $1"
  rm -f "$WORK/base.tar"
}
[ "${NO_BUILD:-}" = 1 ] || for from in $(sed -n 's/^FROM \([^ ]*\).*/\1/p' deploy/Containerfile); do
  case "$from" in *slim*) base_image "$from" 1 ;; *) base_image "$from" 0 ;; esac
done

# ---- build and run ------------------------------------------------------------------------
if [ "${NO_BUILD:-}" = 1 ]; then
  "${PODMAN[@]}" image exists "$IMAGE" || fail "NO_BUILD=1: no image $IMAGE"
else
  log "podman build -f deploy/Containerfile -t $IMAGE ."
  t0=$(date +%s)
  "${PODMAN[@]}" build --pull=never -f deploy/Containerfile -t "$IMAGE" . >"$WORK/build.log" 2>&1 ||
    { tail -40 "$WORK/build.log" >&2; fail "podman build"; }
  log "built in $(($(date +%s) - t0)) s"
  # the production build ran whole: trained, and built with the profile (scripts/pgo.sh's log)
  grep -q '^\[pgo .*\] profile: [1-9]' "$WORK/build.log" &&
    grep -q '^\[pgo .*\] done: /build' "$WORK/build.log" ||
    { grep '^\[pgo' "$WORK/build.log" >&2; fail "scripts/pgo.sh in the build"; }
fi

PORT=$(free_port)
# the caller's hard limits, and podman 4.3 as root lowers its own process limit to 32768
lim() { local v; v=$(ulimit "-H$1"); [ "$v" = unlimited ] || [ "$v" -gt "$2" ] && v=$2; echo "$v"; }
NOFILE=$(lim n 1048576) NPROC=$(lim u 32768)
"${PODMAN[@]}" run -d --name "$NAME" --ulimit "nofile=$NOFILE:$NOFILE" \
  --ulimit "nproc=$NPROC:$NPROC" -p "127.0.0.1:$PORT:8000" "$IMAGE" >/dev/null ||
  fail "podman run"
URL=http://127.0.0.1:$PORT
for _ in $(seq 100); do
  [ "$(curl -s -o /dev/null -w '%{http_code}' "$URL/v2/health/ready" || true)" = 200 ] && break
  sleep 0.1
done

checks=0
check() { # WHAT EXPECTED ACTUAL
  [ "$2" = "$3" ] || { "${PODMAN[@]}" logs "$NAME" 2>&1 | tail -20 >&2; fail "$1: expected $2, got $3"; }
  checks=$((checks + 1))
}
check "ready over HTTP/1.1" 200 "$(curl -s -o /dev/null -w '%{http_code}' "$URL/v2/health/ready")"
check "ready over h2c" "200 2" "$(curl -s --http2-prior-knowledge -o /dev/null \
  -w '%{http_code} %{http_version}' "$URL/v2/health/ready")"
BODY='{"inputs":[{"name":"INPUT0","shape":[1,16],"datatype":"INT32","data":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]},{"name":"INPUT1","shape":[1,16],"datatype":"INT32","data":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]}]}'
OUT=$(curl -s -X POST -H 'Content-Type: application/json' --data-binary "$BODY" \
  "$URL/v2/models/simple/infer" | /usr/bin/python3 -c '
import json, sys
d = {o["name"]: o["data"] for o in json.load(sys.stdin)["outputs"]}
print(d["OUTPUT0"] == list(range(2, 18)) and d["OUTPUT1"] == list(range(0, 16)))')
check "simple's sums and differences" True "$OUT"
check "server metadata" libinferserve "$(curl -s "$URL/v2" | /usr/bin/python3 -c \
  'import json, sys; print(json.load(sys.stdin)["name"])')"
check "a malformed body" "400 malformed JSON" "$(curl -s -o "$WORK/bad" -w '%{http_code}' \
  -X POST --data-binary '{"inputs": [' "$URL/v2/models/simple/infer") $(/usr/bin/python3 -c \
  'import json, sys; print(json.load(open(sys.argv[1]))["error"][:14])' "$WORK/bad")"
check "the process's user" 65532 "$("${PODMAN[@]}" exec "$NAME" id -u)"
log "$checks checks passed: $IMAGE ($("${PODMAN[@]}" image inspect -f '{{.Size}}' "$IMAGE" |
  awk '{printf "%.0f MB", $1 / 1e6}'))"
