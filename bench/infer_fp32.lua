-- wrk script: an identity_fp32 request of 64 FP32 values of four decimals (a [1, 64] tensor),
-- written as Python's json.dumps writes it (tritonclient's and requests' bodies): what a float
-- tensor costs to read and to answer, where bench/infer.lua's values are small integers.
wrk.method = "POST"
wrk.path = "/v2/models/identity_fp32/infer"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"inputs": [{"name": "INPUT0", "shape": [1, 64], "datatype": "FP32", "data": [-0.3523, ' ..
  '-0.6983, 0.3019, -0.8551, 0.0718, -0.2686, -0.884, 0.0149, -0.925, -0.1327, -0.8603, ' ..
  '-0.8186, -0.151, 0.6537, -0.7524, -0.5535, 0.2549, 0.8954, 0.1542, -0.2066, 0.9525, ' ..
  '-0.9068, 0.7169, -0.4208, -0.7115, -0.7644, -0.383, 0.6323, -0.6385, 0.1632, 0.2778, ' ..
  '-0.2552, 0.0955, -0.8744, -0.8808, -0.5881, 0.3608, -0.1448, -0.3717, 0.1711, -0.0936, ' ..
  '-0.4005, 0.5888, 0.398, -0.5118, 0.1488, 0.0504, 0.7503, 0.4589, -0.4241, 0.9603, ' ..
  '-0.7639, -0.1638, 0.5143, -0.696, -0.0221, -0.9216, 0.3364, 0.5291, 0.1461, 0.751, ' ..
  '-0.3725, 0.3906, 0.1887]}]}'
