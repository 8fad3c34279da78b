"""TensorFlow Serving over gRPC (tensorflow.serving.PredictionService and ModelService) against
the demo, with grpcio stubs generated at test time from the project's own
proto/tensorflow_serving.proto (grpc_stubs.py): Predict on half_plus_three and
saved_model_half_plus_three with every way of naming a version and a signature, every dtype
round-tripped through the identity models (typed fields and tensor_content), TF's fill-out of a
short typed field, output_filter, TF Serving's errors, GetModelMetadata (the REST metadata's
signatures), GetModelStatus, Classify and Regress on tf.Example (the REST tests' examples),
MultiInference, HandleReloadConfigRequest on the demo's repository, and reflection."""
import struct
import time

import grpc
import pytest

from grpc_stubs import TIMEOUT, expect_rpc_error, make_channel, protos  # noqa: F401
from isvtest import get, ok_json, post_json

PS = "tensorflow.serving.PredictionService"
MS = "tensorflow.serving.ModelService"

# DataType numbers (tensorflow_core.proto)
DT = {"DT_FLOAT": 1, "DT_DOUBLE": 2, "DT_INT32": 3, "DT_UINT8": 4, "DT_INT16": 5, "DT_INT8": 6,
      "DT_STRING": 7, "DT_COMPLEX64": 8, "DT_INT64": 9, "DT_BOOL": 10, "DT_BFLOAT16": 14,
      "DT_UINT16": 17, "DT_HALF": 19, "DT_RESOURCE": 20, "DT_UINT32": 22, "DT_UINT64": 23}


@pytest.fixture
def tfs(protos, demo):
    ch = make_channel(demo)
    grpc.channel_ready_future(ch).result(timeout=TIMEOUT)
    yield protos.tfs_grpc.PredictionServiceStub(ch), protos.tfs_grpc.ModelServiceStub(ch)
    ch.close()


def tensor(pb, dtype, shape, **vals):
    t = pb.tf_pb.TensorProto(dtype=DT[dtype], **vals)
    for d in shape:
        t.tensor_shape.dim.add(size=d)
    return t


def spec(pb, name, version=None, label=None, signature=None):
    s = pb.tfs_pb.ModelSpec(name=name)
    if version is not None:
        s.version.value = version
    if label is not None:
        s.version_label = label
    if signature is not None:
        s.signature_name = signature
    return s


def predict_req(pb, name, inputs, outputs=(), **kw):
    req = pb.tfs_pb.PredictRequest(model_spec=spec(pb, name, **kw), output_filter=list(outputs))
    for k, v in inputs.items():
        req.inputs[k].CopyFrom(v)
    return req


