"""Protocol front ends are switched by name (isv_options_set_protocol, the demo's
--disable-protocol): a disabled one's REST paths answer 404 and its gRPC methods UNIMPLEMENTED,
while the others are served as before."""
import grpc
import pytest
import requests

from grpc_stubs import expect_rpc_error, make_channel, simple_request
from grpc_stubs import protos  # noqa: F401 (fixture)
from isvtest import TIMEOUT, Demo, assert_error

T = 5.0


def _clients(protos, d):
    ch = make_channel(d)
    grpc.channel_ready_future(ch).result(timeout=T)
    return ch, protos.pb_grpc.GRPCInferenceServiceStub(ch), protos.health_grpc.HealthStub(ch)


def test_disable_kserve_v2(start_demo, protos):
    d = start_demo("--disable-protocol", "kserve_v2")
    r = requests.get(d.url("/v2/health/ready"), timeout=TIMEOUT)
    assert_error(r, 404, "unknown path '/v2/health/ready'")
    assert requests.get(d.url("/metrics"), timeout=TIMEOUT).status_code == 200
    ch, stub, health = _clients(protos, d)
    try:
        expect_rpc_error(stub.ServerLive, grpc.StatusCode.UNIMPLEMENTED,
                         "/inference.GRPCInferenceService/ServerLive",
                         request=protos.pb.ServerLiveRequest(), timeout=T)
        expect_rpc_error(stub.ModelInfer, grpc.StatusCode.UNIMPLEMENTED,
                         request=simple_request(protos.pb)[0], timeout=T)
        # grpc.health is its own front end: still there, and no longer knows the V2 service
        ok = health.Check(protos.health_pb.HealthCheckRequest(service=""), timeout=T)
        assert ok.status == protos.health_pb.HealthCheckResponse.SERVING
        expect_rpc_error(health.Check, grpc.StatusCode.NOT_FOUND,
                         request=protos.health_pb.HealthCheckRequest(
                             service="inference.GRPCInferenceService"), timeout=T)
    finally:
        ch.close()


def test_disable_metrics_and_health(start_demo, protos):
    d = start_demo("--disable-protocol", "metrics", "--disable-protocol", "grpc_health")
    assert_error(requests.get(d.url("/metrics"), timeout=TIMEOUT), 404, "unknown path '/metrics'")
    assert requests.get(d.url("/v2/health/live"), timeout=TIMEOUT).status_code == 200
    ch, stub, health = _clients(protos, d)
    try:
        expect_rpc_error(health.Check, grpc.StatusCode.UNIMPLEMENTED,
                         request=protos.health_pb.HealthCheckRequest(service=""), timeout=T)
        assert stub.ServerLive(protos.pb.ServerLiveRequest(), timeout=T).live
    finally:
        ch.close()


def test_unknown_protocol_name_is_refused():
    with pytest.raises(RuntimeError) as e:
        Demo(extra_args=["--disable-protocol", "kserve_v3"], start_timeout=5.0)
    assert "names no protocol" in str(e.value)
