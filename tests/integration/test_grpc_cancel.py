"""A client's cancel reaches the backend (isv_request_is_cancelled): the demo's `slow` model stops
early when its request is cancelled, so cancelled calls give its instances back.

`slow` has 8 instances (on the demo's 8 worker threads): 8 cancelled 3-second calls would
otherwise keep every instance busy for 3 s and a following short call could not finish within
1.5 s."""
import time

import grpc

from grpc_stubs import slow_request
from grpc_stubs import _grpc_channels, channel, protos, stub  # noqa: F401 (fixtures)

SLOW_INSTANCES = 8  # examples/demo/zoo.c


def test_cancelled_calls_free_their_workers(stub, protos):
    pool = SLOW_INSTANCES
    futures = [stub.ModelInfer.future(slow_request(protos.pb, 3000), timeout=10)
               for _ in range(pool)]
    time.sleep(0.3)  # every worker is now sleeping in `slow`
    for f in futures:
        assert f.cancel()
    t0 = time.monotonic()
    r = stub.ModelInfer(slow_request(protos.pb, 10, req_id="after"), timeout=1.5)
    assert r.id == "after"
    assert time.monotonic() - t0 < 1.0


def test_deadline_cancels_the_backend_too(stub, protos):
    pool = SLOW_INSTANCES
    futures = [stub.ModelInfer.future(slow_request(protos.pb, 3000), timeout=0.2)
               for _ in range(pool)]
    for f in futures:
        try:
            f.result()
            raise AssertionError("a 3 s call finished within its 0.2 s deadline")
        except grpc.RpcError as e:
            assert e.code() == grpc.StatusCode.DEADLINE_EXCEEDED, e
    r = stub.ModelInfer(slow_request(protos.pb, 10, req_id="after"), timeout=1.5)
    assert r.id == "after"
