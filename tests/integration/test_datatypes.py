"""Every datatype through identity_<t> in JSON (PROTOCOLS.md §0): range edges, NaN/Infinity
tokens, FP16/BF16 as numbers with round-to-nearest-even, shortest float text, BYTES text."""
import base64
import json
import math
import struct

import pytest

from isvtest import (ROUNDERS, assert_error, flatten, get, infer, loads_raw, ok_json,
                     outputs_by_name, post_json, same_float, shortest_repr, show, sig_digits,
                     strict_json, tensor)

INT_RANGES = {
    "INT8": (-128, 127), "INT16": (-32768, 32767), "INT32": (-2**31, 2**31 - 1),
    "INT64": (-2**63, 2**63 - 1), "UINT8": (0, 255), "UINT16": (0, 65535),
    "UINT32": (0, 2**32 - 1), "UINT64": (0, 2**64 - 1),
}


def model_for(dt):
    return "identity_" + dt.lower()


def raw_infer(demo, dt, shape, data_text):
    """Send `data` as raw JSON text; return (response, raw-parsed body)."""
    text = ('{"inputs":[{"name":"INPUT0","datatype":"%s","shape":%s,"data":%s}]}'
            % (dt, json.dumps(shape), data_text))
    r = post_json(demo, "/v2/models/%s/infer" % model_for(dt), text)
    assert r.status_code == 200, "request %s\n%s" % (text[:500], show(r))
    strict_json(r)  # must be valid JSON (UTF-8)
    body = loads_raw(r.content.decode("utf-8"))
    out = outputs_by_name(body)["OUTPUT0"]
    assert out["datatype"] == dt, show(r)
    assert [int(d) for d in out["shape"]] == shape, show(r)
    return r, out


# --- integers -----------------------------------------------------------------------------
@pytest.mark.parametrize("dt", sorted(INT_RANGES))
def test_int_range_edges(demo, dt):
    lo, hi = INT_RANGES[dt]
    vals = [lo, hi, 0, 1, hi - 1, lo + 1] + ([-1] if lo < 0 else [])
    r, out = raw_infer(demo, dt, [1, len(vals)], "[" + ",".join(str(v) for v in vals) + "]")
    got = flatten(out["data"])
    assert got == [str(v) for v in vals], "raw tokens %r\n%s" % (got, show(r))


@pytest.mark.parametrize("dt", sorted(INT_RANGES))
def test_int_nested_2x3(demo, dt):
    lo, hi = INT_RANGES[dt]
    vals = [[lo, hi, 0], [1, 2, 3]]
    r, out = raw_infer(demo, dt, [2, 3], json.dumps(vals))
    assert [int(x) for x in flatten(out["data"])] == flatten(vals), show(r)


@pytest.mark.parametrize("dt,bad", [(dt, v) for dt, (lo, hi) in sorted(INT_RANGES.items())
                                    for v in (lo - 1, hi + 1)])
def test_int_out_of_range_is_400(demo, dt, bad):
    text = ('{"inputs":[{"name":"INPUT0","datatype":"%s","shape":[1,2],"data":[0,%d]}]}'
            % (dt, bad))
    r = post_json(demo, "/v2/models/%s/infer" % model_for(dt), text)
    assert_error(r, 400, "INPUT0")


@pytest.mark.parametrize("dt", ["INT32", "UINT8", "INT64"])
def test_int_given_fraction_is_400(demo, dt):
    text = '{"inputs":[{"name":"INPUT0","datatype":"%s","shape":[1,2],"data":[1,1.5]}]}' % dt
    assert_error(post_json(demo, "/v2/models/%s/infer" % model_for(dt), text), 400, "INPUT0")


# --- BOOL ---------------------------------------------------------------------------------
def test_bool(demo):
    r, out = raw_infer(demo, "BOOL", [2, 2], "[[true,false],[false,true]]")
    assert flatten(out["data"]) == [True, False, False, True], show(r)


def test_bool_rejects_non_bool(demo):
    text = '{"inputs":[{"name":"INPUT0","datatype":"BOOL","shape":[1,1],"data":["yes"]}]}'
    assert_error(post_json(demo, "/v2/models/identity_bool/infer", text), 400, "INPUT0")


