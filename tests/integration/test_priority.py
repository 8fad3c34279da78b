"""Priorities and queue policies (Triton's priority_levels, default_priority_level,
default_queue_policy, priority_queue_policy) seen by real clients — requests, grpcio, curl-like
headers — against the demo's `prio` model: one instance, each call sleeping INPUT0 ms and
answering OUTPUT0 = its place in the order the model's calls ran. Three levels, 2 by default;
level 1 holds 2 waiting requests at most and ignores a request's timeout, level 2 (the default
policy) rejects at it, level 3 delays.

Every case runs a one-loop demo of its own (queues are each loop's), holds the one instance with
a long call, queues its requests one by one — waiting for /metrics to show each queued, so that
the arrival order is the one written here — then reads the order the calls ran in. Ordering is
asserted, never speed."""
import concurrent.futures as cf
import time

import grpc
import pytest

from isvtest import assert_error, get, ok_json, outputs_by_name, post_json, tensor
from grpc_stubs import add_input, decode_raw, encode_raw, expect_rpc_error, make_channel, \
    outputs_of
from grpc_stubs import protos  # noqa: F401 (fixture)

Q = 'isv_queued_requests{model="prio",version="1"} %d'
RUNNING = 'isv_inflight_requests{model="prio",version="1"} %d'


@pytest.fixture
def demo1(start_demo):
    return start_demo("--threads", "1")


@pytest.fixture
def stub1(demo1, protos):
    ch = make_channel(demo1)
    yield protos.pb_grpc.GRPCInferenceServiceStub(ch)
    ch.close()


@pytest.fixture
def grps1(demo1, protos):
    ch = make_channel(demo1)
    yield protos.grps_grpc.GrpsServiceStub(ch)
    ch.close()


@pytest.fixture
def pool():
    with cf.ThreadPoolExecutor(16) as ex:
        yield ex


def wait_metric(demo, line):
    for _ in range(2000):
        if line in get(demo, "/metrics").text.splitlines():
            return
        time.sleep(0.005)
    raise AssertionError("/metrics never showed %r" % line)


def body(ms, priority=None, timeout=None):
    b = {"inputs": [tensor("INPUT0", "INT32", [1], [ms])]}
    params = {}
    if priority is not None:
        params["priority"] = priority
    if timeout is not None:
        params["timeout"] = timeout
    if params:
        b["parameters"] = params
    return b


def rest(demo, ms, priority=None, timeout=None):
    return post_json(demo, "/v2/models/prio/infer", body(ms, priority, timeout), timeout=30)


def place(resp):
    """The place of the call that answered resp in the order the model's calls ran."""
    return outputs_by_name(ok_json(resp))["OUTPUT0"]["data"][0]


def hold(demo, pool, ms, priority=1):
    """A call that takes the instance for ms; returns once it runs and nothing waits."""
    f = pool.submit(rest, demo, ms, priority)
    wait_metric(demo, RUNNING % 1)
    wait_metric(demo, Q % 0)
    return f


def queue_in_order(demo, pool, calls, already=0):
    """Submit each call (a function of no argument) once the one before it is queued (`already`
    waiting before the first)."""
    futures = []
    for k, call in enumerate(calls):
        futures.append(pool.submit(call))
        wait_metric(demo, Q % (already + k + 1))
    return futures


def grpc_req(pb, ms, priority=None, timeout=None, unsigned=True):
    req = pb.ModelInferRequest(model_name="prio")
    add_input(req, "INPUT0", "INT32", [1], raw=encode_raw("INT32", [ms]))
    if priority is not None:  # tritonclient sends uint64_param; int64 is accepted too
        if unsigned:
            req.parameters["priority"].uint64_param = priority
        else:
            req.parameters["priority"].int64_param = priority
    if timeout is not None:
        req.parameters["timeout"].int64_param = timeout
    return req


def grpc_place(resp):
    dt, shape, raw = outputs_of(resp)["OUTPUT0"]
    return decode_raw(dt, raw)[0]


def fail_count(demo):
    stats = ok_json(get(demo, "/v2/models/prio/stats"))["model_stats"][0]
    return stats["inference_stats"]["fail"]["count"]


# ---- order ----------------------------------------------------------------------------------

def test_levels_run_in_order_fifo_within_a_level_none_and_0_are_the_default(demo1, pool):
    blocker = hold(demo1, pool, 1500)
    order = [("a", 3), ("b", 2), ("c", None), ("d", 1), ("e", 1), ("f", 0)]
    fs = queue_in_order(demo1, pool, [lambda p=p: rest(demo1, 0, p) for _, p in order])
    ran = {tag: place(f.result()) for (tag, _), f in zip(order, fs)}
    assert place(blocker.result()) == 1
    assert sorted(ran, key=ran.get) == ["d", "e", "b", "c", "f", "a"], ran


