-- wrk script: bench/infer.lua's request with values of 3 to 5 digits, as token ids and counts
-- are, where infer.lua's are 1 and 2 digits: the other side of the JSON integer paths that take
-- small values at once (the reader's four one-digit elements a word, the writer's table under
-- 100). The same model, shapes and datatypes; only the digits differ.
wrk.method = "POST"
wrk.path = "/v2/models/simple/infer"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"inputs":[' ..
  '{"name":"INPUT0","shape":[1,16],"datatype":"INT32","data":[10234,20456,3078,40912,5123,' ..
  '61345,7067,28189,9901,31012,1123,42234,13345,24456,15567,36678]},' ..
  '{"name":"INPUT1","shape":[1,16],"datatype":"INT32","data":[101,202,303,404,505,606,707,808,' ..
  '909,1010,1111,1212,1313,1414,1515,1616]}]}'
