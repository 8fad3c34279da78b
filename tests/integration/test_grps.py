"""grps (PROTOCOLS.md §5, seed 002) against the demo: /grps/v1 over HTTP/1.1 and h2c with
requests and curl, grps.protos.v1.GrpsService with grpcio (stubs generated from proto/grps.proto
at test time). The demo's grps models (examples/demo/zoo.h): echo (the default model: every
payload back in the kind it came), echo_native (native mode), streamer (N messages)."""
import base64
import json
import re
import socket
import struct
import subprocess
import time

import grpc
import pytest
import requests

from grpc_stubs import _grpc_channels, channel, make_channel, protos  # noqa: F401 (fixtures)
from isvtest import TIMEOUT

JSON = {"Content-Type": "application/json"}
OK = {"code": 200, "msg": "OK", "status": "SUCCESS"}


def predict(demo, body, query="", headers=JSON, **kw):
    data = body if isinstance(body, (bytes, str)) else json.dumps(body)
    return requests.post(demo.base + "/grps/v1/infer/predict" + query, data=data,
                         headers=headers, timeout=TIMEOUT, **kw)


def failure(resp, code, text):
    """resp is a grps failure: HTTP status == status.code == code, msg contains text."""
    assert resp.status_code == code, resp.text
    st = resp.json()["status"]
    assert st["code"] == code and st["status"] == "FAILURE", st
    assert text in st["msg"], st["msg"]
    return st["msg"]


# ---- HTTP: health, metadata, metrics ----------------------------------------------------------
@pytest.mark.parametrize("what", ["live", "ready"])
def test_health(demo, what):
    r = requests.get(demo.base + "/grps/v1/health/" + what, timeout=TIMEOUT)
    assert r.status_code == 200 and r.json() == {"status": OK}


def test_offline_drains_every_protocol_and_online_restores(start_demo):
    d = start_demo()
    get = lambda p: requests.get(d.base + p, timeout=TIMEOUT)  # noqa: E731
    assert get("/grps/v1/health/offline").json() == {"status": OK}
    failure(get("/grps/v1/health/ready"), 503, "offline")
    assert get("/v2/health/ready").status_code == 503
    assert get("/grps/v1/health/live").status_code == 200  # alive, only not ready
    # requests are still served while offline: only load balancers' traffic drains
    assert predict(d, {"str_data": "still"}).json()["str_data"] == "still"
    assert get("/grps/v1/health/online").status_code == 200
    assert get("/grps/v1/health/ready").status_code == 200
    assert get("/v2/health/ready").status_code == 200


def test_server_metadata_is_yaml_in_str_data(demo):
    r = requests.get(demo.base + "/grps/v1/metadata/server", timeout=TIMEOUT)
    assert r.status_code == 200
    text = r.json()["str_data"]
    assert 'default_model: "echo"' in text
    assert '- name: "streamer"\n    versions: ["1.0.0"]' in text
    assert "ready: true" in text


@pytest.mark.parametrize("name", ["echo", "echo-1.0.0"])
def test_model_metadata(demo, name):
    r = requests.post(demo.base + "/grps/v1/metadata/model", json={"str_data": name},
                      timeout=TIMEOUT)
    assert r.status_code == 200, r.text
    text = r.json()["str_data"]
    assert 'name: "echo"\nversion: "1.0.0"' in text and "open_io: true" in text


def test_model_metadata_of_a_declared_model_names_grps_dtypes(demo):
    r = requests.post(demo.base + "/grps/v1/metadata/model", json={"str_data": "simple"},
                      timeout=TIMEOUT)
    text = r.json()["str_data"]
    assert '- name: "INPUT0"\n    dtype: DT_INT32\n    shape: [-1, 16]' in text


def test_model_metadata_unknown_model(demo):
    r = requests.post(demo.base + "/grps/v1/metadata/model", json={"str_data": "nope-2"},
                      timeout=TIMEOUT)
    failure(r, 404, "Request for unknown model: 'nope-2' is not found")