def test_grpc_priority_orders_the_queue_too(demo1, stub1, protos, pool):
    pb = protos.pb
    blocker = hold(demo1, pool, 1500)
    order = [("low", 3, True), ("default", None, True), ("high", 1, False), ("high2", 1, True)]
    fs = queue_in_order(demo1, pool, [
        lambda p=p, u=u: stub1.ModelInfer(grpc_req(pb, 0, p, unsigned=u), timeout=30)
        for _, p, u in order])
    ran = {tag: grpc_place(f.result()) for (tag, _, _), f in zip(order, fs)}
    assert place(blocker.result()) == 1
    assert sorted(ran, key=ran.get) == ["high", "high2", "default", "low"], ran


def test_tf_serving_and_grps_name_the_level_in_a_header(demo1, pool):
    blocker = hold(demo1, pool, 1500)

    def tfs(prio=None):
        h = {"Inference-Priority": str(prio)} if prio is not None else {}
        return post_json(demo1, "/v1/models/prio:predict", {"inputs": [0]}, headers=h,
                         timeout=30)

    def grps(prio=None):
        h = {"Inference-Priority": str(prio)} if prio is not None else {}
        return post_json(demo1, "/grps/v1/infer/predict", {"model": "prio-1", "gtensors": {
            "tensors": [{"name": "INPUT0", "dtype": "DT_INT32", "shape": [1],
                         "flat_int32": [0]}]}}, headers=h, timeout=30)

    calls = [("tfs3", lambda: tfs(3)), ("grps", lambda: grps()), ("tfs", lambda: tfs()),
             ("grps1", lambda: grps(1)), ("tfs1", lambda: tfs(1))]
    fs = queue_in_order(demo1, pool, [c for _, c in calls])
    ran = {}
    for (tag, _), f in zip(calls, fs):
        r = ok_json(f.result())
        ran[tag] = r["outputs"][0] if "outputs" in r else \
            r["gtensors"]["tensors"][0]["flat_int32"][0]
    blocker.result()
    assert sorted(ran, key=ran.get) == ["grps1", "tfs1", "grps", "tfs", "tfs3"], ran
    r = post_json(demo1, "/v1/models/prio:predict", {"inputs": [0]},
                  headers={"Inference-Priority": "high"})
    assert_error(r, 400, "header Inference-Priority must be a non-negative decimal integer")
    r = post_json(demo1, "/v1/models/prio:predict", {"inputs": [0]},
                  headers={"Inference-Priority": "7"})
    assert_error(r, 400, "priority 7 is out of range for model 'prio': its priority levels are 1 "
                 "to 3 (0 or none: the default, 2)")


def test_grpc_metadata_and_v2_headers_name_the_level_where_no_parameter_does(demo1, grps1,
                                                                            protos, pool):
    """grps over gRPC has no parameter for it: the call's metadata; V2 REST may use the header
    too, but a request's own "priority" parameter wins over it."""
    g = grps1
    gmsg = protos.grps_pb.GrpsMessage(model="prio-1")
    t = gmsg.gtensors.tensors.add(name="INPUT0", dtype=protos.grps_pb.DT_INT32, shape=[1])
    t.flat_int32.append(0)
    blocker = hold(demo1, pool, 1500)
    calls = [
        ("grps_default", lambda: g.Predict(gmsg, timeout=30)),
        ("v2_param_wins", lambda: post_json(demo1, "/v2/models/prio/infer", body(0, 3),
                                            headers={"Inference-Priority": "1"}, timeout=30)),
        ("grps_1", lambda: g.Predict(gmsg, metadata=(("inference-priority", "1"),), timeout=30)),
        ("v2_header_1", lambda: post_json(demo1, "/v2/models/prio/infer", body(0),
                                          headers={"Inference-Priority": "1"}, timeout=30)),
    ]
    fs = queue_in_order(demo1, pool, [c for _, c in calls])
    ran = {}
    for (tag, _), f in zip(calls, fs):
        r = f.result()
        ran[tag] = r.gtensors.tensors[0].flat_int32[0] if tag.startswith("grps") else place(r)
    blocker.result()
    assert sorted(ran, key=ran.get) == ["grps_1", "v2_header_1", "grps_default",
                                        "v2_param_wins"], ran
    bad = g.Predict(gmsg, metadata=(("inference-timeout-us", "-5"),), timeout=30)
    assert bad.status.code == 400
    assert "header Inference-Timeout-Us must be a non-negative decimal integer" in bad.status.msg


# ---- refusals -------------------------------------------------------------------------------

def test_a_priority_out_of_range_is_400_invalid_argument(demo1, stub1, protos):
    r = rest(demo1, 0, 4)
    assert_error(r, 400, "priority 4 is out of range for model 'prio': its priority levels are 1 "
                 "to 3 (0 or none: the default, 2)")
    r = rest(demo1, 0, "high")
    assert_error(r, 400, "parameter 'priority' must be a non-negative integer")
    expect_rpc_error(stub1.ModelInfer, grpc.StatusCode.INVALID_ARGUMENT, "priority 9 is out of "
                     "range", request=grpc_req(protos.pb, 0, 9), timeout=10)


