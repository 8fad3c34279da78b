"""The scheduler seen by real clients (requests, grpcio) against the demo: dynamic batching
under 64 concurrent clients, a slow model beside a fast one, the queue limit, deadlines, stateful
sequences over REST and gRPC, a decoupled model over ModelStreamInfer (Triton's final-response
flag), the 400 a decoupled model gives single-answer endpoints, and the statistics in /metrics.
Ordering is asserted, never speed."""
import concurrent.futures as cf
import random
import signal
import threading
import time

import grpc
import pytest
import requests

from isvtest import assert_error, get, infer, ok_json, outputs_by_name, tensor
from grpc_stubs import (add_input, decode_raw, encode_raw, expect_rpc_error, make_channel,
                        outputs_of, slow_request)
from grpc_stubs import _grpc_channels, channel, protos, stub  # noqa: F401 (fixtures)


def batched_inputs(rows, seed):
    return [round(seed + r + c / 4, 2) for r in range(rows) for c in range(4)]


# ---- dynamic batching ---------------------------------------------------------------------

def test_64_clients_on_batched_get_batches_and_their_own_rows(demo):
    """64 threads, 8 requests each, 1-3 rows per request: every answer is 2x its own rows, and
    the executions that served them had more rows than one request brings."""
    errors, batch_sizes = [], []
    lock = threading.Lock()
    start = threading.Barrier(64)

    def client(k):
        s = requests.Session()
        start.wait()
        for i in range(8):
            rows = 1 + (k + i) % 3
            x = batched_inputs(rows, k * 100 + i)
            r = s.post(demo.url("/v2/models/batched/infer"), json={
                "inputs": [tensor("INPUT0", "FP32", [rows, 4], x)]}, timeout=30)
            if r.status_code != 200:
                with lock:
                    errors.append("%d %s" % (r.status_code, r.text[:200]))
                continue
            out = outputs_by_name(r.json())
            y, bs = out["OUTPUT0"], out["OUTPUT1"]
            ok = (y["shape"] == [rows, 4] and bs["shape"] == [rows, 1]
                  and all(abs(a - 2 * b) < 1e-3 for a, b in zip(y["data"], x))
                  and len(set(bs["data"])) == 1 and bs["data"][0] >= rows)
            with lock:
                if not ok:
                    errors.append("wrong answer for %r: %r" % (x, r.text[:300]))
                batch_sizes.append(bs["data"][0])

    with cf.ThreadPoolExecutor(64) as ex:
        list(ex.map(client, range(64)))
    assert not errors, errors[:5]
    assert len(batch_sizes) == 64 * 8
    assert max(batch_sizes) > 3, "no execution ran more rows than one request: %r" % \
        sorted(set(batch_sizes))
    metrics = get(demo, "/metrics").text
    assert any(line.startswith('isv_batch_executions_total{model="batched"') and
               int(line.split('batch_size="')[1].split('"')[0]) > 3
               for line in metrics.splitlines())


def test_a_slow_model_does_not_hold_up_a_fast_one(demo):
    """Eight 600 ms calls of `slow` on worker threads; meanwhile 30 calls of `simple` are all
    answered before any slow one is."""
    body = {"inputs": [tensor("INPUT0", "INT32", [1], [600])]}
    with cf.ThreadPoolExecutor(8) as ex:
        slow = [ex.submit(requests.post, demo.url("/v2/models/slow/infer"), json=body,
                          timeout=30) for _ in range(8)]
        s = requests.Session()
        for i in range(30):
            r = s.post(demo.url("/v2/models/simple/infer"), json={"inputs": [
                tensor("INPUT0", "INT32", [1, 16], list(range(16))),
                tensor("INPUT1", "INT32", [1, 16], [i] * 16)]}, timeout=10)
            ok_json(r)
        assert not any(f.done() for f in slow), "a slow call finished before 30 fast ones"
        assert all(f.result().status_code == 200 for f in slow)


