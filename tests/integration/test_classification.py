"""Classification extension (seed 004, PROTOCOLS.md §1): "classification": k on a requested
output -> BYTES [batch, k] of "value:index[:label]", highest first, ties lower index first,
k capped at the number of classes."""
import pytest

from isvtest import (assert_error, f32, flatten, infer, loads_raw, ok_json, outputs_by_name,
                     show, tensor)

LABELS = ["setosa", "versicolor", "virginica"]
IRIS = [[5.1, 3.5, 1.4, 0.2], [6.7, 3.0, 5.2, 2.3], [5.9, 3.0, 4.2, 1.5]]


def _raw_probs(demo, rows):
    r = infer(demo, "classifier", [tensor("INPUT0", "FP32", [len(rows), 4], rows)])
    ok_json(r)
    o = outputs_by_name(loads_raw(r.text))["OUTPUT0"]
    assert o["datatype"] == "FP32" and [int(d) for d in o["shape"]] == [len(rows), 3], show(r)
    texts = flatten(o["data"])
    return [texts[i * 3:(i + 1) * 3] for i in range(len(rows))], r


def test_classifier_plain_output_is_softmax(demo):
    probs, r = _raw_probs(demo, IRIS)
    for row in probs:
        vals = [float(t) for t in row]
        assert all(0.0 <= v <= 1.0 for v in vals), show(r)
        assert abs(sum(vals) - 1.0) < 1e-5, show(r)


def _expected_topk(row_texts, k, labels):
    vals = [float(t) for t in row_texts]
    order = sorted(range(len(vals)), key=lambda i: (-vals[i], i))[:k]
    return order, vals


def _check_element(elem, idx, vals, texts, labels, r):
    parts = elem.split(":")
    want_parts = 3 if labels else 2
    assert len(parts) == want_parts, "element %r\n%s" % (elem, show(r))
    value, index = parts[0], parts[1]
    assert int(index) == idx, "element %r: index, want %d\n%s" % (elem, idx, show(r))
    # value: the shortest round-trip text of the model's value (as the JSON writer prints it)
    assert f32(float(value)) == f32(vals[idx]), "element %r value\n%s" % (elem, show(r))
    assert value == texts[idx] or value + ".0" == texts[idx] or value == texts[idx] + ".0", \
        "element %r value text differs from the tensor's %r\n%s" % (elem, texts[idx], show(r))
    if labels:
        assert parts[2] == labels[idx], "element %r label\n%s" % (elem, show(r))


@pytest.mark.parametrize("k", [1, 2, 3])
def test_classifier_topk_with_labels(demo, k):
    probs, _ = _raw_probs(demo, IRIS)
    r = infer(demo, "classifier", [tensor("INPUT0", "FP32", [len(IRIS), 4], IRIS)],
              outputs=[{"name": "OUTPUT0", "parameters": {"classification": k}}])
    body = ok_json(r)
    out = outputs_by_name(body)["OUTPUT0"]
    assert out["datatype"] == "BYTES", show(r)
    assert out["shape"] == [len(IRIS), k], show(r)
    data = flatten(out["data"])
    assert len(data) == len(IRIS) * k, show(r)
    for b, row in enumerate(probs):
        order, vals = _expected_topk(row, k, LABELS)
        got = data[b * k:(b + 1) * k]
        for elem, idx in zip(got, order):
            _check_element(elem, idx, vals, row, LABELS, r)


def test_classifier_k_capped_at_class_count(demo):
    probs, _ = _raw_probs(demo, IRIS[:1])
    r = infer(demo, "classifier", [tensor("INPUT0", "FP32", [1, 4], IRIS[:1])],
              outputs=[{"name": "OUTPUT0", "parameters": {"classification": 10}}])
    out = outputs_by_name(ok_json(r))["OUTPUT0"]
    assert out["shape"] == [1, 3], show(r)
    order, vals = _expected_topk(probs[0], 3, LABELS)
    for elem, idx in zip(flatten(out["data"]), order):
        _check_element(elem, idx, vals, probs[0], LABELS, r)


