"""Error statuses and messages (PROTOCOLS.md §1): every error is {"error": "<message>"} with
the right status, and the message names the problem. Never 500 for a client's mistake."""
import json
import re

import pytest
import requests

from isvtest import (TIMEOUT, assert_error, get, infer, inputs_from_metadata, ok_json,
                     post_json, show, simple_body, simple_inputs, strict_json, tensor)

ROW = list(range(16))


def _simple(inputs, **kw):
    return {"inputs": inputs, **kw}


def _t(name, shape, data, dt="INT32"):
    return tensor(name, dt, shape, data)


# --- not found ----------------------------------------------------------------------------
@pytest.mark.parametrize("method,path", [
    ("GET", "/v2/models/no_such_model"),
    ("GET", "/v2/models/no_such_model/ready"),
    ("GET", "/v2/models/no_such_model/versions/1"),
    ("POST", "/v2/models/no_such_model/infer"),
    ("POST", "/v2/models/no_such_model/versions/1/infer"),
])
def test_unknown_model_404(demo, method, path):
    if method == "GET":
        r = get(demo, path)
    else:
        r = post_json(demo, path, simple_body())
    assert_error(r, 404, "no_such_model")


@pytest.mark.parametrize("method,path", [
    ("GET", "/v2/models/simple/versions/999"),
    ("GET", "/v2/models/simple/versions/999/ready"),
    ("POST", "/v2/models/simple/versions/999/infer"),
    ("POST", "/v2/models/multi_version/versions/999/infer"),
])
def test_unknown_version_404(demo, method, path):
    r = get(demo, path) if method == "GET" else post_json(demo, path, simple_body())
    assert_error(r, 404, "999")


@pytest.mark.parametrize("path", ["/v3", "/v2/nothing", "/v2/health", "/v2/health/alive",
                                  "/v2/models", "/v2/models/simple/bogus",
                                  "/v2/models/simple/versions/1/bogus",
                                  "/v2/models/simple/infer/extra"])
def test_unknown_path_404(demo, path):
    # the message names the whole path asked (it used to name only its first segment)
    assert_error(get(demo, path), 404, "unknown path '%s'" % path)


# --- method not allowed -------------------------------------------------------------------
@pytest.mark.parametrize("method,path", [
    ("GET", "/v2/models/simple/infer"),
    ("GET", "/v2/models/simple/versions/1/infer"),
    ("PUT", "/v2/models/simple/infer"),
    ("DELETE", "/v2/models/simple/infer"),
    ("POST", "/v2/health/live"),
    ("POST", "/v2/health/ready"),
    ("POST", "/v2"),
    ("POST", "/v2/models/simple"),
    ("POST", "/v2/models/simple/ready"),
    ("DELETE", "/v2/models/simple"),
])
def test_wrong_method_405(demo, method, path):
    r = requests.request(method, demo.url(path), data=b"{}" if method != "GET" else None,
                         headers={"Content-Type": "application/json"}, timeout=TIMEOUT)
    assert_error(r, 405)


@pytest.mark.parametrize("method,path,allowed", [("GET", "/v2/models/simple/infer", "POST"),
                                                 ("POST", "/v2/health/live", "GET")])
def test_405_has_allow_header(demo, method, path, allowed):
    # RFC 9110 §15.5.6: a 405 response MUST carry Allow.
    r = requests.request(method, demo.url(path), data=b"{}" if method == "POST" else None,
                         timeout=TIMEOUT)
    assert r.status_code == 405, show(r)
    allow = r.headers.get("Allow", "")
    assert allowed in [m.strip() for m in allow.split(",")], show(r)


