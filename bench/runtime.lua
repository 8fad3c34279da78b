-- wrk script for bench/runtimes.sh: keep-alive POSTs of the body in the file BENCH_BODY (a V2
-- REST request of one row) to BENCH_PATH (/v2/models/NAME/infer). No response callback.
local f = assert(io.open(os.getenv("BENCH_BODY"), "rb"))
wrk.body = f:read("*a")
f:close()
wrk.method = "POST"
wrk.path = os.getenv("BENCH_PATH")
wrk.headers["Content-Type"] = "application/json"