# ---- limits and deadlines -----------------------------------------------------------------

def wait_metric(demo, line):
    """Poll /metrics until it has this exact line (the server's own view of its queues)."""
    for _ in range(1000):
        if line in get(demo, "/metrics").text.splitlines():
            return
        time.sleep(0.005)
    raise AssertionError("/metrics never showed %r" % line)


@pytest.fixture
def demo1(start_demo):
    """A one-loop demo: a model version's queue, instances and sequences are each loop's own
    (include/inferserve.h, groups), and these cases count them or cross connections."""
    return start_demo("--threads", "1")


@pytest.fixture
def stub1(demo1, protos):
    ch = make_channel(demo1)
    yield protos.pb_grpc.GRPCInferenceServiceStub(ch)
    ch.close()


def test_a_full_queue_is_refused_with_503_naming_the_model(demo1, stub1, protos):
    """queue1: one instance, one waiting request at most."""
    body = {"inputs": [tensor("INPUT0", "INT32", [1], [400])]}
    with cf.ThreadPoolExecutor(2) as ex:
        first = ex.submit(requests.post, demo1.url("/v2/models/queue1/infer"), json=body, timeout=10)
        wait_metric(demo1, 'isv_inflight_requests{model="queue1",version="1"} 1')
        second = ex.submit(requests.post, demo1.url("/v2/models/queue1/infer"), json=body,
                           timeout=10)
        wait_metric(demo1, 'isv_queued_requests{model="queue1",version="1"} 1')
        r = infer(demo1, "queue1", [tensor("INPUT0", "INT32", [1], [1])])
        assert_error(r, 503, "model 'queue1' version '1' has 1 requests waiting, its queue limit")
        req = protos.pb.ModelInferRequest(model_name="queue1")
        add_input(req, "INPUT0", "INT32", [1], raw=encode_raw("INT32", [1]))
        expect_rpc_error(stub1.ModelInfer, grpc.StatusCode.UNAVAILABLE, "queue limit",
                         request=req, timeout=10)
        assert first.result().status_code == 200
        assert second.result().status_code == 200


def test_the_timeout_parameter_gives_504(demo, stub, protos):
    r = infer(demo, "slow", [tensor("INPUT0", "INT32", [1], [2000])],
              parameters={"timeout": 50000})
    assert_error(r, 504, "request to model 'slow' passed its deadline while it ran")
    req = slow_request(protos.pb, 2000)
    req.parameters["timeout"].int64_param = 50000
    expect_rpc_error(stub.ModelInfer, grpc.StatusCode.DEADLINE_EXCEEDED, "passed its deadline",
                     request=req, timeout=10)
    r = infer(demo, "slow", [tensor("INPUT0", "INT32", [1], [1])], parameters={"timeout": "x"})
    assert_error(r, 400, "parameter 'timeout' must be a non-negative integer (microseconds)")


def test_a_request_that_times_out_while_queued_never_runs(demo1):
    """queue1 is busy for 500 ms; a request with a 50 ms deadline waits behind it and is
    answered 504 without running (its message says it waited)."""
    body = {"inputs": [tensor("INPUT0", "INT32", [1], [500])]}
    with cf.ThreadPoolExecutor(1) as ex:
        busy = ex.submit(requests.post, demo1.url("/v2/models/queue1/infer"), json=body, timeout=10)
        wait_metric(demo1, 'isv_inflight_requests{model="queue1",version="1"} 1')
        r = infer(demo1, "queue1", [tensor("INPUT0", "INT32", [1], [1])],
                  parameters={"timeout": 50000})
        assert_error(r, 504, "passed its deadline while it waited")
        assert busy.result().status_code == 200


# ---- sequences ----------------------------------------------------------------------------

