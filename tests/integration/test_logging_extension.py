"""Triton's logging extension (GET/POST /v2/logging, gRPC LogSettings): the settings read and
changed over both, shared by REST and gRPC, applied whole or refused naming the problem; the
levels decide what reaches the host's log, and the demo (the host) writes to the file and in
the format the settings name."""
import os
import re
import socket
import tempfile
import time

import grpc
import pytest
import requests

from grpc_stubs import load_stubs, make_channel

DEFAULTS = {"log_file": "", "log_info": True, "log_warning": True, "log_error": True,
            "log_verbose_level": 0, "log_format": "default"}


@pytest.fixture
def ldemo(start_demo):
    return start_demo("--max-connections", "2", "--threads", "1")


def hit_the_connection_limit(d):
    """Three connections at once past a limit of two: the server warns (its log)."""
    socks = [socket.create_connection((d.host, d.port)) for _ in range(3)]
    time.sleep(0.3)
    for s in socks:
        s.close()
    time.sleep(0.1)


def test_rest_get_and_post(ldemo):
    r = requests.get(ldemo.url("/v2/logging"), timeout=5)
    assert r.status_code == 200 and r.json() == DEFAULTS, r.text
    assert "logging" in requests.get(ldemo.url("/v2"), timeout=5).json()["extensions"]
    r = requests.post(ldemo.url("/v2/logging"), json={"log_info": False, "log_verbose_level": 2},
                      timeout=5)
    assert r.status_code == 200, r.text
    assert r.json() == dict(DEFAULTS, log_info=False, log_verbose_level=2)
    assert requests.get(ldemo.url("/v2/logging"), timeout=5).json()["log_verbose_level"] == 2
    for body, names in (({"log_error": False, "log_colour": "red"}, "unknown log setting 'log_colour'"),
                        ({"log_info": "yes"}, "'log_info' must be a boolean"),
                        ({"log_format": "json"}, "\"default\" or \"ISO8601\"")):
        r = requests.post(ldemo.url("/v2/logging"), json=body, timeout=5)
        assert r.status_code == 400 and names in r.json()["error"], r.text
    # refused whole: log_error did not change with the unknown setting beside it
    assert requests.get(ldemo.url("/v2/logging"), timeout=5).json()["log_error"] is True


def test_grpc_log_settings_share_the_settings(ldemo):
    pb = load_stubs().pb
    with make_channel(ldemo) as ch:
        call = ch.unary_unary("/inference.GRPCInferenceService/LogSettings",
                              request_serializer=pb.LogSettingsRequest.SerializeToString,
                              response_deserializer=pb.LogSettingsResponse.FromString)
        r = call(pb.LogSettingsRequest(), timeout=5)
        got = {k: getattr(v, v.WhichOneof("parameter_choice")) for k, v in r.settings.items()}
        assert got == DEFAULTS
        req = pb.LogSettingsRequest()
        req.settings["log_verbose_level"].uint32_param = 3
        req.settings["log_warning"].bool_param = False
        r = call(req, timeout=5)
        assert r.settings["log_verbose_level"].uint32_param == 3
        assert r.settings["log_warning"].bool_param is False
        bad = pb.LogSettingsRequest()
        bad.settings["log_file"].bool_param = True
        with pytest.raises(grpc.RpcError) as e:
            call(bad, timeout=5)
        assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "'log_file' must be a string" in e.value.details()
    got = requests.get(ldemo.url("/v2/logging"), timeout=5).json()
    assert got["log_verbose_level"] == 3 and got["log_warning"] is False


def test_the_host_writes_where_and_what_the_settings_say(ldemo):
    with tempfile.TemporaryDirectory() as td:
        path = os.path.join(td, "server.log")
        r = requests.post(ldemo.url("/v2/logging"),
                          json={"log_file": path, "log_format": "ISO8601"}, timeout=5)
        assert r.status_code == 200, r.text
        hit_the_connection_limit(ldemo)
        text = open(path).read()
        assert re.search(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ inferserve-demo: WARN .*connection "
                         r"limit \(2\) is reached", text, re.M), text
        # warnings off: the next one reaches neither the file nor stderr
        r = requests.post(ldemo.url("/v2/logging"), json={"log_warning": False}, timeout=5)
        assert r.status_code == 200
        before = open(path).read()
        hit_the_connection_limit(ldemo)
        assert open(path).read() == before
        requests.post(ldemo.url("/v2/logging"), json={"log_file": ""}, timeout=5)
    assert "connection limit" not in ldemo.stderr_tail()