@pytest.mark.parametrize("path", ["/", "/grps/v1/monitor/metrics"])
def test_metrics_pages(demo, path):
    r = requests.get(demo.base + path, timeout=TIMEOUT)
    assert r.status_code == 200 and "isv_requests_total" in r.text


def test_unknown_grps_path_in_grps_shape(demo):
    r = requests.get(demo.base + "/grps/v1/nothing/here", timeout=TIMEOUT)
    failure(r, 404, "/grps/v1/nothing/here")


def test_wrong_method_in_grps_shape(demo):
    r = requests.get(demo.base + "/grps/v1/infer/predict", timeout=TIMEOUT)
    failure(r, 405, "")
    assert "POST" in r.headers["Allow"]


# ---- HTTP: predict, every payload kind ----------------------------------------------------------
def test_str_data_default_model(demo):
    r = predict(demo, {"str_data": "hello grps"})
    assert r.status_code == 200
    assert r.json() == {"status": OK, "str_data": "hello grps"}


@pytest.mark.parametrize("body,query", [({"model": "echo-1.0.0", "str_data": "x"}, ""),
                                        ({"model": "echo", "str_data": "x"}, ""),
                                        ({"str_data": "x"}, "?model=echo-1.0.0"),
                                        ({"model": "echo", "str_data": "x"}, "?model=nope")])
def test_model_selection(demo, body, query):
    r = predict(demo, body, query)
    assert r.status_code == 200 and r.json()["str_data"] == "x"


@pytest.mark.parametrize("body,query,text", [
    ({"model": "nope-1.0.0", "str_data": "x"}, "", "Request for unknown model: 'nope-1.0.0' is not found"),
    ({"model": "echo-9.9", "str_data": "x"}, "", "Request for unknown model: 'echo' version 9.9 is not found"),
    ({"str_data": "x"}, "?model=nope", "Request for unknown model: 'nope' is not found"),
])
def test_unknown_model(demo, body, query, text):
    failure(predict(demo, body, query), 404, text)


def test_gtensors_every_dtype_round_trips(demo):
    tensors = [
        {"name": "u8", "dtype": "DT_UINT8", "shape": [2], "flat_uint8": [0, 255]},
        {"name": "i8", "dtype": "DT_INT8", "shape": [2], "flat_int8": [-128, 127]},
        {"name": "i16", "dtype": "DT_INT16", "shape": [2], "flat_int16": [-32768, 32767]},
        {"name": "i32", "dtype": "DT_INT32", "shape": [3, 2], "flat_int32": [1, 2, 3, 4, 5, -6]},
        {"name": "i64", "dtype": "DT_INT64", "shape": [2],
         "flat_int64": ["-9223372036854775808", "9007199254740993"]},
        {"name": "f16", "dtype": "DT_FLOAT16", "shape": [2], "flat_float16": [0.5, -2.0]},
        {"name": "f32", "dtype": "DT_FLOAT32", "shape": [1, 2], "flat_float32": [0.1, 3.0]},
        {"name": "f64", "dtype": "DT_FLOAT64", "shape": [2], "flat_float64": [0.1, 1e300]},
        {"name": "s", "dtype": "DT_STRING", "shape": [2], "flat_string": ["a", "héllo"]},
    ]
    r = predict(demo, {"gtensors": {"tensors": tensors}})
    assert r.status_code == 200, r.text
    assert r.json() == {"status": OK, "gtensors": {"tensors": tensors}}


def test_gtensors_int64_accepted_as_numbers_and_enum_as_number(demo):
    t = {"name": "n", "dtype": 5, "shape": [2], "flat_int64": [1, -2]}
    r = predict(demo, {"gtensors": {"tensors": [t]}})
    assert r.json()["gtensors"]["tensors"][0] == {"name": "n", "dtype": "DT_INT64", "shape": [2],
                                                  "flat_int64": ["1", "-2"]}