def test_sequences_over_rest_and_grpc(demo1, stub1, protos):
    sid = random.randint(1, 2 ** 62)

    def rest(v, **params):
        r = infer(demo1, "accumulate", [tensor("INPUT0", "INT32", [1], [v])],
                  parameters=dict(sequence_id=sid, **params))
        return ok_json(r)["outputs"][0]["data"][0]

    def rpc(v, ident, start=False, end=False):
        req = protos.pb.ModelInferRequest(model_name="accumulate")
        if isinstance(ident, str):
            req.parameters["sequence_id"].string_param = ident
        else:
            req.parameters["sequence_id"].int64_param = ident
        if start:
            req.parameters["sequence_start"].bool_param = True
        if end:
            req.parameters["sequence_end"].bool_param = True
        add_input(req, "INPUT0", "INT32", [1], raw=encode_raw("INT32", [v]))
        return decode_raw("INT64", outputs_of(stub1.ModelInfer(req, timeout=10))["OUTPUT0"][2])[0]

    assert rest(5, sequence_start=True) == 5
    assert rpc(7, sid) == 12  # the same sequence, over gRPC
    text_id = "conversation-%d" % sid
    assert rpc(100, text_id, start=True) == 100  # a string id, its own state
    assert rest(1) == 13
    assert rpc(1, text_id, end=True) == 101
    assert rest(2, sequence_end=True) == 15
    r = infer(demo1, "accumulate", [tensor("INPUT0", "INT32", [1], [1])],
              parameters={"sequence_id": sid})
    assert_error(r, 400, "sequence %d of model 'accumulate' is not live" % sid)
    req = protos.pb.ModelInferRequest(model_name="accumulate")
    add_input(req, "INPUT0", "INT32", [1], raw=encode_raw("INT32", [1]))
    expect_rpc_error(stub1.ModelInfer, grpc.StatusCode.INVALID_ARGUMENT,
                     "model 'accumulate' is stateful", request=req, timeout=10)


def test_sequences_keep_order_under_concurrency(demo):
    """Eight sequences, each sent by its own thread: every running sum is exact."""
    base = random.randint(1, 2 ** 40)

    def run(k):
        s = requests.Session()
        total = 0
        for i in range(20):
            v = k * 1000 + i
            total += v
            params = {"sequence_id": base + k}
            if i == 0:
                params["sequence_start"] = True
            if i == 19:
                params["sequence_end"] = True
            r = s.post(demo.url("/v2/models/accumulate/infer"), json={
                "parameters": params, "inputs": [tensor("INPUT0", "INT32", [1], [v])]},
                timeout=10)
            got = ok_json(r)["outputs"][0]["data"][0]
            if got != total:
                return "sequence %d step %d: %d != %d" % (k, i, got, total)
        return None

    with cf.ThreadPoolExecutor(8) as ex:
        problems = [p for p in ex.map(run, range(8)) if p]
    assert not problems, problems


# ---- decoupled ----------------------------------------------------------------------------

def repeat_request(pb, values, empty_final=False, req_id=None, delay_ms=None):
    req = pb.ModelInferRequest(model_name="repeat")
    if req_id:
        req.id = req_id
    add_input(req, "IN", "INT32", [len(values)], raw=encode_raw("INT32", values))
    if empty_final:
        req.parameters["triton_enable_empty_final_response"].bool_param = True
    if delay_ms is not None:
        req.parameters["delay_ms"].int64_param = delay_ms
    return req


def test_model_stream_infer_carries_a_decoupled_models_responses(stub, protos):
    responses = list(stub.ModelStreamInfer(iter([repeat_request(protos.pb, [4, 5, 6],
                                                                req_id="r1")]), timeout=10))
    assert [r.error_message for r in responses] == ["", "", ""]
    got = [(decode_raw("INT32", outputs_of(r.infer_response)["OUT"][2])[0],
            decode_raw("UINT32", outputs_of(r.infer_response)["IDX"][2])[0],
            r.infer_response.id) for r in responses]
    assert got == [(4, 0, "r1"), (5, 1, "r1"), (6, 2, "r1")]
    for r in responses:
        assert "triton_final_response" not in r.infer_response.parameters


