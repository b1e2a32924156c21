"""JSON merge patches (RFC 7386)."""

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kopf_sim.writes.patching import (
    apply_merge_patch,
)

# ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "patch", "expected"),
    [  # the examples of RFC 7386, appendix A
        ({"a": "b"}, {"a": "c"}, {"a": "c"}),
        ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
        ({"a": "b"}, {"a": None}, {}),
        ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
        ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
        ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
        ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
        ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
        (["a", "b"], ["c", "d"], ["c", "d"]),
        ({"a": "b"}, ["c"], ["c"]),
        ({"a": "foo"}, None, None),
        ({"a": "foo"}, "bar", "bar"),
        ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
        ([1, 2], {"a": "b", "c": None}, {"a": "b"}),
        ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
    ],
)
def test_merge_patch_rfc_examples(target: Any, patch: Any, expected: Any) -> None:
    assert apply_merge_patch(target, patch) == expected


def test_merge_patch_does_not_mutate_inputs() -> None:
    target = {"a": {"b": [1, 2]}, "c": 1}
    patch = {"a": {"b": [3], "d": {"e": 1}}, "c": None}
    target_copy, patch_copy = copy.deepcopy(target), copy.deepcopy(patch)
    result = apply_merge_patch(target, patch)
    result["a"]["d"]["e"] = 2
    result["a"]["b"].append(4)
    assert target == target_copy
    assert patch == patch_copy


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=3),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=2), children, max_size=3),
    max_leaves=10,
)
json_objects = st.dictionaries(st.text(max_size=2), json_values, max_size=4)


def _without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    return value


@settings(max_examples=100, deadline=None)
@given(target=json_objects, patch=json_objects)
def test_merge_patch_laws(target: dict[str, Any], patch: dict[str, Any]) -> None:
    result = apply_merge_patch(target, patch)
    assert apply_merge_patch(result, patch) == result  # idempotent
    for key, value in patch.items():
        if value is None:
            assert key not in result
        elif not isinstance(value, dict):
            assert result[key] == value
    for key in target:
        if key not in patch:
            assert result[key] == target[key]


@settings(max_examples=100, deadline=None)
@given(target=json_objects)
def test_merge_patch_with_itself_drops_only_nulls(target: dict[str, Any]) -> None:
    assert apply_merge_patch({}, target) == _without_nulls(target)


# ----------------------------------------------------------------------------------------------------