def test_gtensors_seed_example_with_flat_double(demo):
    body = {"gtensors": {"tensors": [
        {"name": "in1", "dtype": "DT_INT32", "shape": [3, 2], "flat_int32": [1, 2, 3, 4, 5, 6]},
        {"name": "in2", "dtype": "DT_FLOAT64", "shape": [3, 3],
         "flat_double": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]}]}}
    out = predict(demo, body).json()["gtensors"]["tensors"]
    assert out[1]["flat_float64"] == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]


def test_unnamed_tensor_gets_a_positional_name(demo):
    r = predict(demo, {"gtensors": {"tensors": [{"dtype": "DT_INT32", "flat_int32": [7]}]}})
    assert r.json()["gtensors"]["tensors"][0]["name"] == "tensor_0"


def test_ndarray_round_trips_and_return_ndarray(demo):
    arr = [[[1, 2, 3], [4, 5, 6]], [[7, 8, 9], [10, 11, 12]]]
    r = predict(demo, {"ndarray": arr})
    assert r.status_code == 200 and r.json()["ndarray"] == arr
    t = {"name": "x", "dtype": "DT_FLOAT32", "shape": [2, 2], "flat_float32": [1, 2, 3, 4]}
    r = predict(demo, {"gtensors": {"tensors": [t]}}, "?return-ndarray=true")
    assert r.json() == {"status": OK, "ndarray": [[1.0, 2.0], [3.0, 4.0]]}


def test_return_ndarray_needs_one_fp32_output(demo):
    t = {"name": "x", "dtype": "DT_INT32", "shape": [2], "flat_int32": [1, 2]}
    r = predict(demo, {"gtensors": {"tensors": [t]}}, "?return-ndarray=true")
    failure(r, 400, "one FP32 output")


def test_ndarray_into_a_declared_model(demo):
    """ndarray fills a model's only input: half_plus_three (x FP32) answers y = x/2 + 3."""
    r = predict(demo, {"model": "half_plus_three", "ndarray": [1.0, 2.0, 5.0]})
    assert r.status_code == 200, r.text
    out = r.json()["gtensors"]["tensors"][0]
    assert out["flat_float32"] == [3.5, 4.0, 5.5]


def test_gmap_every_map(demo):
    gmap = {"s_s": {"a": "x"}, "s_b": {"k": base64.b64encode(b"\x00\xff").decode()},
            "s_i32": {"n": -3}, "s_i64": {"big": "9007199254740993"}, "s_f": {"f": 1.5},
            "s_d": {"d": 0.1},
            "s_t": {"t": {"name": "t", "dtype": "DT_FLOAT32", "shape": [2],
                          "flat_float32": [1.0, 2.0]}}}
    r = predict(demo, {"gmap": gmap})
    assert r.status_code == 200, r.text
    assert r.json() == {"status": OK, "gmap": gmap}


def test_gmap_camel_case_names(demo):
    r = predict(demo, {"gmap": {"sS": {"a": "x"}}})
    assert r.json()["gmap"] == {"s_s": {"a": "x"}}


def test_bin_data_raw_both_ways(demo):
    payload = bytes(range(256)) * 10
    r = predict(demo, payload, headers={"Content-Type": "application/octet-stream"})
    assert r.status_code == 200
    assert r.headers["Content-Type"] == "application/octet-stream"
    assert r.content == payload


@pytest.mark.parametrize("ctype", ["text/plain", "application/x-www-form-urlencoded"])
def test_unsupported_content_type(demo, ctype):
    failure(predict(demo, {"str_data": "x"}, headers={"Content-Type": ctype}), 400,
            "Content type is not supported")


@pytest.mark.parametrize("body,text", [
    ({"bin_data": "aGk="}, "application/octet-stream"),
    ('{"str_data": ', "end of input"),
    ({"str_data": "a", "gmap": {}}, "str_data"),
    ({"unknown_field": 1}, "unknown_field"),
    ({"gtensors": {"tensors": [{"name": "x", "dtype": "DT_INT32", "shape": [3],
                                "flat_int32": [1, 2]}]}}, "x"),
    ({"gtensors": {"tensors": [{"name": "x", "dtype": "DT_INT8", "flat_int8": [300]}]}}, "300"),
    ({"gmap": {"s_b": {"k": "not base64!"}}}, "k"),
    ({"ndarray": [[1, 2], [3]]}, "ndarray"),
])
def test_bad_bodies_are_400_naming_the_problem(demo, body, text):
    failure(predict(demo, body), 400, text)