def test_a_full_level_is_503_exceeds_maximum_queue_size_with_retry_after(demo1, stub1, protos,
                                                                       pool):
    assert rest(demo1, 0).status_code == 200  # a call ran: the server can estimate a retry
    failed = fail_count(demo1)
    blocker = hold(demo1, pool, 1500, priority=2)
    waiting = queue_in_order(demo1, pool, [lambda: rest(demo1, 0, 1), lambda: rest(demo1, 0, 1)])
    r = rest(demo1, 0, 1)
    assert_error(r, 503, "Exceeds maximum queue size", "priority level 1")
    assert int(r.headers["Retry-After"]) >= 1
    r = post_json(demo1, "/v1/models/prio:predict", {"inputs": [0]},
                  headers={"Inference-Priority": "1"})
    assert_error(r, 503, "Exceeds maximum queue size")
    assert int(r.headers["Retry-After"]) >= 1
    expect_rpc_error(stub1.ModelInfer, grpc.StatusCode.UNAVAILABLE, "Exceeds maximum queue size",
                     request=grpc_req(protos.pb, 0, 1), timeout=10)
    other = pool.submit(rest, demo1, 0, 3)  # another level still has room
    assert place(other.result()) > max(place(f.result()) for f in waiting)
    assert blocker.result().status_code == 200
    assert fail_count(demo1) == failed + 3  # refused requests count as failed, as Triton's


def test_a_queue_timeout_rejects_with_503_request_timeout_expired(demo1, stub1, protos, pool):
    blocker = hold(demo1, pool, 2000, priority=2)
    t0 = time.monotonic()
    r = rest(demo1, 0, 2, timeout=50000)  # level 2: the request may set its timeout
    assert_error(r, 503, "Request timeout expired", "priority level 2")
    expect_rpc_error(stub1.ModelInfer, grpc.StatusCode.UNAVAILABLE, "Request timeout expired",
                     request=grpc_req(protos.pb, 0, None, timeout=50000), timeout=10)
    r = post_json(demo1, "/v1/models/prio:predict", {"inputs": [0]},
                  headers={"Inference-Timeout-Us": "50000"})
    assert_error(r, 503, "Request timeout expired")
    assert "Retry-After" not in r.headers  # no estimate for a timeout: it says nothing
    assert not blocker.done() and time.monotonic() - t0 < 1.9  # rejected while waiting
    assert place(blocker.result()) == 1


def test_delay_puts_a_timed_out_request_behind_its_level(demo1, pool):
    blocker = hold(demo1, pool, 1500)
    late = pool.submit(rest, demo1, 0, 3, 1000)  # level 3: DELAY once 1 ms passed
    wait_metric(demo1, Q % 1)
    time.sleep(0.1)
    fs = queue_in_order(demo1, pool, [lambda: rest(demo1, 0, 3), lambda: rest(demo1, 0, 2)],
                        already=1)
    ran = {"late": place(late.result()), "later3": place(fs[0].result()),
           "level2": place(fs[1].result())}
    blocker.result()
    assert sorted(ran, key=ran.get) == ["level2", "later3", "late"], ran


def test_a_level_without_override_ignores_the_request_timeout(demo1, pool):
    blocker = hold(demo1, pool, 600)
    r = rest(demo1, 0, 1, timeout=1000)  # level 1: allow_timeout_override false
    assert place(r) == 2  # it waited its turn, neither rejected nor a 504 deadline
    blocker.result()


# ---- configuration --------------------------------------------------------------------------

def test_the_config_shows_levels_and_policies_rest_and_grpc(demo1, stub1, protos):
    c = ok_json(get(demo1, "/v2/models/prio/config"))
    db = c["dynamic_batching"]
    assert c["max_batch_size"] == 0
    assert db["priority_levels"] == 3 and db["default_priority_level"] == 2
    assert db["default_queue_policy"] == {"timeout_action": "REJECT",
                                          "default_timeout_microseconds": 0,
                                          "allow_timeout_override": True, "max_queue_size": 0}
    assert db["priority_queue_policy"] == {
        "1": {"timeout_action": "REJECT", "default_timeout_microseconds": 0,
              "allow_timeout_override": False, "max_queue_size": 2},
        "3": {"timeout_action": "DELAY", "default_timeout_microseconds": 0,
              "allow_timeout_override": True, "max_queue_size": 0}}
    g = stub1.ModelConfig(protos.pb.ModelConfigRequest(name="prio"), timeout=10).config
    assert g.WhichOneof("scheduling_choice") == "dynamic_batching"
    d = g.dynamic_batching
    assert d.priority_levels == 3 and d.default_priority_level == 2
    assert d.default_queue_policy.allow_timeout_override
    assert d.default_queue_policy.timeout_action == protos.pb.ModelQueuePolicy.REJECT
    assert set(d.priority_queue_policy) == {1, 3}
    assert d.priority_queue_policy[1].max_queue_size == 2
    assert not d.priority_queue_policy[1].allow_timeout_override
    assert d.priority_queue_policy[3].timeout_action == protos.pb.ModelQueuePolicy.DELAY
    # a model without policies shows none
    c = ok_json(get(demo1, "/v2/models/batched/config"))
    assert "priority_levels" not in c["dynamic_batching"]
