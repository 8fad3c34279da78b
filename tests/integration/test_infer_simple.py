"""Inference on `simple` and `simple_string`: batching, nested/flat data, id echo, output
selection."""
import json

import pytest

from isvtest import (assert_error, flatten, infer, ok_json, outputs_by_name, post_json, show,
                     simple_body, simple_inputs, tensor)


def _expect_simple(r, a, b):
    body = ok_json(r)
    outs = outputs_by_name(body)
    assert set(outs) == {"OUTPUT0", "OUTPUT1"}, show(r)
    rows = len(a)
    fa, fb = flatten(a), flatten(b)
    for name, want in (("OUTPUT0", [x + y for x, y in zip(fa, fb)]),
                       ("OUTPUT1", [x - y for x, y in zip(fa, fb)])):
        o = outs[name]
        assert o["datatype"] == "INT32", show(r)
        assert o["shape"] == [rows, 16], show(r)
        assert flatten(o["data"]) == want, "%s data\n%s" % (name, show(r))
    return body


@pytest.mark.parametrize("rows", [1, 3, 8])
def test_simple_batches_nested(demo, rows):
    a = [[r * 1000 + i * 7 - 50 for i in range(16)] for r in range(rows)]
    b = [[(r + 1) * (i - 8) for i in range(16)] for r in range(rows)]
    r = infer(demo, "simple", simple_inputs(a, b))
    _expect_simple(r, a, b)


@pytest.mark.parametrize("rows", [1, 3])
def test_simple_batches_flat(demo, rows):
    a = [[r * 16 + i for i in range(16)] for r in range(rows)]
    b = [[-(r + i) for i in range(16)] for r in range(rows)]
    inputs = [tensor("INPUT0", "INT32", [rows, 16], flatten(a)),
              tensor("INPUT1", "INT32", [rows, 16], flatten(b))]
    r = infer(demo, "simple", inputs)
    _expect_simple(r, a, b)


def test_simple_mixed_nested_and_flat(demo):
    a = [[i for i in range(16)], [100 + i for i in range(16)]]
    b = [[2] * 16, [3] * 16]
    inputs = [tensor("INPUT0", "INT32", [2, 16], a),              # nested
              tensor("INPUT1", "INT32", [2, 16], flatten(b))]      # flat
    _expect_simple(infer(demo, "simple", inputs), a, b)


@pytest.mark.parametrize("separators", [(",", ":"), (", ", ": "), None])
def test_simple_reads_alike_however_the_body_is_spaced(demo, separators):
    """Compact JSON, json.dumps's default (", " and ": ", read on the parser's short paths as
    tritonclient and requests send it) and an indented body give the same answer: runs of
    one-digit values (taken four at a time), signs, longer numbers, nested rows."""
    a = [[1, 0, 1, 1, 0, 0, 0, 1, 9, 8, 7, 6, -5, 4, 3, 2], [10, -1, 1, 1, 1, 1, 123, 4567, 0,
                                                              0, 0, 0, 2, 2, 2, 2]]
    b = [[1] * 16, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 1, 1, 1, 1, 1]]
    def text(obj):
        return json.dumps(obj, indent=2) if separators is None else json.dumps(
            obj, separators=separators)

    body = {"inputs": simple_inputs(a, b), "outputs": [{"name": "OUTPUT0"}, {"name": "OUTPUT1"}]}
    _expect_simple(post_json(demo, "/v2/models/simple/infer", text(body)), a, b)
    bad = dict(body, inputs=[dict(body["inputs"][0], data=flatten(a)[:-1] + [1.5]),
                             body["inputs"][1]])
    assert_error(post_json(demo, "/v2/models/simple/infer", text(bad)), 400, "element 31")


def test_simple_int32_extremes(demo):
    a = [[2147483647, -2147483648] + [0] * 14]
    b = [[0, 0] + [1] * 14]
    r = infer(demo, "simple", simple_inputs(a, b))
    _expect_simple(r, a, b)


def test_id_echoed_when_given(demo):
    for rid in ["my-id-42", "", "ünïcödé \"quoted\" \\ id"]:
        r = post_json(demo, "/v2/models/simple/infer", simple_body(req_id=rid))
        body = ok_json(r)
        assert "id" in body and body["id"] == rid, show(r)


