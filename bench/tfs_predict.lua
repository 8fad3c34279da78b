-- wrk script: keep-alive POSTs of one TensorFlow Serving REST predict (the `simple` model, one
-- instance of 16+16 INT32 by name): the same model and numbers as infer.lua, the row format.
wrk.method = "POST"
wrk.path = "/v1/models/simple:predict"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"instances":[{"INPUT0":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16],' ..
  '"INPUT1":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]}]}'