# --- malformed JSON -----------------------------------------------------------------------
@pytest.mark.parametrize("body,offset", [
    ('{"inputs": @}', 11),
    ('{"inputs": [{"name": "INPUT0",, "shape": [1]}]}', 30),
    ('{"inputs" []}', 10),
    ('{"id": "x" "inputs": []}', 11),
])
def test_malformed_json_400_with_offset(demo, body, offset):
    r = post_json(demo, "/v2/models/simple/infer", body)
    msg = assert_error(r, 400)
    nums = [int(n) for n in re.findall(r"\d+", msg)]
    assert nums, "message %r has no byte offset\n%s" % (msg, show(r))
    assert any(offset - 1 <= n <= offset + 1 for n in nums), \
        "message %r: no offset near %d (0-based)\n%s" % (msg, offset, show(r))


@pytest.mark.parametrize("body", [
    "", "   ", "{", '{"inputs": [', "[]", '"inputs"', "null", "42",
    '{"inputs": []} trailing', '{"inputs": [{"name": "INPUT0"}]',
    '{"inputs": "INPUT0"}', '{"inputs": [5]}', '{"inputs": [{"name": 5}]}',
    '{"id": "\\x"}', '{"id": "unterminated}', '{"inputs": [{"name": "INPUT0", "shape": [1, 16], '
    '"datatype": "INT32", "data": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, tru]}]}',
    '\xef\xbb\xbf{}', '{"inputs": [], "inputs": []}',
])
def test_malformed_body_is_400(demo, body):
    r = post_json(demo, "/v2/models/simple/infer", body)
    assert_error(r, 400)


def test_invalid_utf8_in_json_is_400(demo):
    r = post_json(demo, "/v2/models/identity_bytes/infer",
                  b'{"inputs":[{"name":"INPUT0","datatype":"BYTES","shape":[1,1],"data":["\xff\xfe"]}]}')
    assert_error(r, 400)


def test_deep_nesting_is_400_not_crash(demo):
    depth = 100000
    body = '{"inputs": [{"name": "INPUT0", "shape": [1,16], "datatype": "INT32", "data": ' + \
        "[" * depth + "]" * depth + "}]}"
    r = post_json(demo, "/v2/models/simple/infer", body)
    assert_error(r, 400)


# --- input validation ---------------------------------------------------------------------
def test_missing_input_400(demo):
    r = infer(demo, "simple", [_t("INPUT0", [1, 16], ROW)])
    assert_error(r, 400, "INPUT1")


def test_no_inputs_at_all_400(demo):
    r = post_json(demo, "/v2/models/simple/infer", {"outputs": [{"name": "OUTPUT0"}]})
    assert_error(r, 400)


def test_unknown_extra_input_400(demo):
    r = infer(demo, "simple", simple_inputs([ROW], [ROW]) + [_t("INPUT2", [1, 16], ROW)])
    assert_error(r, 400, "INPUT2")


def test_duplicate_input_400(demo):
    r = infer(demo, "simple", simple_inputs([ROW], [ROW]) + [_t("INPUT0", [1, 16], ROW)])
    assert_error(r, 400, "INPUT0")


def test_datatype_mismatch_400(demo):
    r = infer(demo, "simple", [_t("INPUT0", [1, 16], [float(x) for x in ROW], "FP32"),
                               _t("INPUT1", [1, 16], ROW)])
    assert_error(r, 400, "INPUT0")


@pytest.mark.parametrize("dt", ["INT33", "int32", "STRING", "", "FP8"])
def test_unknown_datatype_400(demo, dt):
    r = infer(demo, "simple", [_t("INPUT0", [1, 16], ROW, dt), _t("INPUT1", [1, 16], ROW)])
    assert_error(r, 400, "INPUT0")


@pytest.mark.parametrize("shape,data", [
    ([1, 15], ROW[:15]),        # wrong inner dim
    ([16], ROW),                # wrong rank
    ([1, 16, 1], ROW),          # wrong rank
    ([2, 8], ROW),              # same count, wrong shape
])
def test_shape_mismatch_400(demo, shape, data):
    r = infer(demo, "simple", [_t("INPUT0", shape, data), _t("INPUT1", [1, 16], ROW)])
    assert_error(r, 400, "INPUT0")