def test_id_absent_when_not_given(demo):
    r = post_json(demo, "/v2/models/simple/infer", simple_body())
    body = ok_json(r)
    assert "id" not in body, show(r)


def test_requested_output_filter(demo):
    r = post_json(demo, "/v2/models/simple/infer", simple_body(outputs=[{"name": "OUTPUT1"}]))
    body = ok_json(r)
    outs = outputs_by_name(body)
    assert list(outs) == ["OUTPUT1"], show(r)
    assert outs["OUTPUT1"]["data"] == [i - 1 for i in range(16)], show(r)


def test_requested_both_outputs(demo):
    r = post_json(demo, "/v2/models/simple/infer",
                  simple_body(outputs=[{"name": "OUTPUT1"}, {"name": "OUTPUT0"}]))
    outs = outputs_by_name(ok_json(r))
    assert set(outs) == {"OUTPUT0", "OUTPUT1"}, show(r)


def test_empty_outputs_list_means_all_or_is_rejected_cleanly(demo):
    # "outputs": [] is not named by the spec; it must not crash nor 500.
    r = post_json(demo, "/v2/models/simple/infer", simple_body(outputs=[]))
    assert r.status_code in (200, 400), show(r)


def test_batch_over_max_is_400(demo):
    a = [[1] * 16 for _ in range(9)]
    r = infer(demo, "simple", simple_inputs(a, a))
    assert_error(r, 400)


def test_request_parameters_accepted(demo):
    body = simple_body()
    body["parameters"] = {"foo": "bar", "n": 3, "flag": True}
    body["inputs"][0]["parameters"] = {"x": 1}
    body["outputs"] = [{"name": "OUTPUT0", "parameters": {"y": "z"}}]
    r = post_json(demo, "/v2/models/simple/infer", body)
    outs = outputs_by_name(ok_json(r))
    assert list(outs) == ["OUTPUT0"], show(r)


def test_whitespace_and_key_order_tolerated(demo):
    text = ('  {\n  "outputs" : [ { "name" : "OUTPUT0" } ] ,\r\n\t"inputs" : [ '
            '{ "data" : [ %s ], "datatype" : "INT32", "shape" : [ 1 , 16 ], "name" : "INPUT1" } ,'
            '{"shape":[1,16],"name":"INPUT0","data":[%s],"datatype":"INT32"} ] , "id" : "ws" }  \n'
            % (", ".join(["1"] * 16), ",".join(str(i) for i in range(16))))
    r = post_json(demo, "/v2/models/simple/infer", text)
    body = ok_json(r)
    assert body["id"] == "ws", show(r)
    assert outputs_by_name(body)["OUTPUT0"]["data"] == [i + 1 for i in range(16)], show(r)


# --- simple_string -------------------------------------------------------------------------
def test_simple_string(demo):
    a = [str(i * 3 - 7) for i in range(16)]
    b = [str(100 - i) for i in range(16)]
    r = infer(demo, "simple_string", [tensor("INPUT0", "BYTES", [1, 16], a),
                                      tensor("INPUT1", "BYTES", [1, 16], b)])
    outs = outputs_by_name(ok_json(r))
    assert outs["OUTPUT0"]["datatype"] == "BYTES", show(r)
    assert outs["OUTPUT0"]["shape"] == [1, 16], show(r)
    assert flatten(outs["OUTPUT0"]["data"]) == [str(int(x) + int(y)) for x, y in zip(a, b)], show(r)
    assert flatten(outs["OUTPUT1"]["data"]) == [str(int(x) - int(y)) for x, y in zip(a, b)], show(r)


def test_simple_string_batch2(demo):
    a = [[str(r * 10 + i) for i in range(16)] for r in range(2)]
    b = [["5"] * 16, ["-5"] * 16]
    r = infer(demo, "simple_string", [tensor("INPUT0", "BYTES", [2, 16], a),
                                      tensor("INPUT1", "BYTES", [2, 16], b)])
    outs = outputs_by_name(ok_json(r))
    assert outs["OUTPUT0"]["shape"] == [2, 16], show(r)
    want = [str(int(x) + int(y)) for x, y in zip(flatten(a), flatten(b))]
    assert flatten(outs["OUTPUT0"]["data"]) == want, show(r)