def test_the_empty_final_response_when_asked_for(stub, protos):
    reqs = [repeat_request(protos.pb, [7, 8], empty_final=True, req_id="a"),
            repeat_request(protos.pb, [], empty_final=True, req_id="b")]
    responses = list(stub.ModelStreamInfer(iter(reqs), timeout=10))
    by_id = {}
    for r in responses:
        ir = r.infer_response
        by_id.setdefault(ir.id, []).append(
            (len(ir.outputs), ir.parameters["triton_final_response"].bool_param))
    assert by_id["a"] == [(2, False), (2, False), (0, True)]
    assert by_id["b"] == [(0, True)]  # no response at all, then the flag


def test_a_decoupled_model_on_a_single_answer_endpoint_is_400(demo, stub, protos):
    r = infer(demo, "repeat", [tensor("IN", "INT32", [2], [1, 2])])
    assert_error(r, 400, "model 'repeat' is decoupled")
    expect_rpc_error(stub.ModelInfer, grpc.StatusCode.INVALID_ARGUMENT, "model 'repeat' is "
                     "decoupled", request=repeat_request(protos.pb, [1]), timeout=10)


def test_a_cancelled_stream_stops_a_decoupled_model(stub, protos):
    """Cancel after the first of 50 responses paced 20 ms apart: the model stops early (the
    stream ends CANCELLED well before 50 arrive)."""
    it = stub.ModelStreamInfer(iter([repeat_request(protos.pb, list(range(50)), delay_ms=20)]),
                               timeout=10)
    first = next(it)
    assert decode_raw("INT32", outputs_of(first.infer_response)["OUT"][2]) == [0]
    it.cancel()
    n = 1
    with pytest.raises(grpc.RpcError) as e:
        for _ in it:
            n += 1
    assert e.value.code() == grpc.StatusCode.CANCELLED
    assert n < 50


# ---- close under load ---------------------------------------------------------------------

def test_close_under_load_answers_everything_in_flight_and_queued(start_demo):
    """SIGTERM while 12 `slow` calls run and `queue1` has one running and one waiting: all 14
    are answered 200 with their own result (the waiting one runs during the drain), then the
    server exits 0. One loop: queue1's queue is each loop's own."""
    d = start_demo("--threads", "1")
    results = {}

    def call(key, model, ms):
        try:
            r = requests.post(d.url("/v2/models/%s/infer" % model), timeout=20, json={
                "id": key, "inputs": [tensor("INPUT0", "INT32", [1], [ms])]})
            results[key] = (r.status_code, r.json())
        except Exception as e:  # noqa: BLE001 (recorded, asserted below)
            results[key] = (None, repr(e))

    threads = [threading.Thread(target=call, args=("slow%d" % i, "slow", 300 + i))
               for i in range(12)]
    threads.append(threading.Thread(target=call, args=("q-run", "queue1", 300)))
    for t in threads:
        t.start()
    wait_metric(d, 'isv_inflight_requests{model="slow",version="1"} 12')
    wait_metric(d, 'isv_inflight_requests{model="queue1",version="1"} 1')
    waiting = threading.Thread(target=call, args=("q-wait", "queue1", 50))
    waiting.start()
    threads.append(waiting)
    wait_metric(d, 'isv_queued_requests{model="queue1",version="1"} 1')
    d.send_signal(signal.SIGTERM)
    for t in threads:
        t.join(20)
    assert len(results) == 14
    for key, (status, body) in sorted(results.items()):
        assert status == 200, (key, status, body, d.stderr_tail())
        assert body["id"] == key
    assert [o["data"] for o in results["q-wait"][1]["outputs"]] == [[50]]
    rc = d.wait_exit(10.0)
    assert rc == 0, d.describe_exit(rc)
