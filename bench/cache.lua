-- wrk script for bench/cache.sh: keep-alive POSTs of one row of FP32 [1,4] to the model in
-- BENCH_MODEL. BENCH_UNIQUE=1 makes every request's row new (a response cache miss each time:
-- the first element counts up, per thread, from the thread's own offset); else every request
-- sends the same row (after the first, a hit).
local model = os.getenv("BENCH_MODEL") or "cost_cached"
local unique = os.getenv("BENCH_UNIQUE") == "1"
local n = 0
local offset = 0

function setup(thread)
  offset = offset + 1
  thread:set("offset", offset * 1000000000)
end

function init(args)
  n = offset or 0
end

wrk.method = "POST"
wrk.path = "/v2/models/" .. model .. "/infer"
wrk.headers["Content-Type"] = "application/json"
local same = '{"inputs":[{"name":"INPUT0","shape":[1,4],"datatype":"FP32","data":[1,2,3,4]}]}'

function request()
  if not unique then
    return wrk.format(nil, nil, nil, same)
  end
  n = n + 1
  return wrk.format(nil, nil, nil, string.format(
    '{"inputs":[{"name":"INPUT0","shape":[1,4],"datatype":"FP32","data":[%d,2,3,4]}]}', n))
end
