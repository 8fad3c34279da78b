-- wrk script for bench/batching.sh: keep-alive POSTs of one row of FP32 [1,4] to the model in
-- the BENCH_MODEL environment variable (cost or cost_batched).
wrk.method = "POST"
wrk.path = "/v2/models/" .. (os.getenv("BENCH_MODEL") or "cost") .. "/infer"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"inputs":[{"name":"INPUT0","shape":[1,4],"datatype":"FP32","data":[1,2,3,4]}]}'
