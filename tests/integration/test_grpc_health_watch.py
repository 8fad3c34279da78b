"""grpc.health.v1.Health/Watch against demos of their own: the status at once, again at each
change (offline / online, a model unloaded and loaded), SERVICE_UNKNOWN that goes on watching,
the stream's end at the client's cancel and at the server's close (NOT_SERVING, then OK)."""
import queue
import signal
import threading

import grpc
import requests

from grpc_stubs import make_channel
from grpc_stubs import protos  # noqa: F401 (fixture)

T = 5.0


class Watch:
    """A Watch stream read on a thread: statuses arrive in a queue; its end as ('end', code)."""

    def __init__(self, protos, ch, service):
        self.hs = protos.health_pb.HealthCheckResponse
        stub = protos.health_grpc.HealthStub(ch)
        self.call = stub.Watch(protos.health_pb.HealthCheckRequest(service=service))
        self.q = queue.Queue()
        self.t = threading.Thread(target=self._read, daemon=True)
        self.t.start()

    def _read(self):
        try:
            for m in self.call:
                self.q.put(m.status)
            self.q.put(("end", grpc.StatusCode.OK))
        except grpc.RpcError as e:
            self.q.put(("end", e.code()))

    def next(self, timeout=T):
        return self.q.get(timeout=timeout)

    def expect(self, name):
        got = self.next()
        assert got == self.hs.ServingStatus.Value(name), (got, name)

    def quiet(self, seconds=0.3):
        """Nothing more arrives (no repeated status, no end)."""
        try:
            got = self.q.get(timeout=seconds)
        except queue.Empty:
            return
        raise AssertionError("unexpected %r" % (got,))


def _get(d, path):
    return requests.get(d.base + path, timeout=T)


def test_watch_server_offline_online_and_cancel(start_demo, protos):
    d = start_demo()
    ch = make_channel(d)
    try:
        w = Watch(protos, ch, "")
        svc = Watch(protos, ch, "inference.GRPCInferenceService")  # a served service: the server
        w.expect("SERVING")
        svc.expect("SERVING")
        w.quiet()
        assert _get(d, "/grps/v1/health/offline").status_code == 200
        w.expect("NOT_SERVING")
        svc.expect("NOT_SERVING")
        assert _get(d, "/grps/v1/health/offline").status_code == 200  # no change: nothing sent
        w.quiet()
        # online through gRPC (grps's Online), the other front end's switch
        g = protos.grps_grpc.GrpsServiceStub(ch)
        assert g.Online(protos.grps_pb.GrpsMessage(), timeout=T).status.code == 200
        w.expect("SERVING")
        svc.expect("SERVING")
        w.call.cancel()
        assert w.next() == ("end", grpc.StatusCode.CANCELLED)
        svc.call.cancel()
        assert svc.next() == ("end", grpc.StatusCode.CANCELLED)
        # the server is fine after its watchers left (the ASan build checks they were freed)
        hs = protos.health_grpc.HealthStub(ch)
        r = hs.Check(protos.health_pb.HealthCheckRequest(service=""), timeout=T)
        assert r.status == protos.health_pb.HealthCheckResponse.SERVING
    finally:
        ch.close()


def test_watch_model_and_unknown_service(start_demo, protos):
    d = start_demo()
    ch = make_channel(d)
    try:
        m = Watch(protos, ch, "simple")
        unknown = Watch(protos, ch, "no.such.Service")
        m.expect("SERVING")
        unknown.expect("SERVICE_UNKNOWN")  # not an error: the stream stays open
        unknown.quiet()
        r = requests.post(d.base + "/v2/repository/models/simple/unload", json={}, timeout=T)
        assert r.status_code == 200, r.text
        m.expect("SERVICE_UNKNOWN")  # gone from the registry
        r = requests.post(d.base + "/v2/repository/models/simple/load", json={}, timeout=T)
        assert r.status_code == 200, r.text
        m.expect("SERVING")
        m.quiet()
        unknown.quiet()
        m.call.cancel()
        unknown.call.cancel()
        assert m.next() == ("end", grpc.StatusCode.CANCELLED)
        assert unknown.next() == ("end", grpc.StatusCode.CANCELLED)
    finally:
        ch.close()


def test_watch_ends_ok_at_server_close(start_demo, protos):
    d = start_demo()
    ch = make_channel(d)
    try:
        w = Watch(protos, ch, "")
        m = Watch(protos, ch, "simple")
        w.expect("SERVING")
        m.expect("SERVING")
        other = make_channel(d)  # a client that goes away with its watch open: the
        gone = Watch(protos, other, "")  # connection's end frees the watcher (ASan build)
        gone.expect("SERVING")
        other.close()
        assert gone.next()[0] == "end"
        d.send_signal(signal.SIGTERM)  # the demo closes its server
        w.expect("NOT_SERVING")
        assert w.next() == ("end", grpc.StatusCode.OK)
        m.expect("NOT_SERVING")
        assert m.next() == ("end", grpc.StatusCode.OK)
        assert d.wait_exit(10.0) == 0, d.stderr_tail()
    finally:
        ch.close()


def test_watch_hears_every_loop_of_a_threaded_demo(start_demo, protos):
    """--threads: servers on several loops share one port and one online switch; a watch on
    one loop hears offline / online made through connections that may land on any of them."""
    d = start_demo("--threads", "2")
    ch = make_channel(d)
    try:
        w = Watch(protos, ch, "")
        w.expect("SERVING")
        for _ in range(3):  # fresh connections: the kernel spreads them over the loops
            assert _get(d, "/grps/v1/health/offline").status_code == 200
            w.expect("NOT_SERVING")
            assert _get(d, "/grps/v1/health/online").status_code == 200
            w.expect("SERVING")
        w.quiet()
        w.call.cancel()
        assert w.next() == ("end", grpc.StatusCode.CANCELLED)
    finally:
        ch.close()
