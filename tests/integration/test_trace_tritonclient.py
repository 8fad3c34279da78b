"""Triton's own client library against the trace and logging extensions: tritonclient's
update_trace_settings / get_trace_settings and update_log_settings / get_log_settings over HTTP
and gRPC (its gRPC stubs generated from
Triton's grpc_service.proto, so this also checks the messages' field numbers against Triton's).
Skipped unless tritonclient is importable — it is not a Debian package; make it so as
tests/integration/triton_examples.sh does and put it on PYTHONPATH (README.md)."""
import os
import tempfile
import time

import numpy as np
import pytest

th = pytest.importorskip("tritonclient.http")
tg = pytest.importorskip("tritonclient.grpc")


def test_tritonclient_reads_and_changes_the_trace_settings(start_demo):
    d = start_demo("--threads", "1")
    url = "%s:%d" % (d.host, d.port)
    h, g = th.InferenceServerClient(url), tg.InferenceServerClient(url)
    assert h.get_trace_settings() == {"trace_level": ["OFF"], "trace_rate": "1000",
                                      "trace_count": "-1", "log_frequency": "0", "trace_file": ""}
    got = g.get_trace_settings(as_json=True)["settings"]
    assert got["trace_level"]["value"] == ["OFF"] and got["trace_rate"]["value"] == ["1000"]
    with tempfile.TemporaryDirectory() as td:
        path = os.path.join(td, "trace.json")
        h.update_trace_settings(settings={"trace_level": ["TIMESTAMPS"], "trace_rate": "1",
                                          "trace_file": path})
        got = g.update_trace_settings(model_name="simple", settings={"trace_count": "2"},
                                      as_json=True)["settings"]
        assert got["trace_count"]["value"] == ["2"] and got["trace_file"]["value"] == [path]
        assert h.get_trace_settings(model_name="simple")["trace_count"] == "2"
        inputs = [th.InferInput("INPUT0", [1, 16], "INT32"), th.InferInput("INPUT1", [1, 16], "INT32")]
        inputs[0].set_data_from_numpy(np.arange(16, dtype=np.int32).reshape(1, 16))
        inputs[1].set_data_from_numpy(np.ones((1, 16), dtype=np.int32))
        for _ in range(3):
            h.infer("simple", inputs)
        end = time.monotonic() + 5
        while time.monotonic() < end and (not os.path.exists(path) or
                                          len(open(path).read().splitlines()) < 2):
            time.sleep(0.02)
        time.sleep(0.1)
        assert len(open(path).read().splitlines()) == 2  # the model's count ran out
        got = g.update_trace_settings(model_name="simple", settings={"trace_count": None},
                                      as_json=True)["settings"]
        assert got["trace_count"]["value"] == ["-1"]  # the global one again
    with pytest.raises(Exception) as e:
        h.update_trace_settings(settings={"trace_level": ["TENSORS"]})
    assert "TENSORS" in str(e.value)
    with pytest.raises(Exception) as e:
        g.update_trace_settings(settings={"trace_rate": "0"})
    assert "trace_rate" in str(e.value)


def test_tritonclient_reads_and_changes_the_log_settings(start_demo, tmp_path):
    """Triton's logging extension through tritonclient's update_log_settings /
    get_log_settings, HTTP and gRPC: what one protocol changes the other reads."""
    d = start_demo("--threads", "1")
    url = "%s:%d" % (d.host, d.port)
    h, g = th.InferenceServerClient(url), tg.InferenceServerClient(url)
    got = h.get_log_settings()
    assert got["log_info"] is True and got["log_verbose_level"] == 0, got
    h.update_log_settings(settings={"log_info": False, "log_verbose_level": 1})
    got = g.get_log_settings(as_json=True)["settings"]
    assert got["log_info"]["bool_param"] is False and got["log_verbose_level"]["uint32_param"] == 1
    path = str(tmp_path / "server.log")
    got = g.update_log_settings(settings={"log_file": path, "log_info": True}, as_json=True)
    assert got["settings"]["log_file"]["string_param"] == path
    got = h.get_log_settings()
    assert got["log_file"] == path and got["log_info"] is True
