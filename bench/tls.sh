#!/usr/bin/env bash
# bench/tls.sh — TLS against plain text on the same demo, in one run (issue 18): one
# inferserve-demo (core 0) with a plain listener and a TLS one (a throw-away CA made here), then
#   V2 REST   wrk -t1 -c16 (bench/infer.lua: `simple`), http:// then https:// (ALPN http/1.1)
#   V2 gRPC   h2load -c16 -m1 ModelInfer `simple`, h2c then TLS (ALPN h2)
#   16 MiB    round trips of a 16 MiB binary tensor through identity_uint8 (HTTP/1.1, Python's
#             http.client over a plain and a TLS socket; the same client both ways), median
# with the load on core 1 and the demo's CPU time per request. Prints a Markdown section and
# appends it to bench/RESULTS.md (BENCH_RESULTS=- : stdout only).
#
# Environment: BUILD_DIR=build, BENCH_DURATION=5, BENCH_SERVER_CPU=0, BENCH_LOAD_CPU=1,
# BENCH_LARGE_ITERS=7, BENCH_RESULTS=bench/RESULTS.md. Every process started here is stopped
# on exit.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh" # cpu_ns, free_port, wait_port
ROOT=$(cd "$HERE/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
DUR=${BENCH_DURATION:-5}
SCPU=${BENCH_SERVER_CPU:-0}
LCPU=${BENCH_LOAD_CPU:-1}
ITERS=${BENCH_LARGE_ITERS:-7}
RESULTS_MD=${BENCH_RESULTS:-$HERE/RESULTS.md}
PY=/usr/bin/python3
DEMO=$BUILD_DIR/examples/demo/inferserve-demo
for t in wrk h2load taskset timeout openssl; do
  command -v $t >/dev/null || { echo "$t is missing: bench/install-deps.sh" >&2; exit 1; }
done
[ -x "$DEMO" ] || { echo "$DEMO is not built" >&2; exit 1; }
WORK=$(mktemp -d /tmp/isv-tls-bench.XXXXXX)
SRV_PID=""
cleanup() { [ -n "$SRV_PID" ] && kill "$SRV_PID" 2>/dev/null; wait 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT INT TERM

cd "$WORK"
openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 1 -subj /CN=bench-ca 2>/dev/null
openssl req -newkey rsa:2048 -nodes -keyout srv.key -out srv.csr -subj /CN=localhost 2>/dev/null
echo "subjectAltName=DNS:localhost,IP:127.0.0.1" >ext
openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out srv.pem -days 1 \
  -extfile ext 2>/dev/null
$PY "$HERE/isvbench.py" gen "$WORK" >/dev/null

# one loop, pinned to its core (the demo's default is a loop per core: bench/loops.sh)
taskset -c "$SCPU" "$DEMO" --listen 127.0.0.1:0 --threads 1 --tls-listen 127.0.0.1:0 \
  --tls-cert srv.pem --tls-key srv.key >demo.out 2>demo.err &
SRV_PID=$!
for _ in $(seq 100); do grep -q "with TLS" demo.out 2>/dev/null && break; sleep 0.05; done
PLAIN=$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' demo.out | head -1)
TLS=$(sed -n 's/.*with TLS at 127.0.0.1:\([0-9]*\).*/\1/p' demo.out | head -1)
[ -n "$PLAIN" ] && [ -n "$TLS" ] || { cat demo.err >&2; echo "the demo did not start" >&2; exit 1; }

rows=()
row() { rows+=("$1"); echo "$1" >&2; }

measure_wrk() { # $1 label $2 url
  local c0 c1 out rps
  c0=$(cpu_ns "$SRV_PID")
  out=$(timeout $((DUR + 30)) taskset -c "$LCPU" wrk -t1 -c16 -d"${DUR}s" --latency -s "$HERE/infer.lua" "$2")
  c1=$(cpu_ns "$SRV_PID")
  rps=$(echo "$out" | sed -n 's/Requests\/sec:[[:space:]]*\([0-9.]*\)/\1/p')
  local n; n=$(echo "$out" | sed -n 's/^[[:space:]]*\([0-9]*\) requests in.*/\1/p')
  local p99; p99=$(echo "$out" | awk '$1=="99%"{print $2}')
  local non2xx; non2xx=$(echo "$out" | sed -n 's/.*Non-2xx or 3xx responses:[[:space:]]*//p')
  row "| $1 | wrk -c16 | ${rps%.*} | $p99 | $(( (c1 - c0) / (n > 0 ? n : 1) / 1000 )) µs | ${non2xx:-0} |"
}
measure_h2load() { # $1 label $2 url
  local c0 c1 out rps n
  c0=$(cpu_ns "$SRV_PID")
  out=$(timeout $((DUR + 30)) taskset -c "$LCPU" h2load -c16 -m1 -D "$DUR" --warm-up-time 1 \
    -d "$WORK/simple.grpc" -H 'content-type: application/grpc' -H 'te: trailers' "$2" 2>&1)
  c1=$(cpu_ns "$SRV_PID")
  rps=$(echo "$out" | sed -n 's/.*finished in [0-9.]*s, \([0-9.]*\) req\/s.*/\1/p')
  n=$(echo "$out" | sed -n 's/^requests: \([0-9]*\) total.*/\1/p')
  local failed; failed=$(echo "$out" | sed -n 's/.* \([0-9]*\) failed, \([0-9]*\) errored.*/\1+\2/p')
  row "| $1 | h2load -c16 -m1 | ${rps%.*} | – | $(( (c1 - c0) / (n > 0 ? n : 1) / 1000 )) µs | ${failed:-?} |"
}

measure_wrk "V2 REST plain" "http://127.0.0.1:$PLAIN"
measure_wrk "V2 REST TLS" "https://127.0.0.1:$TLS"
measure_h2load "V2 gRPC h2c" "http://127.0.0.1:$PLAIN/inference.GRPCInferenceService/ModelInfer"
measure_h2load "V2 gRPC TLS" "https://127.0.0.1:$TLS/inference.GRPCInferenceService/ModelInfer"

LARGE=$(taskset -c "$LCPU" $PY - "$PLAIN" "$TLS" "$WORK/ca.pem" "$ITERS" "$SRV_PID" <<'EOF'
import http.client, json, os, ssl, statistics, sys, time
plain, tls, ca, iters, pid = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5]
n = 16 << 20
payload = os.urandom(n)
head = json.dumps({"inputs": [{"name": "INPUT0", "datatype": "UINT8", "shape": [1, n],
                               "parameters": {"binary_data_size": n}}],
                   "outputs": [{"name": "OUTPUT0", "parameters": {"binary_data": True}}]}).encode()
def cpu():
    f = open("/proc/%s/stat" % pid).read().split()
    return (int(f[13]) + int(f[14])) * 10_000_000
def run(conn):
    times = []
    c0 = cpu()
    for i in range(iters + 1):
        t = time.perf_counter()
        conn.request("POST", "/v2/models/identity_uint8/infer", body=head + payload,
                     headers={"Inference-Header-Content-Length": str(len(head)),
                              "Content-Type": "application/octet-stream"})
        r = conn.getresponse()
        body = r.read()
        if i:
            times.append(time.perf_counter() - t)
        assert r.status == 200 and body[int(r.getheader("Inference-Header-Content-Length")):] == payload
    return statistics.median(times), (cpu() - c0) / (iters + 1) / 1e6
ctx = ssl.create_default_context(cafile=ca)
for label, conn in (("plain", http.client.HTTPConnection("127.0.0.1", plain)),
                    ("TLS", http.client.HTTPSConnection("localhost", tls, context=ctx))):
    med, ms = run(conn)
    print("| 16 MiB round trip %s | http.client, %d after 1 | %.2f GB/s | %.1f ms (median) | %.1f ms | 0 |"
          % (label, iters, 2 * n / med / 1e9, med * 1e3, ms))
EOF
)
while IFS= read -r l; do row "$l"; done <<<"$LARGE"

LOAD=$(cut -d' ' -f1 /proc/loadavg)
{
  echo
  echo "## TLS against plain text — $(date -u '+%Y-%m-%d %H:%M') UTC at $(git -C "$ROOT" rev-parse --short HEAD)"
  echo
  echo "\`bench/tls.sh\` (BENCH_DURATION=$DUR): one demo on core $SCPU with a plain and a TLS listener"
  echo "(OpenSSL $(openssl version | awk '{print $2}'), RSA-2048 certificate, TLS 1.3), the load on core"
  echo "$LCPU; load average at the end $LOAD. Demo CPU per request from /proc (10 ms ticks)."
  echo
  echo "| path | client | req/s or GB/s | p99 / median | demo CPU per request | failed |"
  echo "|---|---|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
} >"$WORK/section.md"
cat "$WORK/section.md"
[ "$RESULTS_MD" = - ] || cat "$WORK/section.md" >>"$RESULTS_MD"