def test_decoupled_model_needs_streaming(demo):
    failure(predict(demo, {"model": "streamer", "str_data": "3"}), 400, "decoupled")


def test_h2c_predict_with_curl(demo):
    out = subprocess.run(["curl", "-s", "--http2-prior-knowledge", "-H",
                          "Content-Type: application/json", "-d", '{"str_data":"over h2c"}',
                          demo.base + "/grps/v1/infer/predict"],
                         capture_output=True, timeout=TIMEOUT * 2, check=True)
    assert json.loads(out.stdout) == {"status": OK, "str_data": "over h2c"}


# ---- HTTP: streaming ----------------------------------------------------------------------------
def stream_chunks(demo, body, query):
    r = predict(demo, body, query, stream=True)
    assert r.status_code == 200, r.text
    assert r.headers.get("Transfer-Encoding") == "chunked"
    chunks = [json.loads(c) for c in r.raw.read_chunked()]
    r.close()
    return chunks


def test_streaming_one_message_per_chunk(demo):
    chunks = stream_chunks(demo, {"str_data": "5"}, "?model=streamer-1.0.0&streaming=true")
    assert chunks == [{"status": OK, "str_data": str(i)} for i in range(5)]


def test_streaming_int32_count(demo):
    t = {"name": "n", "dtype": "DT_INT32", "shape": [1], "flat_int32": [3]}
    chunks = stream_chunks(demo, {"model": "streamer", "gtensors": {"tensors": [t]}},
                           "?streaming=true")
    assert [c["str_data"] for c in chunks] == ["0", "1", "2"]


def test_streaming_a_plain_model_is_one_chunk(demo):
    assert stream_chunks(demo, {"str_data": "once"}, "?streaming=true") == [
        {"status": OK, "str_data": "once"}]


def test_streaming_failure_mid_stream_is_a_final_error_message(demo):
    chunks = stream_chunks(demo, {"gmap": {"s_i32": {"n": 5, "fail_at": 2}}},
                           "?model=streamer&streaming=true")
    assert [c.get("str_data") for c in chunks[:2]] == ["0", "1"]
    assert len(chunks) == 3
    assert chunks[2]["status"]["status"] == "FAILURE" and chunks[2]["status"]["code"] == 500
    assert "fail after 2" in chunks[2]["status"]["msg"]


def test_streamer_over_1000_is_400(demo):
    failure(predict(demo, {"str_data": "1001"}, "?model=streamer&streaming=true"), 400,
            "at most 1000")


def _inflight(demo, model):
    text = requests.get(demo.base + "/metrics", timeout=TIMEOUT).text
    m = re.search(r'isv_inflight_requests\{model="%s",version="1.0.0"\} (\d+)' % model, text)
    return int(m.group(1)) if m else 0


def test_client_disconnect_cancels_the_stream(start_demo):
    d = start_demo()
    body = json.dumps({"gmap": {"s_i32": {"n": 1000, "delay_ms": 20}}}).encode()
    s = socket.create_connection((d.host, d.port), timeout=TIMEOUT)
    s.sendall(b"POST /grps/v1/infer/predict?model=streamer&streaming=true HTTP/1.1\r\n"
              b"Host: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
              % (len(body), body))
    got = b""
    while got.count(b'"str_data"') < 3:
        got += s.recv(4096)
    assert b"200 OK" in got and _inflight(d, "streamer") == 1
    s.close()  # 1000 messages of 20 ms: ~20 s left if nothing cancelled it
    deadline = time.time() + 3
    while _inflight(d, "streamer") and time.time() < deadline:
        time.sleep(0.05)
    assert _inflight(d, "streamer") == 0


# ---- gRPC ---------------------------------------------------------------------------------------
@pytest.fixture
def grps(protos, channel):
    return protos.grps_grpc.GrpsServiceStub(channel)