@pytest.mark.parametrize("data", [ROW[:15], ROW + [16], [], [ROW, ROW]])
def test_data_count_not_matching_shape_400(demo, data):
    r = infer(demo, "simple", [_t("INPUT0", [1, 16], data), _t("INPUT1", [1, 16], ROW)])
    assert_error(r, 400, "INPUT0")


@pytest.mark.parametrize("shape", [[-1, 16], [1, -16], [-2, 16]])
def test_negative_shape_400(demo, shape):
    r = infer(demo, "simple", [_t("INPUT0", shape, ROW), _t("INPUT1", [1, 16], ROW)])
    assert_error(r, 400, "INPUT0")


@pytest.mark.parametrize("shape_text", [
    "[9223372036854775807, 4]",
    "[4611686018427387904, 4]",
    "[4294967296, 4294967296]",
    "[2305843009213693952, 1]",       # count fits int64, count*4 bytes does not
    "[18446744073709551616, 1]",      # not an int64
    "[1e3, 1]",
    "[1.5, 1]",
    '["1", 1]',
    "[1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, "
    "1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, "
    "1, 1, 1, 1, 1, 1, 1, 1, 9223372036854775807, 4]",
])
def test_bad_or_overflowing_shape_400(demo, shape_text):
    text = ('{"inputs":[{"name":"INPUT0","datatype":"INT32","shape":%s,"data":[1,2,3,4]}]}'
            % shape_text)
    r = post_json(demo, "/v2/models/identity_int32/infer", text)
    assert_error(r, 400)


def test_unknown_requested_output_400(demo):
    r = post_json(demo, "/v2/models/simple/infer",
                  simple_body(outputs=[{"name": "OUTPUT0"}, {"name": "OUTPUT9"}]))
    assert_error(r, 400, "OUTPUT9")


def test_int_out_of_range_400(demo):
    r = infer(demo, "simple", [_t("INPUT0", [1, 16], [2147483648] + ROW[1:]),
                               _t("INPUT1", [1, 16], ROW)])
    assert_error(r, 400, "INPUT0")


def test_wrong_element_type_400(demo):
    r = infer(demo, "simple", [_t("INPUT0", [1, 16], ["1"] + ROW[1:]), _t("INPUT1", [1, 16], ROW)])
    assert_error(r, 400, "INPUT0")


@pytest.mark.parametrize("k", [0, -1, "two", 1.5])
def test_bad_classification_parameter_is_4xx(demo, k):
    r = post_json(demo, "/v2/models/simple/infer",
                  simple_body(outputs=[{"name": "OUTPUT0", "parameters": {"classification": k}}]))
    if k == 0 and r.status_code == 200:
        return  # 0 may mean "no classification"
    assert_error(r, 400)


# --- backend and state errors -------------------------------------------------------------
def _meta_or_default(demo, model):
    r = get(demo, "/v2/models/" + model)
    if r.status_code == 200:
        return inputs_from_metadata(r.json())
    return [_t("INPUT0", [1], [0])]


def test_backend_failure_500(demo):
    r = infer(demo, "failing", _meta_or_default(demo, "failing"))
    assert_error(r, 500, "intentional failure")


def test_backend_failure_keeps_connection_usable(demo):
    with requests.Session() as s:
        r1 = s.post(demo.url("/v2/models/failing/infer"),
                    data=json.dumps({"inputs": _meta_or_default(demo, "failing")}),
                    headers={"Content-Type": "application/json"}, timeout=TIMEOUT)
        assert_error(r1, 500, "intentional failure")
        r2 = s.post(demo.url("/v2/models/simple/infer"), data=json.dumps(simple_body()),
                    headers={"Content-Type": "application/json"}, timeout=TIMEOUT)
        ok_json(r2)