# --- floats -------------------------------------------------------------------------------
FLOAT_CASES = {
    "FP64": [0.1, 3.0, -2.5, 1e308, 1.7976931348623157e308, 5e-324, 2.2250738585072014e-308,
             -0.0, 123456789.125, 9007199254740993.0, 1e-7],
    "FP32": [0.1, 3.0, -2.5, 3.4028234663852886e38, 1.401298464324817e-45,
             1.1754943508222875e-38, 16777217.0, 0.3, -0.0, 1e-7, 100.0],
    "FP16": [0.5, 65504.0, 1.0009765625, 6.103515625e-05, 5.960464477539063e-08, -2.0, 0.1,
             3.0, -0.0, 1.00048828125, 1.00146484375],
    "BF16": [0.5, 3.0, -2.5, 1.0078125, 3.3895313892515355e38, 1.00390625, 1.01171875, 0.1,
             -0.0, 1e-30],
}


def _float_text(v):
    return repr(v)  # Python writes the shortest double repr, e.g. 0.1, 3.0, -0.0, 1e+308


@pytest.mark.parametrize("dt", sorted(FLOAT_CASES))
def test_float_values_round_trip(demo, dt):
    """Each value is rounded to the type (round-to-nearest-even) and written back so that it
    reads back to the same value of that type."""
    vals = FLOAT_CASES[dt]
    rnd = ROUNDERS[dt]
    r, out = raw_infer(demo, dt, [1, len(vals)], "[" + ",".join(_float_text(v) for v in vals) + "]")
    got = flatten(out["data"])
    assert len(got) == len(vals), show(r)
    for v, t in zip(vals, got):
        want = rnd(v)
        back = rnd(float(t))
        assert same_float(back, want), ("%s %r: got text %r (reads back as %r), want %r\n%s"
                                        % (dt, v, t, back, want, show(r)))


@pytest.mark.parametrize("dt", sorted(FLOAT_CASES))
def test_float_shortest_text(demo, dt):
    """PROTOCOLS §0: floats are written as the SHORTEST text that reads back to the same value
    (of the tensor's type), and an integral float keeps ".0"."""
    vals = FLOAT_CASES[dt]
    rnd = ROUNDERS[dt]
    r, out = raw_infer(demo, dt, [1, len(vals)], "[" + ",".join(_float_text(v) for v in vals) + "]")
    got = flatten(out["data"])
    problems = []
    for v, t in zip(vals, got):
        want = rnd(v)
        short = shortest_repr(want, rnd)
        if sig_digits(t) > sig_digits(short):
            problems.append("%r written %r, shortest is %r" % (v, t, short))
        if want == int(want) and abs(want) < 1e15 and not any(c in t for c in ".eE"):
            problems.append("integral %r written %r without '.0'" % (v, t))
    assert not problems, "%s: %s\n%s" % (dt, "; ".join(problems), show(r))


def test_fp32_exact_texts(demo):
    r, out = raw_infer(demo, "FP32", [1, 4], "[0.1, 3.0, 3, -2.5]")
    assert flatten(out["data"]) == ["0.1", "3.0", "3.0", "-2.5"], show(r)


def test_fp64_exact_texts(demo):
    r, out = raw_infer(demo, "FP64", [1, 3], "[0.1, 3.0, 3]")
    assert flatten(out["data"]) == ["0.1", "3.0", "3.0"], show(r)


def test_half_plus_three_text(demo):
    r = infer(demo, "half_plus_three", [{"name": "x", "datatype": "FP32", "shape": [2],
                                         "data": [2.0, 0.2]}])
    out = outputs_by_name(loads_raw(r.text))["y"]
    assert out["data"] == ["4.0", "3.1"], show(r)


@pytest.mark.parametrize("dt", ["FP16", "BF16"])
def test_half_rounds_to_nearest_even(demo, dt):
    # Exact halfway cases (exactly representable in FP32, so there is one rounding).
    if dt == "FP16":
        cases = {1.00048828125: 1.0, 1.00146484375: 1.001953125, 65504.0: 65504.0}
    else:
        cases = {1.00390625: 1.0, 1.01171875: 1.015625, 1.0078125: 1.0078125}
    r, out = raw_infer(demo, dt, [1, len(cases)], json.dumps(list(cases)))
    got = [float(t) for t in flatten(out["data"])]
    rnd = ROUNDERS[dt]
    assert [rnd(g) for g in got] == list(cases.values()), show(r)


@pytest.mark.parametrize("dt", ["FP32", "FP64", "FP16", "BF16"])
def test_nan_infinity_tokens(demo, dt):
    r, out = raw_infer(demo, dt, [1, 5], "[NaN, Infinity, -Infinity, 1.5, -0.5]")
    got = flatten(out["data"])
    assert got[:3] == ["NaN", "Infinity", "-Infinity"], "tokens %r\n%s" % (got, show(r))
    assert [float(t) for t in got[3:]] == [1.5, -0.5], show(r)
    # and Python's own parser (which accepts the bare tokens) reads it
    body = json.loads(r.text)
    d = flatten(outputs_by_name(body)["OUTPUT0"]["data"])
    assert math.isnan(d[0]) and d[1] == math.inf and d[2] == -math.inf, show(r)


