-- wrk script: keep-alive POSTs of one grps REST predict (`POST /grps/v1/infer/predict`, the
-- default model `echo`, which answers the same payload): {"str_data":"hello grps"}.
wrk.method = "POST"
wrk.path = "/grps/v1/infer/predict"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"str_data":"hello grps"}'