def test_simple_int32_classification_no_labels(demo):
    # OUTPUT0 = INPUT0 + INPUT1 = [5, 1, 9, 9, 0, ...]: ties (9 at 2 and 3) keep the lower
    # index first; values print as integers.
    a = [[5, 1, 9, 9, 0, 2, 3, 4, -1, -2, -3, -4, -5, -6, -7, 8]]
    b = [[0] * 16]
    r = infer(demo, "simple", [tensor("INPUT0", "INT32", [1, 16], a),
                               tensor("INPUT1", "INT32", [1, 16], b)],
              outputs=[{"name": "OUTPUT0", "parameters": {"classification": 4}}])
    body = ok_json(r)
    outs = outputs_by_name(body)
    assert list(outs) == ["OUTPUT0"], show(r)
    out = outs["OUTPUT0"]
    assert out["datatype"] == "BYTES" and out["shape"] == [1, 4], show(r)
    assert flatten(out["data"]) == ["9:2", "9:3", "8:15", "5:0"], show(r)


def test_simple_classification_batch2_and_cap(demo):
    a = [list(range(16)), list(range(15, -1, -1))]
    b = [[0] * 16, [0] * 16]
    r = infer(demo, "simple", [tensor("INPUT0", "INT32", [2, 16], a),
                               tensor("INPUT1", "INT32", [2, 16], b)],
              outputs=[{"name": "OUTPUT1", "parameters": {"classification": 40}}])
    out = outputs_by_name(ok_json(r))["OUTPUT1"]
    assert out["shape"] == [2, 16], show(r)
    data = flatten(out["data"])
    assert data[:3] == ["15:15", "14:14", "13:13"], show(r)
    assert data[16:19] == ["15:0", "14:1", "13:2"], show(r)
    assert data[15] == "0:0" and data[31] == "0:15", show(r)


def test_classification_one_output_other_plain(demo):
    a = [[i for i in range(16)]]
    b = [[1] * 16]
    r = infer(demo, "simple", [tensor("INPUT0", "INT32", [1, 16], a),
                               tensor("INPUT1", "INT32", [1, 16], b)],
              outputs=[{"name": "OUTPUT0", "parameters": {"classification": 1}},
                       {"name": "OUTPUT1"}])
    outs = outputs_by_name(ok_json(r))
    assert outs["OUTPUT0"]["data"] in (["16:15"], [["16:15"]]), show(r)
    assert outs["OUTPUT1"]["datatype"] == "INT32", show(r)
    assert flatten(outs["OUTPUT1"]["data"]) == [i - 1 for i in range(16)], show(r)


def test_classification_of_bytes_output_is_400(demo):
    r = infer(demo, "simple_string", [tensor("INPUT0", "BYTES", [1, 16], ["1"] * 16),
                                      tensor("INPUT1", "BYTES", [1, 16], ["2"] * 16)],
              outputs=[{"name": "OUTPUT0", "parameters": {"classification": 2}}])
    assert_error(r, 400, "OUTPUT0")


def test_classification_of_bool_output_is_400(demo):
    r = infer(demo, "identity_bool", [tensor("INPUT0", "BOOL", [1, 2], [True, False])],
              outputs=[{"name": "OUTPUT0", "parameters": {"classification": 1}}])
    assert_error(r, 400, "OUTPUT0")


def test_non_batched_model_classification_shape_k(demo):
    # multi_version has no batch dimension: the output becomes BYTES [k]. v3 adds 3.
    r = infer(demo, "multi_version", [tensor("INPUT0", "INT32", [5], [1, 7, 3, 7, -4])],
              outputs=[{"name": "OUTPUT0", "parameters": {"classification": 3}}])
    out = outputs_by_name(ok_json(r))["OUTPUT0"]
    assert out["datatype"] == "BYTES" and out["shape"] == [3], show(r)
    assert out["data"] == ["10:1", "10:3", "6:2"], show(r)


def test_classification_values_shortest_for_type(demo):
    # FP16 0.1 is 0.0999755859375; its shortest FP16 text is "0.1".
    r = infer(demo, "identity_fp16", [tensor("INPUT0", "FP16", [1, 3], [0.1, 0.5, 0.3])],
              outputs=[{"name": "OUTPUT0", "parameters": {"classification": 3}}])
    out = outputs_by_name(ok_json(r))["OUTPUT0"]
    assert flatten(out["data"]) == ["0.5:1", "0.3:2", "0.1:0"], show(r)


def test_classification_uint64_exact(demo):
    r = infer(demo, "identity_uint64",
              [tensor("INPUT0", "UINT64", [1, 3], [18446744073709551615, 1, 18446744073709551614])],
              outputs=[{"name": "OUTPUT0", "parameters": {"classification": 2}}])
    out = outputs_by_name(ok_json(r))["OUTPUT0"]
    assert flatten(out["data"]) == ["18446744073709551615:0", "18446744073709551614:2"], show(r)