def msg(protos, **kw):
    return protos.grps_pb.GrpsMessage(**kw)


def assert_ok(protos, resp):
    st = resp.status
    assert (st.code, st.msg, st.status) == (200, "OK", protos.grps_pb.Status.SUCCESS), st


def test_grpc_health_and_metadata(grps, protos):
    for rpc in (grps.CheckLiveness, grps.CheckReadiness):
        assert_ok(protos, rpc(msg(protos), timeout=TIMEOUT))
    meta = grps.ServerMetadata(msg(protos), timeout=TIMEOUT)
    assert 'default_model: "echo"' in meta.str_data
    m = grps.ModelMetadata(msg(protos, str_data="streamer-1.0.0"), timeout=TIMEOUT)
    assert 'name: "streamer"' in m.str_data and "decoupled: true" in m.str_data
    bad = grps.ModelMetadata(msg(protos, str_data="nope"), timeout=TIMEOUT)
    assert bad.status.code == 404 and bad.status.status == protos.grps_pb.Status.FAILURE


def test_grpc_offline_online(start_demo, protos):
    d = start_demo()
    ch = make_channel(d)
    try:
        g = protos.grps_grpc.GrpsServiceStub(ch)
        assert_ok(protos, g.Offline(msg(protos), timeout=TIMEOUT))
        assert g.CheckReadiness(msg(protos), timeout=TIMEOUT).status.code == 503
        assert requests.get(d.base + "/v2/health/ready", timeout=TIMEOUT).status_code == 503
        assert_ok(protos, g.Online(msg(protos), timeout=TIMEOUT))
        assert_ok(protos, g.CheckReadiness(msg(protos), timeout=TIMEOUT))
    finally:
        ch.close()


def test_grpc_predict_str_and_bin(grps, protos):
    r = grps.Predict(msg(protos, str_data="hello grps"), timeout=TIMEOUT)
    assert_ok(protos, r)
    assert r.WhichOneof("data_oneof") == "str_data" and r.str_data == "hello grps"
    blob = bytes(range(256)) * 100
    r = grps.Predict(msg(protos, model="echo-1.0.0", bin_data=blob), timeout=TIMEOUT)
    assert r.WhichOneof("data_oneof") == "bin_data" and r.bin_data == blob


def test_grpc_predict_gtensors_every_dtype(grps, protos):
    pb = protos.grps_pb
    ts = [pb.GenericTensor(name="u8", dtype=pb.DT_UINT8, shape=[2], flat_uint8=[0, 255]),
          pb.GenericTensor(name="i8", dtype=pb.DT_INT8, shape=[2], flat_int8=[-128, 127]),
          pb.GenericTensor(name="i16", dtype=pb.DT_INT16, shape=[2], flat_int16=[-32768, 1]),
          pb.GenericTensor(name="i32", dtype=pb.DT_INT32, shape=[2, 2],
                           flat_int32=[-(2 ** 31), 2 ** 31 - 1, 0, -1]),
          pb.GenericTensor(name="i64", dtype=pb.DT_INT64, shape=[1], flat_int64=[-(2 ** 63)]),
          pb.GenericTensor(name="f16", dtype=pb.DT_FLOAT16, shape=[2], flat_float16=[0.5, -2]),
          pb.GenericTensor(name="f32", dtype=pb.DT_FLOAT32, shape=[3],
                           flat_float32=[0.25, float("inf"), -1]),
          pb.GenericTensor(name="f64", dtype=pb.DT_FLOAT64, shape=[1], flat_float64=[0.1]),
          pb.GenericTensor(name="s", dtype=pb.DT_STRING, shape=[2], flat_string=["a", "é"])]
    req = msg(protos, gtensors=pb.GenericTensorData(tensors=ts))
    r = grps.Predict(req, timeout=TIMEOUT)
    assert_ok(protos, r)
    assert list(r.gtensors.tensors) == ts


