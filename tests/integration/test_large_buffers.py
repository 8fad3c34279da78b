"""Large bodies and messages go through the server's cache of mapped blocks (codec/bigbuf):
repeated 8 MiB round trips over the HTTP binary extension and gRPC raw contents must come back
byte-exact whatever buffer they reuse, with the cache on (default) or off, and the demo's
memory must not grow with the number of round trips."""
import struct

import pytest
import requests

from grpc_stubs import add_input, make_channel, outputs_of, load_stubs

N = 2 * 1024 * 1024  # FP32 elements: 8 MiB


def _rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def _payload(seed):
    # distinct bytes per round so that a stale buffer would show
    return struct.pack("<I", seed) * N


def _binary_round_trip(d, raw, n=N):
    head = ('{"inputs":[{"name":"INPUT0","shape":[1,%d],"datatype":"FP32","parameters":'
            '{"binary_data_size":%d}}],"parameters":{"binary_data_output":true}}' % (n, len(raw))
            ).encode()
    r = requests.post(d.url("/v2/models/identity_fp32/infer"), data=head + raw,
                      headers={"Inference-Header-Content-Length": str(len(head))}, timeout=60)
    assert r.status_code == 200, r.text[:300]
    hl = int(r.headers["Inference-Header-Content-Length"])
    return r.content[hl:]


@pytest.mark.parametrize("cache", ["default", "0"])
def test_repeated_large_round_trips(start_demo, cache):
    d = start_demo(*(() if cache == "default" else ("--buffer-cache-bytes", cache)))
    pb = load_stubs().pb
    ch = make_channel(d)
    try:
        call = ch.unary_unary("/inference.GRPCInferenceService/ModelInfer")
        rss = []
        for i in range(6):
            raw = _payload(0x3f800000 + i)  # 1.0f + i ulps: finite floats
            assert _binary_round_trip(d, raw) == raw, "HTTP binary round %d differs" % i
            req = pb.ModelInferRequest(model_name="identity_fp32")
            add_input(req, "INPUT0", "FP32", [1, N], raw=raw)
            resp = pb.ModelInferResponse.FromString(call(req.SerializeToString(), timeout=30))
            assert resp.raw_output_contents[0] == raw, "gRPC round %d differs" % i
            rss.append(_rss_kib(d.proc.pid))
        # warm after two rounds; later rounds reuse (cache) or unmap (no cache): no growth
        assert rss[-1] <= rss[2] + 16 * 1024, "RSS grew: %s KiB" % rss
    finally:
        ch.close()


def test_a_64_mib_tensor_fits_the_default_limits(demo):
    # the default body and message limit holds a 64 MiB tensor with what describes it (its JSON
    # header, or the message's other fields): 65 MiB
    n = (64 << 20) // 4
    raw = struct.pack("<I", 7) * n
    assert _binary_round_trip(demo, raw, n) == raw
