"""examples/xgboost: a real XGBoost booster behind the library. The model is trained here, at
test time, with Debian's python3-xgboost on the iris data python3-sklearn ships (no download),
saved as JSON, and served by inferserve-xgboost; every protocol's answer must equal xgboost's
own predict_proba on the same float32 rows, bit for bit (NaN rows included: missing values)."""
import concurrent.futures
import json
import os
import pathlib
import re
import shutil
import signal
import subprocess

import numpy as np
import pytest
import requests

from grpc_stubs import add_input, encode_raw, load_stubs, make_channel, outputs_of

xgb = pytest.importorskip("xgboost", reason="python3-xgboost is not installed")
datasets = pytest.importorskip("sklearn.datasets", reason="python3-sklearn is not installed")

T = 10.0
LABELS = ["setosa", "versicolor", "virginica"]


def example_binary():
    demo = os.environ.get("INFERSERVE_DEMO")
    build = pathlib.Path(demo).resolve().parents[2] if demo else \
        pathlib.Path(__file__).resolve().parents[2] / "build"
    path = build / "examples" / "xgboost" / "inferserve-xgboost"
    if not path.exists():
        # built whenever libxgboost-dev is there (scripts/install-deps.sh installs it)
        have_lib = subprocess.run(["pkg-config", "--exists", "xgboost"]).returncode == 0
        if have_lib:
            pytest.fail("%s was not built although libxgboost-dev is installed" % path)
        pytest.skip("libxgboost-dev is not installed")
    return path