def floats(t):
    """A float32 output's values (tensor_content or float_val)."""
    if t.tensor_content:
        return list(struct.unpack("<%df" % (len(t.tensor_content) // 4), t.tensor_content))
    return list(t.float_val)


NAMINGS = [{}, {"version": 123}, {"signature": ""}, {"signature": "serving_default"},
           {"signature": "tensorflow/serving/regress"},
           {"signature": "tensorflow/serving/classify", "version": 123}]


@pytest.mark.parametrize("model,how",
                         [("half_plus_three", h) for h in NAMINGS + [{"label": "stable"}]] +
                         [("saved_model_half_plus_three", h) for h in NAMINGS])  # no label there
def test_predict_half_plus_three(protos, tfs, model, how):
    ps, _ = tfs
    x = tensor(protos, "DT_FLOAT", [3], float_val=[1.0, 2.0, 5.0])
    resp = ps.Predict(predict_req(protos, model, {"x": x}, **how), timeout=TIMEOUT)
    sig = how.get("signature") or "serving_default"
    alias = {"tensorflow/serving/regress": "outputs",
             "tensorflow/serving/classify": "scores"}.get(sig, "y")
    assert list(resp.outputs) == [alias], resp
    out = resp.outputs[alias]
    assert out.dtype == DT["DT_FLOAT"] and [d.size for d in out.tensor_shape.dim] == [3], out
    assert floats(out) == [3.5, 4.0, 5.5], out
    assert resp.model_spec.name == model, resp.model_spec
    assert resp.model_spec.HasField("version") and resp.model_spec.version.value == 123
    assert resp.model_spec.signature_name == sig, resp.model_spec


IDENTITY = [  # model, dtype, typed field, values, struct code of tensor_content
    ("identity_fp32", "DT_FLOAT", "float_val", [1.5, -2.25, 3e38, 0.0], "f"),
    ("identity_fp64", "DT_DOUBLE", "double_val", [1.5, -2.25, 1e300, 5e-324], "d"),
    ("identity_int8", "DT_INT8", "int_val", [-128, 127, 0, 5], "b"),
    ("identity_uint8", "DT_UINT8", "int_val", [0, 255, 1, 2], "B"),
    ("identity_int16", "DT_INT16", "int_val", [-32768, 32767, 0, -1], "h"),
    ("identity_uint16", "DT_UINT16", "int_val", [0, 65535, 7, 8], "H"),
    ("identity_int32", "DT_INT32", "int_val", [-2**31, 2**31 - 1, 0, -7], "i"),
    ("identity_int64", "DT_INT64", "int64_val", [-2**63, 2**63 - 1, 0, -7], "q"),
    ("identity_uint32", "DT_UINT32", "uint32_val", [0, 2**32 - 1, 9, 10], "I"),
    ("identity_uint64", "DT_UINT64", "uint64_val", [0, 2**64 - 1, 9, 10], "Q"),
    ("identity_bool", "DT_BOOL", "bool_val", [True, False, False, True], "?"),
    ("identity_fp16", "DT_HALF", "half_val", [0x3C00, 0xC000, 0x7C00, 0x0001], "H"),
    ("identity_bf16", "DT_BFLOAT16", "half_val", [0x3F80, 0xC000, 0x7F80, 0x0001], "H"),
]


@pytest.mark.parametrize("model,dtype,field,values,code", IDENTITY, ids=[i[0] for i in IDENTITY])
def test_every_dtype_round_trips(protos, tfs, model, dtype, field, values, code):
    ps, _ = tfs
    raw = struct.pack("<%d%s" % (len(values), code), *values)
    for t in (tensor(protos, dtype, [2, 2], **{field: values}),
              tensor(protos, dtype, [2, 2], tensor_content=raw)):
        resp = ps.Predict(predict_req(protos, model, {"INPUT0": t}), timeout=TIMEOUT)
        out = resp.outputs["OUTPUT0"]
        assert out.dtype == DT[dtype], out
        assert [d.size for d in out.tensor_shape.dim] == [2, 2], out
        assert out.tensor_content == raw, (dtype, out)


def test_strings_round_trip_as_string_val(protos, tfs):
    ps, _ = tfs
    vals = [b"a", b"", b"\x00\xff binary", b"x" * 3000]
    t = tensor(protos, "DT_STRING", [1, 4], string_val=vals)
    out = ps.Predict(predict_req(protos, "identity_bytes", {"INPUT0": t}),
                     timeout=TIMEOUT).outputs["OUTPUT0"]
    assert out.dtype == DT["DT_STRING"] and list(out.string_val) == vals, out
    assert not out.tensor_content


def test_large_tensor_content_by_reference(protos, tfs):
    ps, _ = tfs
    n = 300000  # 1.2 MB: decoded on a worker thread, answered by reference
    raw = struct.pack("<%df" % n, *[float(i % 1000) for i in range(n)])
    t = tensor(protos, "DT_FLOAT", [1, n], tensor_content=raw)
    out = ps.Predict(predict_req(protos, "identity_fp32", {"INPUT0": t}),
                     timeout=TIMEOUT).outputs["OUTPUT0"]
    assert out.tensor_content == raw


def test_a_short_typed_field_is_filled_with_its_last_value(protos, tfs):
    """TF's rule (tensor.cc): fewer values than the shape holds repeat the last one."""
    ps, _ = tfs
    t = tensor(protos, "DT_INT32", [2, 3], int_val=[7, 9])
    out = ps.Predict(predict_req(protos, "identity_int32", {"INPUT0": t}),
                     timeout=TIMEOUT).outputs["OUTPUT0"]
    assert struct.unpack("<6i", out.tensor_content) == (7, 9, 9, 9, 9, 9)
    t = tensor(protos, "DT_STRING", [1, 3], string_val=[b"s"])
    out = ps.Predict(predict_req(protos, "identity_bytes", {"INPUT0": t}),
                     timeout=TIMEOUT).outputs["OUTPUT0"]
    assert list(out.string_val) == [b"s"] * 3


def test_output_filter(protos, tfs):
    ps, _ = tfs
    inputs = {"tag": tensor(protos, "DT_STRING", [1], string_val=[b"hello"]),
              "signal": tensor(protos, "DT_FLOAT", [1, 5], float_val=[1, 2, 3, 4, 5]),
              "sensor": tensor(protos, "DT_INT32", [1, 2, 2], int_val=[1, 2, 3, 4])}
    every = ps.Predict(predict_req(protos, "tf_multi", inputs), timeout=TIMEOUT)
    assert set(every.outputs) == {"tag_len", "signal_sum", "sensor_bytes"}, every
    one = ps.Predict(predict_req(protos, "tf_multi", inputs, outputs=["signal_sum"]),
                     timeout=TIMEOUT)
    assert list(one.outputs) == ["signal_sum"], one
    assert floats(one.outputs["signal_sum"]) == [15.0]
    expect_rpc_error(ps.Predict, grpc.StatusCode.INVALID_ARGUMENT,
                     "output tensor alias not found in signature: nope Outputs expected to be in "
                     "the set {sensor_bytes,signal_sum,tag_len}.",
                     request=predict_req(protos, "tf_multi", inputs, outputs=["nope"]),
                     timeout=TIMEOUT)
    expect_rpc_error(ps.Predict, grpc.StatusCode.INVALID_ARGUMENT,
                     "duplicate output tensor alias: tag_len",
                     request=predict_req(protos, "tf_multi", inputs,
                                         outputs=["tag_len", "tag_len"]), timeout=TIMEOUT)


def test_predict_errors(protos, tfs):
    ps, _ = tfs
    x = {"x": tensor(protos, "DT_FLOAT", [1], float_val=[1.0])}
    E = grpc.StatusCode

    def err(code, needle, req):
        expect_rpc_error(ps.Predict, code, needle, request=req, timeout=TIMEOUT)

    err(E.NOT_FOUND, "Servable not found for request: Latest(nope)", predict_req(protos, "nope", x))
    err(E.NOT_FOUND, "Servable not found for request: Specific(nope, 3)",
        predict_req(protos, "nope", x, version=3))
    err(E.NOT_FOUND, "Servable not found for request: Specific(half_plus_three, 7)",
        predict_req(protos, "half_plus_three", x, version=7))
    err(E.INVALID_ARGUMENT, "Unrecognized servable version label: nope",
        predict_req(protos, "half_plus_three", x, label="nope"))
    err(E.FAILED_PRECONDITION, 'Serving signature key "other" not found.',
        predict_req(protos, "half_plus_three", x, signature="other"))
    err(E.INVALID_ARGUMENT, "Missing ModelSpec", protos.tfs_pb.PredictRequest())
    err(E.INVALID_ARGUMENT, "input size does not match signature: 2!=1 len({w,x}) != len({x}). "
        "Sent extra: {w}. Missing but required: {}.",
        predict_req(protos, "half_plus_three", dict(x, w=x["x"])))
    err(E.INVALID_ARGUMENT, "Missing but required: {x}",
        predict_req(protos, "half_plus_three", {}))
    err(E.INVALID_ARGUMENT, "input 'INPUT0': dtype DT_COMPLEX64 is not supported",
        predict_req(protos, "identity_fp32",
                    {"INPUT0": tensor(protos, "DT_COMPLEX64", [1, 1], scomplex_val=[1, 2])}))
    err(E.INVALID_ARGUMENT, "input 'INPUT0': dtype DT_RESOURCE is not supported",
        predict_req(protos, "identity_fp32", {"INPUT0": tensor(protos, "DT_RESOURCE", [1, 1])}))
    err(E.INVALID_ARGUMENT, "input 'INPUT0': int_val given for dtype DT_FLOAT",
        predict_req(protos, "identity_fp32",
                    {"INPUT0": tensor(protos, "DT_FLOAT", [1, 1], int_val=[1])}))
    err(E.INVALID_ARGUMENT, "input 'INPUT0': tensor_content has 3 bytes",
        predict_req(protos, "identity_fp32",
                    {"INPUT0": tensor(protos, "DT_FLOAT", [1, 1], tensor_content=b"abc")}))
    err(E.INVALID_ARGUMENT, "input 'INPUT0': value 300 is out of range for DT_INT8",
        predict_req(protos, "identity_int8",
                    {"INPUT0": tensor(protos, "DT_INT8", [1, 1], int_val=[300])}))
    err(E.INVALID_ARGUMENT, "input 'INPUT0': float_val has 3 values, the shape holds 2",
        predict_req(protos, "identity_fp32",
                    {"INPUT0": tensor(protos, "DT_FLOAT", [1, 2], float_val=[1, 2, 3])}))
    # a dtype the model does not take: the core's validation, INVALID_ARGUMENT
    err(E.INVALID_ARGUMENT, "", predict_req(protos, "identity_fp32",
                                            {"INPUT0": tensor(protos, "DT_INT32", [1, 1],
                                                              int_val=[1])}))


def test_get_model_metadata_matches_rest(protos, tfs, demo):
    ps, _ = tfs
    req = protos.tfs_pb.GetModelMetadataRequest(model_spec=spec(protos, "half_plus_three"),
                                                metadata_field=["signature_def"])
    resp = ps.GetModelMetadata(req, timeout=TIMEOUT)
    assert resp.model_spec.name == "half_plus_three" and resp.model_spec.version.value == 123
    anym = resp.metadata["signature_def"]
    assert anym.type_url == "type.googleapis.com/tensorflow.serving.SignatureDefMap"
    m = protos.tfs_pb.SignatureDefMap()
    assert anym.Unpack(m)
    rest = ok_json(get(demo, "/v1/models/half_plus_three/metadata"))["metadata"][
        "signature_def"]["signature_def"]
    assert set(m.signature_def) == set(rest), (m, rest)
    for name, sd in m.signature_def.items():
        r = rest[name]
        assert sd.method_name == r["method_name"], name
        for side, got in (("inputs", sd.inputs), ("outputs", sd.outputs)):
            assert set(got) == set(r[side]), (name, side)
            for alias, info in got.items():
                ri = r[side][alias]
                assert info.name == ri["name"], (name, alias)
                assert info.dtype == DT[ri["dtype"]], (name, alias)
                assert [str(d.size) for d in info.tensor_shape.dim] == \
                    [d["size"] for d in ri["tensor_shape"]["dim"]], (name, alias)
    # a model without signatures: the implicit serving_default, batch dimension first
    req = protos.tfs_pb.GetModelMetadataRequest(model_spec=spec(protos, "simple"),
                                                metadata_field=["signature_def"])
    m = protos.tfs_pb.SignatureDefMap()
    ps.GetModelMetadata(req, timeout=TIMEOUT).metadata["signature_def"].Unpack(m)
    sd = m.signature_def["serving_default"]
    assert [d.size for d in sd.inputs["INPUT0"].tensor_shape.dim] == [-1, 16]
    assert sd.inputs["INPUT0"].dtype == DT["DT_INT32"]
    E = grpc.StatusCode
    expect_rpc_error(ps.GetModelMetadata, E.INVALID_ARGUMENT,
                     "GetModelMetadataRequest must specify at least one metadata_field",
                     request=protos.tfs_pb.GetModelMetadataRequest(
                         model_spec=spec(protos, "simple")), timeout=TIMEOUT)
    expect_rpc_error(ps.GetModelMetadata, E.INVALID_ARGUMENT,
                     "Metadata field other is not supported",
                     request=protos.tfs_pb.GetModelMetadataRequest(
                         model_spec=spec(protos, "simple"), metadata_field=["other"]),
                     timeout=TIMEOUT)
    expect_rpc_error(ps.GetModelMetadata, E.NOT_FOUND,
                     "Servable not found for request: Latest(nope)",
                     request=protos.tfs_pb.GetModelMetadataRequest(
                         model_spec=spec(protos, "nope"), metadata_field=["signature_def"]),
                     timeout=TIMEOUT)


def test_get_model_status(protos, tfs):
    _, ms = tfs
    st = protos.tfs_pb.ModelVersionStatus
    resp = ms.GetModelStatus(protos.tfs_pb.GetModelStatusRequest(
        model_spec=spec(protos, "multi_version")), timeout=TIMEOUT)
    got = sorted((s.version, s.state, s.status.error_code, s.status.error_message)
                 for s in resp.model_version_status)
    assert got == [(1, st.AVAILABLE, 0, ""), (2, st.AVAILABLE, 0, ""), (3, st.AVAILABLE, 0, "")]
    resp = ms.GetModelStatus(protos.tfs_pb.GetModelStatusRequest(
        model_spec=spec(protos, "multi_version", version=2)), timeout=TIMEOUT)
    assert [(s.version, s.state) for s in resp.model_version_status] == [(2, st.AVAILABLE)]
    resp = ms.GetModelStatus(protos.tfs_pb.GetModelStatusRequest(
        model_spec=spec(protos, "loading")), timeout=TIMEOUT)
    assert [s.state for s in resp.model_version_status] == [st.LOADING]
    E = grpc.StatusCode
    expect_rpc_error(ms.GetModelStatus, E.NOT_FOUND, "Could not find any versions of model nope",
                     request=protos.tfs_pb.GetModelStatusRequest(model_spec=spec(protos, "nope")),
                     timeout=TIMEOUT)
    expect_rpc_error(ms.GetModelStatus, E.NOT_FOUND, "Could not find version 9 of model simple",
                     request=protos.tfs_pb.GetModelStatusRequest(
                         model_spec=spec(protos, "simple", version=9)), timeout=TIMEOUT)
    expect_rpc_error(ms.GetModelStatus, E.INVALID_ARGUMENT, "Missing ModelSpec",
                     request=protos.tfs_pb.GetModelStatusRequest(), timeout=TIMEOUT)


def example(pb, **features):
    """A tf.Example: a float or a list of floats -> float_list, bytes -> bytes_list, int ->
    int64_list."""
    ex = pb.tf_pb.Example()
    for k, v in features.items():
        f = ex.features.feature[k]
        vals = v if isinstance(v, list) else [v]
        if isinstance(vals[0], bytes):
            f.bytes_list.value.extend(vals)
        elif isinstance(vals[0], int):
            f.int64_list.value.extend(vals)
        else:
            f.float_list.value.extend(vals)
    return ex


def examples_input(pb, examples, context=None):
    inp = pb.tfs_pb.Input()
    if context is None:
        inp.example_list.examples.extend(examples)
    else:
        inp.example_list_with_context.examples.extend(examples)
        inp.example_list_with_context.context.CopyFrom(context)
    return inp


def test_classify(protos, tfs):
    ps, _ = tfs
    pb = protos
    # classifier: its labels registered with the model
    req = pb.tfs_pb.ClassificationRequest(
        model_spec=spec(pb, "classifier"),
        input=examples_input(pb, [example(pb, INPUT0=[5.1, 3.5, 1.4, 0.2]),
                                  example(pb, INPUT0=[6.7, 3.0, 5.2, 2.3])]))
    resp = ps.Classify(req, timeout=TIMEOUT)
    cls = resp.result.classifications
    assert [[c.label for c in ex.classes] for ex in cls] == [["setosa", "versicolor",
                                                               "virginica"]] * 2
    assert [max(ex.classes, key=lambda c: c.score).label for ex in cls] == ["setosa", "virginica"]
    assert abs(sum(c.score for c in cls[0].classes) - 1.0) < 1e-5
    assert resp.model_spec.name == "classifier" and resp.model_spec.version.value == 1
    # half_plus_three through its classify signature: y as "scores", the class index as label
    for model in ("half_plus_three", "saved_model_half_plus_three"):
        req = pb.tfs_pb.ClassificationRequest(
            model_spec=spec(pb, model, signature="tensorflow/serving/classify"),
            input=examples_input(pb, [example(pb, x=4.0), example(pb, x=0.0)]))
        resp = ps.Classify(req, timeout=TIMEOUT)
        got = [[(c.label, c.score) for c in ex.classes] for ex in resp.result.classifications]
        assert got == [[("0", 5.0)], [("0", 3.0)]], resp
        assert resp.model_spec.signature_name == "tensorflow/serving/classify"
    E = grpc.StatusCode
    expect_rpc_error(ps.Classify, E.INVALID_ARGUMENT,
                     "Expected classification signature method_name to be "
                     "tensorflow/serving/classify. Was: tensorflow/serving/regress",
                     request=pb.tfs_pb.ClassificationRequest(
                         model_spec=spec(pb, "half_plus_three",
                                         signature="tensorflow/serving/regress"),
                         input=examples_input(pb, [example(pb, x=4.0)])), timeout=TIMEOUT)
    # simple has two outputs and no "scores": not a classifier
    a, b = list(range(16)), [1] * 16
    expect_rpc_error(ps.Classify, E.INVALID_ARGUMENT, "classify needs a \"scores\" output",
                     request=pb.tfs_pb.ClassificationRequest(
                         model_spec=spec(pb, "simple"),
                         input=examples_input(pb, [example(pb, INPUT0=a, INPUT1=b)])),
                     timeout=TIMEOUT)
    expect_rpc_error(ps.Classify, E.INVALID_ARGUMENT, "Input is empty",
                     request=pb.tfs_pb.ClassificationRequest(model_spec=spec(pb, "classifier")),
                     timeout=TIMEOUT)
    expect_rpc_error(ps.Classify, E.NOT_FOUND, "Servable not found for request: Latest(nope)",
                     request=pb.tfs_pb.ClassificationRequest(model_spec=spec(pb, "nope")),
                     timeout=TIMEOUT)


def test_regress(protos, tfs):
    ps, _ = tfs
    pb = protos
    # the seed's walkthrough: saved_model_half_plus_three's regress signature
    req = pb.tfs_pb.RegressionRequest(
        model_spec=spec(pb, "saved_model_half_plus_three", signature="tensorflow/serving/regress"),
        input=examples_input(pb, [example(pb, x=1.0), example(pb, x=2.0)]))
    resp = ps.Regress(req, timeout=TIMEOUT)
    assert [r.value for r in resp.result.regressions] == [3.5, 4.0], resp
    assert resp.model_spec.version.value == 123
    # identity_fp32 as a regressor, the context filling what an example lacks; an int64_list
    # feeds a float input
    req = pb.tfs_pb.RegressionRequest(
        model_spec=spec(pb, "identity_fp32"),
        input=examples_input(pb, [pb.tf_pb.Example(), example(pb, INPUT0=-1.0),
                                  example(pb, INPUT0=3)], context=example(pb, INPUT0=7.5)))
    resp = ps.Regress(req, timeout=TIMEOUT)
    assert [r.value for r in resp.result.regressions] == [7.5, -1.0, 3.0], resp
    E = grpc.StatusCode
    for inp, needle in (
            (examples_input(pb, [pb.tf_pb.Example()]),
             "examples[0]: feature 'INPUT0': missing (and not in the context)"),
            (examples_input(pb, [example(pb, INPUT0=1.0, other=2.0)]),
             "examples[0]: feature 'other': not an input of the model"),
            (examples_input(pb, [example(pb, INPUT0=b"text")]),
             "examples[0]: feature 'INPUT0': a bytes_list cannot feed input 'INPUT0' of FP32"),
            (examples_input(pb, [example(pb, INPUT0=1.0), example(pb, INPUT0=[1.0, 2.0])]),
             "examples[1]: feature 'INPUT0': 2 values, example 0 has 1")):
        expect_rpc_error(ps.Regress, E.INVALID_ARGUMENT, needle,
                         request=pb.tfs_pb.RegressionRequest(model_spec=spec(pb, "identity_fp32"),
                                                             input=inp), timeout=TIMEOUT)
    expect_rpc_error(ps.Regress, E.INVALID_ARGUMENT,
                     "Expected regression signature method_name to be tensorflow/serving/regress. "
                     "Was: tensorflow/serving/predict",
                     request=pb.tfs_pb.RegressionRequest(
                         model_spec=spec(pb, "half_plus_three"),
                         input=examples_input(pb, [example(pb, x=1.0)])), timeout=TIMEOUT)


def test_multi_inference(protos, tfs):
    """One run of half_plus_three for a classify and a regress task on the same examples."""
    ps, _ = tfs
    pb = protos
    CLS, REG = "tensorflow/serving/classify", "tensorflow/serving/regress"

    def task(model, sig, method, version=None):
        return pb.tfs_pb.InferenceTask(model_spec=spec(pb, model, signature=sig, version=version),
                                       method_name=method)

    inp = examples_input(pb, [example(pb, x=4.0), example(pb, x=1.0)])
    req = pb.tfs_pb.MultiInferenceRequest(tasks=[task("half_plus_three", CLS, CLS, 123),
                                                 task("half_plus_three", REG, REG)], input=inp)
    resp = ps.MultiInference(req, timeout=TIMEOUT)
    assert len(resp.results) == 2, resp
    c, r = resp.results
    assert c.WhichOneof("result") == "classification_result"
    assert [[(k.label, k.score) for k in ex.classes]
            for ex in c.classification_result.classifications] == [[("0", 5.0)], [("0", 3.5)]]
    assert [x.value for x in r.regression_result.regressions] == [5.0, 3.5]
    assert c.model_spec.signature_name == CLS and r.model_spec.signature_name == REG
    assert c.model_spec.version.value == 123 and r.model_spec.version.value == 123
    E = grpc.StatusCode
    for tasks, code, needle in (
            ([task("half_plus_three", CLS, CLS), task("saved_model_half_plus_three", REG, REG)],
             E.INVALID_ARGUMENT,
             "All ModelSpecs in a MultiInferenceRequest must access the same model name."),
            ([task("half_plus_three", REG, REG), task("half_plus_three", REG, REG)],
             E.INVALID_ARGUMENT, "Duplicate evaluation of signature: " + REG),
            ([task("half_plus_three", "nope", REG)], E.INVALID_ARGUMENT,
             "Requested signature not found in model graph: nope"),
            ([task("half_plus_three", REG, "tensorflow/serving/predict")], E.UNIMPLEMENTED,
             "Unsupported signature method_name: tensorflow/serving/predict"),
            ([task("half_plus_three", REG, CLS)], E.INVALID_ARGUMENT,
             "Expected classification signature method_name to be " + CLS),
            ([task("", REG, REG)], E.INVALID_ARGUMENT, "Found ModelSpec with an empty model name."),
            ([task("nope", REG, REG)], E.NOT_FOUND, "Servable not found for request: Latest(nope)"),
            ([], E.INVALID_ARGUMENT, "MultiInferenceRequest has no tasks")):
        expect_rpc_error(ps.MultiInference, code, needle,
                         request=pb.tfs_pb.MultiInferenceRequest(tasks=tasks, input=inp),
                         timeout=TIMEOUT)


def test_requests_are_counted_under_tfserving_grpc(protos, tfs, demo):
    ps, _ = tfs
    x = tensor(protos, "DT_FLOAT", [1], float_val=[1.0])
    ps.Predict(predict_req(protos, "saved_model_half_plus_three", {"x": x}), timeout=TIMEOUT)
    text = get(demo, "/metrics").text
    assert any(line.startswith("isv_requests_total{") and 'model="saved_model_half_plus_three"'
               in line and 'protocol="tfserving_grpc"' in line and 'outcome="success"' in line
               for line in text.splitlines()), text[:2000]


def reload_req(pb, names, labels=None):
    cfg = pb.tfs_pb.ModelServerConfig()
    for n in sorted(names):
        c = cfg.model_config_list.config.add(name=n, base_path="/models/" + n,
                                             model_platform="tensorflow")
        if labels:
            c.version_labels.update(labels)
    return pb.tfs_pb.ReloadConfigRequest(config=cfg)


def ready_models(d):
    r = post_json(d, "/v2/repository/index", {"ready": True})
    assert r.status_code == 200, r.text
    return {m["name"] for m in r.json()}


def model_service(d, pb):
    ch = make_channel(d)
    grpc.channel_ready_future(ch).result(timeout=TIMEOUT)
    return ch, pb.tfs_grpc.ModelServiceStub(ch)


def test_reload_config_loads_what_it_lists_and_unloads_what_it_drops(protos, start_demo):
    d = start_demo("--load-delay-ms", "40")  # loading takes time: the call waits for it
    ch, ms = model_service(d, protos)
    names = ready_models(d)
    assert {"simple", "half_plus_three"} <= names
    # the new config drops simple: unloaded (its REST readiness then says so)
    resp = ms.HandleReloadConfigRequest(reload_req(protos, names - {"simple"}), timeout=TIMEOUT)
    assert resp.status.error_code == 0 and resp.HasField("status")
    assert ready_models(d) == names - {"simple"}
    assert get(d, "/v2/models/simple/ready").status_code != 200
    # listed again: loaded before the answer comes, and served
    resp = ms.HandleReloadConfigRequest(reload_req(protos, names), timeout=TIMEOUT)
    assert resp.status.error_code == 0
    assert ready_models(d) == names
    assert get(d, "/v2/models/simple/ready").status_code == 200
    # the same set again: nothing to do, OK at once
    assert ms.HandleReloadConfigRequest(reload_req(protos, names), timeout=TIMEOUT) \
        .status.error_code == 0
    # a model the host cannot load: the host's error, and the steps after it do not run
    e = expect_rpc_error(ms.HandleReloadConfigRequest, grpc.StatusCode.NOT_FOUND,
                         "failed to load 'nope'",
                         request=reload_req(protos, (names - {"simple"}) | {"nope"}),
                         timeout=TIMEOUT)
    assert e is not None and "simple" in ready_models(d)  # its unload came after: not run
    ch.close()


def test_reload_config_refusals(protos, start_demo, demo):
    _, ms = model_service(demo, protos)
    names = ready_models(demo)
    E = grpc.StatusCode
    dup = reload_req(protos, names)
    dup.config.model_config_list.config.add(name="simple")
    expect_rpc_error(ms.HandleReloadConfigRequest, E.INVALID_ARGUMENT,
                     "Illegal to list model simple multiple times in config list",
                     request=dup, timeout=TIMEOUT)
    custom = protos.tfs_pb.ReloadConfigRequest()
    custom.config.custom_model_config.type_url = "type.googleapis.com/x.Y"
    for req in (custom, protos.tfs_pb.ReloadConfigRequest()):
        expect_rpc_error(ms.HandleReloadConfigRequest, E.INVALID_ARGUMENT,
                         "ServerModelConfig type not supported by HandleReloadConfigRequest. "
                         "Only ModelConfigList is currently supported", request=req,
                         timeout=TIMEOUT)
    expect_rpc_error(ms.HandleReloadConfigRequest, E.UNIMPLEMENTED, "version_labels",
                     request=reload_req(protos, names, labels={"stable": 1}), timeout=TIMEOUT)
    nameless = reload_req(protos, names)
    nameless.config.model_config_list.config.add(base_path="/x")
    expect_rpc_error(ms.HandleReloadConfigRequest, E.INVALID_ARGUMENT, "has no name",
                     request=nameless, timeout=TIMEOUT)
    assert ready_models(demo) == names  # nothing refused changed anything
    # without repository callbacks: refused, TF Serving's reload has nothing to run on
    nd = start_demo("--no-repository")
    _, ms2 = model_service(nd, protos)
    expect_rpc_error(ms2.HandleReloadConfigRequest, E.UNAVAILABLE,
                     "HandleReloadConfigRequest is not allowed: this server has no model "
                     "repository", request=reload_req(protos, {"simple"}), timeout=TIMEOUT)


def test_reload_config_steps_are_judged_by_the_authorizer(protos, start_demo):
    d = start_demo("--forbid-model", "simple")
    _, ms = model_service(d, protos)
    names = ready_models(d)
    expect_rpc_error(ms.HandleReloadConfigRequest, grpc.StatusCode.PERMISSION_DENIED, "simple",
                     request=reload_req(protos, names - {"simple"}), timeout=TIMEOUT)
    assert "simple" in ready_models(d)


def test_reflection_lists_the_services_unless_disabled(start_demo, demo):
    from test_grpc_reflection import Reflection, _files, channel_to
    for d, shown in ((demo, True), (start_demo("--disable-protocol", "tfserving"), False)):
        ch = channel_to(d)
        try:
            r = Reflection(ch, "v1")
            names = [s.name for s in r.one(list_services="").list_services_response.service]
            assert (PS in names) == shown and (MS in names) == shown, names
            if shown:
                files = _files(r.one(file_containing_symbol=PS))
                assert files[0].name == "tensorflow_serving.proto", [f.name for f in files]
                assert {f.name for f in files} >= {"tensorflow_core.proto",
                                                   "tensorflow_error.proto",
                                                   "google/protobuf/any.proto",
                                                   "google/protobuf/wrappers.proto"}
            else:
                e = r.one(file_by_filename="tensorflow_serving.proto")
                assert e.error_response.error_code == grpc.StatusCode.NOT_FOUND.value[0], e
        finally:
            ch.close()


def test_a_reload_cut_by_the_server_close(protos, start_demo):
    """The server closes while a reload's load is in progress: the call ends UNAVAILABLE (its
    answer will not come), the load in progress finishes, and the demo exits cleanly (under
    ASan: nothing leaked)."""
    d = start_demo("--load-delay-ms", "1500")
    ch, ms = model_service(d, protos)
    names = ready_models(d)
    assert ms.HandleReloadConfigRequest(reload_req(protos, names - {"simple"}),
                                        timeout=TIMEOUT).status.error_code == 0
    fut = ms.HandleReloadConfigRequest.future(reload_req(protos, names), timeout=TIMEOUT)
    time.sleep(0.3)  # the load of simple has begun
    assert d.stop(timeout=10.0) == 0, d.stderr_tail()
    with pytest.raises(grpc.RpcError) as e:
        fut.result()
    assert e.value.code() == grpc.StatusCode.UNAVAILABLE, e.value
    ch.close()