@pytest.mark.parametrize("dt", ["FP32", "FP64"])
def test_float_accepts_integer_and_exponent_tokens(demo, dt):
    r, out = raw_infer(demo, dt, [1, 4], "[1, -2, 1e2, 2.5E-1]")
    assert [float(t) for t in flatten(out["data"])] == [1.0, -2.0, 100.0, 0.25], show(r)


# --- BYTES --------------------------------------------------------------------------------
BYTES_VALUES = [
    "", "hello", "héllo wörld", "日本語テキスト", "emoji 😀🎉", "tab\there", "nl\nand\rcr",
    "quote\" backslash\\ slash/", "nul\u0000inside", "ctrl\u0001\u001f", "\u2028\u2029",
    "x" * 300,
]


def test_bytes_unicode_and_escapes(demo):
    r = infer(demo, "identity_bytes", [tensor("INPUT0", "BYTES", [1, len(BYTES_VALUES)],
                                              BYTES_VALUES)])
    body = ok_json(r)
    out = outputs_by_name(body)["OUTPUT0"]
    assert out["datatype"] == "BYTES" and out["shape"] == [1, len(BYTES_VALUES)], show(r)
    assert flatten(out["data"]) == BYTES_VALUES, show(r)


def test_bytes_escaped_input_forms(demo):
    # \u escapes, a surrogate pair and escaped solidus in the REQUEST text.
    text = ('{"inputs":[{"name":"INPUT0","datatype":"BYTES","shape":[2,2],'
            '"data":[["\\u00e9\\u65e5","\\ud83d\\ude00"],["a\\/b","\\b\\f\\n\\r\\t\\"\\\\"]]}]}')
    r = post_json(demo, "/v2/models/identity_bytes/infer", text)
    out = outputs_by_name(ok_json(r))["OUTPUT0"]
    assert flatten(out["data"]) == ["é日", "😀", "a/b", "\b\f\n\r\t\"\\"], show(r)


def test_bytes_lone_surrogate_never_breaks_json(demo):
    """A lone surrogate escape cannot be UTF-8. The server may refuse it (400) or carry the
    bytes, but the response must be valid JSON (valid UTF-8) either way, never a 500."""
    text = ('{"inputs":[{"name":"INPUT0","datatype":"BYTES","shape":[1,1],'
            '"data":["\\ud800"]}]}')
    r = post_json(demo, "/v2/models/identity_bytes/infer", text)
    if r.status_code == 200:
        strict_json(r)
    else:
        assert_error(r, 400)


def test_bytes_rejects_non_string(demo):
    text = '{"inputs":[{"name":"INPUT0","datatype":"BYTES","shape":[1,2],"data":["a",5]}]}'
    assert_error(post_json(demo, "/v2/models/identity_bytes/infer", text), 400, "INPUT0")


def test_non_utf8_bytes_output_is_b64_object(demo):
    """Non-UTF-8 BYTES cannot be sent in a JSON string; the only way in is the binary tensor
    data extension. The JSON output element must then be {"b64": "..."}."""
    meta = ok_json(get(demo, "/v2"))
    if "binary_tensor_data" not in meta.get("extensions", []):
        pytest.skip("binary_tensor_data not advertised: non-UTF-8 BYTES input is not reachable "
                    "through JSON alone")
    elems = [b"\xff\xfe\x00A", b"ok"]
    raw = b"".join(struct.pack("<I", len(e)) + e for e in elems)
    header = json.dumps({"inputs": [{"name": "INPUT0", "datatype": "BYTES", "shape": [1, 2],
                                     "parameters": {"binary_data_size": len(raw)}}],
                         "outputs": [{"name": "OUTPUT0", "parameters": {"binary_data": False}}]
                         }).encode()
    r = post_json(demo, "/v2/models/identity_bytes/infer", header + raw,
                  headers={"Inference-Header-Content-Length": str(len(header)),
                           "Content-Type": "application/octet-stream"})
    body = ok_json(r)
    data = flatten(outputs_by_name(body)["OUTPUT0"]["data"])
    assert data[0] == {"b64": base64.b64encode(elems[0]).decode()}, show(r)
    assert data[1] in ("ok", {"b64": base64.b64encode(b"ok").decode()}), show(r)