class Server:
    def __init__(self, model_path, *flags):
        self.proc = subprocess.Popen([str(example_binary()), "--model", str(model_path),
                                      "--labels", ",".join(LABELS), "--port", "0", *flags],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        m = re.match(r"inferserve-xgboost serving iris \(4 features, 3 outputs\) on (\d+)", line)
        assert m, (line, self.proc.stderr.read() if self.proc.poll() is not None else "")
        self.host, self.port = "127.0.0.1", int(m.group(1))

    def url(self, path):
        return "http://%s:%d%s" % (self.host, self.port, path)

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        assert self.proc.wait(timeout=10) == 0, self.proc.stderr.read()


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    X, y = datasets.load_iris(return_X_y=True)
    clf = xgb.XGBClassifier(n_estimators=20, max_depth=3, learning_rate=0.3,
                            objective="multi:softprob", random_state=0)
    clf.fit(X, y)
    path = tmp_path_factory.mktemp("xgb") / "iris.json"
    clf.save_model(str(path))
    rows = X.astype(np.float32)
    rows = np.vstack([rows, np.array([[np.nan, 3.0, np.nan, 1.0]], dtype=np.float32)])
    return path, clf, rows


@pytest.fixture(scope="module")
def server(trained):
    s = Server(trained[0], "--max-batch", "256")  # all 151 rows in one request
    yield s
    s.stop()


def expected(clf, rows):
    return clf.predict_proba(rows).astype(np.float32)


def test_v2_rest_matches_xgboost_bit_for_bit(server, trained):
    _, clf, rows = trained
    body = {"inputs": [{"name": "features", "datatype": "FP32", "shape": list(rows.shape),
                        "data": [None if np.isnan(v) else float(v) for v in rows.ravel()]}]}
    # JSON has no NaN literal in strict parsers: the library reads NaN, so send it as such
    text = json.dumps(body).replace("null", "NaN")
    r = requests.post(server.url("/v2/models/iris/infer"), data=text, timeout=T)
    assert r.status_code == 200, r.text
    out = r.json()["outputs"][0]
    assert out["shape"] == [len(rows), 3]
    got = np.array(out["data"], dtype=np.float32).reshape(len(rows), 3)
    assert np.array_equal(got, expected(clf, rows)), (got[:3], expected(clf, rows)[:3])


def test_v2_grpc_matches_xgboost(server, trained):
    _, clf, rows = trained
    pb = load_stubs()
    req = pb.pb.ModelInferRequest(model_name="iris")
    add_input(req, "features", "FP32", list(rows.shape), raw=rows.tobytes())
    with make_channel(server) as ch:
        resp = pb.pb_grpc.GRPCInferenceServiceStub(ch).ModelInfer(req, timeout=T)
    dt, shape, raw = outputs_of(resp)["probabilities"]
    assert dt == "FP32" and shape == [len(rows), 3]
    assert np.array_equal(np.frombuffer(raw, dtype="<f4").reshape(-1, 3), expected(clf, rows))


def test_concurrent_rows_are_batched_into_one_predict(trained):
    _, clf, rows = trained
    s = Server(trained[0], "--batch-delay-us", "20000", "--max-batch", "64")
    try:
        def one(i):
            r = requests.post(s.url("/v2/models/iris/infer"), timeout=T, json={
                "inputs": [{"name": "features", "datatype": "FP32", "shape": [1, 4],
                            "data": [float(v) for v in rows[i]]}]})
            assert r.status_code == 200, r.text
            return i, np.array(r.json()["outputs"][0]["data"], dtype=np.float32)
        with concurrent.futures.ThreadPoolExecutor(16) as pool:
            results = list(pool.map(one, range(0, 150, 3)))
        want = expected(clf, rows)
        for i, got in results:
            assert np.array_equal(got, want[i]), i
        stats = requests.get(s.url("/v2/models/iris/stats"), timeout=T).json()["model_stats"][0]
        assert stats["inference_count"] == 50
        # 50 requests, 16 at a time, 20 ms to gather: far fewer XGBoost calls than requests
        assert stats["execution_count"] < 25, stats
        assert any(b["batch_size"] > 1 for b in stats["batch_stats"]), stats
    finally:
        s.stop()


def test_classification_extension_and_tf_serving_classify(server, trained):
    _, clf, rows = trained
    want = expected(clf, rows[:3])
    r = requests.post(server.url("/v2/models/iris/infer"), timeout=T, json={
        "inputs": [{"name": "features", "datatype": "FP32", "shape": [3, 4],
                    "data": [float(v) for v in rows[:3].ravel()]}],
        "outputs": [{"name": "probabilities", "parameters": {"classification": 1}}]})
    assert r.status_code == 200, r.text
    top = r.json()["outputs"][0]["data"]
    for k, entry in enumerate(top):
        value, index, label = entry.split(":")
        assert int(index) == int(np.argmax(want[k])) and label == LABELS[int(index)], entry
    # TF Serving :classify — examples of features, labels and scores back
    r = requests.post(server.url("/v1/models/iris:classify"), timeout=T, json={
        "examples": [{"features": [float(v) for v in rows[100]]}]})
    assert r.status_code == 200, r.text
    (res,) = r.json()["results"]
    assert [c[0] for c in res] == LABELS
    assert np.array_equal(np.array([c[1] for c in res], dtype=np.float32),
                          expected(clf, rows[100:101])[0])


def test_tf_serving_and_vertex_predict(server, trained):
    _, clf, rows = trained
    inst = [[float(v) for v in row] for row in rows[40:44]]
    want = expected(clf, rows[40:44])
    r = requests.post(server.url("/v1/models/iris:predict"), json={"instances": inst}, timeout=T)
    assert r.status_code == 200, r.text
    assert np.array_equal(np.array(r.json()["predictions"], dtype=np.float32), want)
    r = requests.post(server.url("/predict"), json={"instances": inst}, timeout=T)
    assert r.status_code == 200, r.text
    assert np.array_equal(np.array(r.json()["predictions"], dtype=np.float32), want)
    assert requests.get(server.url("/health"), timeout=T).status_code == 200


def test_wrong_feature_count_is_400(server):
    r = requests.post(server.url("/v2/models/iris/infer"), timeout=T, json={
        "inputs": [{"name": "features", "datatype": "FP32", "shape": [1, 3], "data": [1, 2, 3]}]})
    assert r.status_code == 400 and "features" in r.json()["error"], r.text
    meta = requests.get(server.url("/v2/models/iris"), timeout=T).json()
    assert meta["platform"] == "xgboost"
    assert meta["inputs"] == [{"name": "features", "datatype": "FP32", "shape": [-1, 4]}]
