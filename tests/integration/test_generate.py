"""Triton's generate extension over REST with requests: the flat request object (inputs by
name, other keys and "parameters" as request parameters), the flat response object, errors as
{"error": ...} with their status, and a decoupled model refused on /generate."""
from isvtest import assert_error, ok_json, post_json


def test_generate_maps_keys_to_inputs_and_outputs(demo):
    body = ok_json(post_json(demo, "/v2/models/half_plus_three/generate", {"x": [1, 2, 3]}))
    assert body == {"model_name": "half_plus_three", "model_version": "123", "y": [3.5, 4.0, 4.5]}
    body = ok_json(post_json(demo, "/v2/models/half_plus_three/versions/123/generate",
                             {"x": 4, "parameters": {"temperature": 0.1}}))
    assert body["y"] == 5.0  # one element: a scalar, not a list


def test_generate_on_a_text_model_with_parameters(demo):
    ins = {"INPUT0": [str(i) for i in range(16)], "INPUT1": ["1"] * 16, "stream": False,
           "parameters": {"max_tokens": 8}}
    body = ok_json(post_json(demo, "/v2/models/simple_string/generate", ins))
    assert body["OUTPUT0"] == [str(i + 1) for i in range(16)]
    assert body["OUTPUT1"] == [str(i - 1) for i in range(16)]


def test_generate_errors(demo):
    assert_error(post_json(demo, "/v2/models/nope/generate", {"x": 1}), 404,
                 "unknown model 'nope'")
    assert_error(post_json(demo, "/v2/models/half_plus_three/generate", {"x": [[1], [2]]}), 400,
                 "'x' must be a string, a number, a bool or a flat array of them")
    assert_error(post_json(demo, "/v2/models/half_plus_three/generate", "{\"x\": [1,"), 400,
                 "malformed JSON")
    assert_error(post_json(demo, "/v2/models/half_plus_three/generate", {"y": 1}), 400,
                 "missing input 'x' for model 'half_plus_three'")
    assert_error(post_json(demo, "/v2/models/tokens/generate", {"text_input": "a b"}), 400,
                 "model 'tokens' is decoupled")