def test_grpc_predict_gmap(grps, protos):
    pb = protos.grps_pb
    gm = pb.GenericMapData(s_s={"a": "x"}, s_b={"k": b"\x00\xff"}, s_i32={"n": -3},
                           s_i64={"big": 2 ** 62}, s_f={"f": 1.5}, s_d={"d": 0.1})
    gm.s_t["t"].CopyFrom(pb.GenericTensor(name="t", dtype=pb.DT_INT32, shape=[2],
                                          flat_int32=[1, 2]))
    r = grps.Predict(msg(protos, gmap=gm), timeout=TIMEOUT)
    assert_ok(protos, r)
    assert r.gmap == gm


def test_grpc_native_model_gets_the_message_as_it_came(grps, protos):
    pb = protos.grps_pb
    req = msg(protos, model="echo_native-1.0.0",
              gtensors=pb.GenericTensorData(tensors=[pb.GenericTensor(
                  name="x", dtype=pb.DT_FLOAT32, shape=[2], flat_float32=[1, 2])]))
    r = grps.Predict(req, timeout=TIMEOUT)
    assert_ok(protos, r)
    assert r.model == "echo_native-1.0.0" and r.gtensors == req.gtensors


def test_http_native_model(demo):
    r = predict(demo, {"model": "echo_native", "str_data": "native"})
    assert r.json() == {"status": OK, "model": "echo_native", "str_data": "native"}


def test_grpc_errors_travel_in_the_message(grps, protos):
    r = grps.Predict(msg(protos, model="nope", str_data="x"), timeout=TIMEOUT)
    assert r.status.code == 404 and r.status.status == protos.grps_pb.Status.FAILURE
    assert "Request for unknown model: 'nope' is not found" in r.status.msg
    r = grps.Predict(msg(protos, ndarray=protos.grps_pb.NDArrayData()), timeout=TIMEOUT)
    assert r.status.code == 400 and "ndarray" in r.status.msg


def test_grpc_malformed_message(channel, protos):
    call = channel.unary_unary("/grps.protos.v1.GrpsService/Predict",
                               request_serializer=lambda b: b,
                               response_deserializer=protos.grps_pb.GrpsMessage.FromString)
    r = call(b"\x22\x05ab", timeout=TIMEOUT)  # str_data claims 5 bytes, has 2
    assert r.status.code == 400 and r.status.status == protos.grps_pb.Status.FAILURE


def test_grpc_predict_streaming(grps, protos):
    out = list(grps.PredictStreaming(msg(protos, model="streamer", str_data="4"),
                                     timeout=TIMEOUT))
    assert [m.str_data for m in out] == ["0", "1", "2", "3"]
    for m in out:
        assert_ok(protos, m)


def test_grpc_predict_streaming_failure_is_the_last_message(grps, protos):
    gm = protos.grps_pb.GenericMapData(s_i32={"n": 5, "fail_at": 3})
    out = list(grps.PredictStreaming(msg(protos, model="streamer", gmap=gm), timeout=TIMEOUT))
    assert [m.str_data for m in out[:3]] == ["0", "1", "2"] and len(out) == 4
    assert out[3].status.code == 500 and "fail after 3" in out[3].status.msg


def test_grpc_stream_cancel_stops_the_backend(start_demo, protos):
    d = start_demo()
    ch = make_channel(d)
    try:
        g = protos.grps_grpc.GrpsServiceStub(ch)
        gm = protos.grps_pb.GenericMapData(s_i32={"n": 1000, "delay_ms": 20})
        it = g.PredictStreaming(msg(protos, model="streamer", gmap=gm), timeout=30)
        assert next(it).str_data == "0" and next(it).str_data == "1"
        it.cancel()
        deadline = time.time() + 3
        while _inflight(d, "streamer") and time.time() < deadline:
            time.sleep(0.05)
        assert _inflight(d, "streamer") == 0
    finally:
        ch.close()


def test_error_quoting_client_bytes_is_valid_utf8(demo):
    msg = failure(predict(demo, {"str_data": "x"}, "?model=%ff%fe"), 404, "unknown model")
    assert "\ufffd" not in msg and "'??'" in msg


