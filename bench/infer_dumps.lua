-- wrk script: bench/infer.lua's request written as Python's json.dumps writes it by default, one
-- space after every ',' and ':' — the body tritonclient's HTTP client and requests' json= send.
-- The same model, shapes, datatypes and values; only the separators differ.
wrk.method = "POST"
wrk.path = "/v2/models/simple/infer"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"inputs": [' ..
  '{"name": "INPUT0", "shape": [1, 16], "datatype": "INT32", "data": [1, 2, 3, 4, 5, 6, 7, 8, ' ..
  '9, 10, 11, 12, 13, 14, 15, 16]}, ' ..
  '{"name": "INPUT1", "shape": [1, 16], "datatype": "INT32", "data": [1, 1, 1, 1, 1, 1, 1, 1, ' ..
  '1, 1, 1, 1, 1, 1, 1, 1]}]}'
