-- wrk script: keep-alive POSTs of one KServe V2 infer request (the `simple` model, 16+16 INT32).
-- The same script drives inferserve-demo and the nginx reference (which ignores the body).
-- No response() callback: wrk then counts non-2xx answers itself at no per-request Lua cost.
wrk.method = "POST"
wrk.path = "/v2/models/simple/infer"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"inputs":[' ..
  '{"name":"INPUT0","shape":[1,16],"datatype":"INT32","data":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]},' ..
  '{"name":"INPUT1","shape":[1,16],"datatype":"INT32","data":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]}]}'