def test_grpc_reply_to_an_invalid_utf8_model_parses(channel, protos):
    call = channel.unary_unary("/grps.protos.v1.GrpsService/Predict",
                               request_serializer=lambda b: b,
                               response_deserializer=protos.grps_pb.GrpsMessage.FromString)
    r = call(b"\x12\x02\xc3\x28\x22\x01x", timeout=TIMEOUT)  # model "\xc3(": not UTF-8
    assert r.status.code == 400 and "UTF-8" in r.status.msg


def test_large_gtensors_round_trip(demo, grps, protos):
    """400 KB of FP32 each way: decoded and encoded on the worker pool over HTTP."""
    vals = [float(i) * 0.5 for i in range(100000)]
    t = {"name": "big", "dtype": "DT_FLOAT32", "shape": [100000], "flat_float32": vals}
    r = predict(demo, {"gtensors": {"tensors": [t]}})
    assert r.status_code == 200
    assert r.json()["gtensors"]["tensors"][0]["flat_float32"] == vals
    pb = protos.grps_pb
    g = pb.GenericTensor(name="big", dtype=pb.DT_FLOAT32, shape=[100000], flat_float32=vals)
    out = grps.Predict(msg(protos, gtensors=pb.GenericTensorData(tensors=[g])), timeout=TIMEOUT)
    assert list(out.gtensors.tensors[0].flat_float32) == vals


def test_grpc_answers_reference_large_payloads_wherever_they_sit(grps, protos):
    """Large flat_float32 / flat_float64 data, str_data and s_t tensors are written into the
    answer by reference (grps_pb.c's by-reference encoder), small and converted ones copied:
    every mix must come back byte for byte."""
    pb = protos.grps_pb
    ts = [pb.GenericTensor(name="f64", dtype=pb.DT_FLOAT64, shape=[2000],
                           flat_float64=[i / 3.0 for i in range(2000)]),
          pb.GenericTensor(name="small", dtype=pb.DT_FLOAT32, shape=[2], flat_float32=[1, 2]),
          pb.GenericTensor(name="i32", dtype=pb.DT_INT32, shape=[500],
                           flat_int32=[i - 250 for i in range(500)]),
          pb.GenericTensor(name="f32", dtype=pb.DT_FLOAT32, shape=[3000],
                           flat_float32=[i * 0.25 for i in range(3000)])]
    r = grps.Predict(msg(protos, gtensors=pb.GenericTensorData(tensors=ts)), timeout=TIMEOUT)
    assert_ok(protos, r)
    assert list(r.gtensors.tensors) == ts
    gm = pb.GenericMapData()
    gm.s_t["a"].CopyFrom(pb.GenericTensor(name="a", dtype=pb.DT_FLOAT32, shape=[1000],
                                          flat_float32=[-i * 0.5 for i in range(1000)]))
    gm.s_t["b"].CopyFrom(pb.GenericTensor(name="b", dtype=pb.DT_INT64, shape=[3],
                                          flat_int64=[1, -2, 2 ** 40]))
    r = grps.Predict(msg(protos, gmap=gm), timeout=TIMEOUT)
    assert_ok(protos, r)
    assert r.gmap == gm
    text = "grps " * 3000
    r = grps.Predict(msg(protos, str_data=text), timeout=TIMEOUT)
    assert r.WhichOneof("data_oneof") == "str_data" and r.str_data == text


def test_a_gmap_key_with_a_nul_is_refused_not_cut(demo, protos, grps):
    # issue #34: "a\u0000b" was cut to "a" further on; now refused, over JSON and protobuf
    failure(predict(demo, '{"gmap": {"s_s": {"a\\u0000b": "x"}}}'), 400, "NUL character")
    failure(predict(demo, '{"gmap": {"s_s": {"ab": "x"}}}'.replace("ab", "a\\u0000")), 400,
            "NUL character")
    m = protos.grps_pb.GrpsMessage()
    m.gmap.s_s["a\0b"] = "x"
    r = grps.Predict(m, timeout=TIMEOUT)
    assert r.status.code == 400 and "NUL character" in r.status.msg, r