@pytest.mark.parametrize("version", [None, "1"])
def test_model_not_ready_infer_503(demo, version):
    r = infer(demo, "loading", _meta_or_default(demo, "loading"), version=version)
    assert_error(r, 503, "loading")


# --- every error body is JSON ---------------------------------------------------------------
ERROR_REQUESTS = [
    ("GET", "/v2/models/nope", None),
    ("GET", "/nope", None),
    ("GET", "/v2/models/simple/infer", None),
    ("POST", "/v2/health/live", "{}"),
    ("POST", "/v2/models/simple/infer", "{bad json"),
    ("POST", "/v2/models/simple/infer", '{"inputs": []}'),
    ("POST", "/v2/models/simple/infer", json.dumps(simple_body(outputs=[{"name": "X\"y"}]))),
    ("POST", "/v2/models/no\"pe/infer", "{}"),
    ("POST", "/v2/models/%E2%98%83/infer", "{}"),
    ("POST", "/v2/models/%FF%FE/infer", "{}"),
    ("GET", "/v2/models/simple/versions/%00", None),
    ("POST", "/v2/models/failing/infer", '{"inputs": []}'),
    ("POST", "/v2/models/loading/infer", '{"inputs": []}'),
]


@pytest.mark.parametrize("method,path,body", ERROR_REQUESTS)
def test_error_body_is_json_with_error_string(demo, method, path, body):
    r = requests.request(method, demo.url(path), data=body,
                         headers={"Content-Type": "application/json"}, timeout=TIMEOUT)
    assert 400 <= r.status_code < 600, show(r)
    parsed = strict_json(r)
    assert isinstance(parsed, dict) and isinstance(parsed.get("error"), str) and parsed["error"], \
        show(r)


CLIENT_MISTAKES = [
    {"inputs": [{"name": "INPUT0"}]},
    {"inputs": [{"name": "INPUT0", "shape": "1,16", "datatype": "INT32", "data": ROW}]},
    {"inputs": [{"name": "INPUT0", "shape": [1, 16], "datatype": 5, "data": ROW}]},
    {"inputs": [{"name": "INPUT0", "shape": [1, 16], "datatype": "INT32", "data": "x"}]},
    {"inputs": [{"name": "INPUT0", "shape": [1, 16], "datatype": "INT32"}]},
    {"inputs": [{"name": "INPUT0", "shape": [1, 16], "datatype": "INT32", "data": [ROW[:8], ROW[8:]]}],
     "outputs": "OUTPUT0"},
    {"inputs": simple_inputs([ROW], [ROW]), "outputs": [{"noname": 1}]},
    {"inputs": simple_inputs([ROW], [ROW]), "outputs": [5]},
    {"inputs": simple_inputs([ROW], [ROW]), "parameters": [1, 2]},
    {"inputs": [{"name": "INPUT0", "shape": [1, 16], "datatype": "INT32", "data": [None] * 16},
                {"name": "INPUT1", "shape": [1, 16], "datatype": "INT32", "data": ROW}]},
    {"inputs": [{"name": "INPUT0", "shape": [1, 16], "datatype": "INT32", "data": [{}] * 16},
                {"name": "INPUT1", "shape": [1, 16], "datatype": "INT32", "data": ROW}]},
    {"inputs": [{"name": "INPUT0", "shape": [0, 16], "datatype": "INT32", "data": []},
                {"name": "INPUT1", "shape": [1, 16], "datatype": "INT32", "data": ROW}]},
]


@pytest.mark.parametrize("i", range(len(CLIENT_MISTAKES)))
def test_client_mistakes_are_4xx_never_500(demo, i):
    r = post_json(demo, "/v2/models/simple/infer", CLIENT_MISTAKES[i])
    assert 400 <= r.status_code < 500, "request %s\n%s" % (json.dumps(CLIENT_MISTAKES[i]), show(r))
    assert "error" in strict_json(r), show(r)
