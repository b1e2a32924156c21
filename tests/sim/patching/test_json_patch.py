"""JSON patches (RFC 6902), as the apiserver applies them."""

from typing import Any

import pytest

from kopf_sim.writes.patching import (
    PatchError,
    apply_json_patch,
)

# ----------------------------------------------------------------------------------------------------


def test_json_patch_all_operations() -> None:
    target = {"metadata": {"labels": {"a": "1"}}, "spec": {"items": [1, 2]}}
    patch = [
        {"op": "test", "path": "/metadata/labels/a", "value": "1"},
        {"op": "add", "path": "/metadata/labels/b", "value": "2"},
        {"op": "replace", "path": "/metadata/labels/a", "value": "x"},
        {"op": "remove", "path": "/spec/items/0"},
        {"op": "add", "path": "/spec/items/-", "value": 3},
        {"op": "copy", "from": "/metadata/labels", "path": "/spec/copied"},
        {"op": "move", "from": "/spec/copied/b", "path": "/spec/moved"},
    ]
    result = apply_json_patch(target, patch)
    assert result == {
        "metadata": {"labels": {"a": "x", "b": "2"}},
        "spec": {"items": [2, 3], "copied": {"a": "x"}, "moved": "2"},
    }
    assert target == {"metadata": {"labels": {"a": "1"}}, "spec": {"items": [1, 2]}}


def test_json_patch_is_atomic_and_does_not_mutate() -> None:
    target = {"a": 1}
    with pytest.raises(PatchError):
        apply_json_patch(target, [{"op": "add", "path": "/b", "value": 2}, {"op": "remove", "path": "/zzz"}])
    assert target == {"a": 1}


def test_json_patch_empty_is_a_copy() -> None:
    target = {"a": {"b": 1}}
    result = apply_json_patch(target, [])
    assert result == target
    assert result is not target
    assert result["a"] is not target["a"]


def test_json_patch_failed_test() -> None:
    with pytest.raises(PatchError) as err:
        apply_json_patch(
            {"metadata": {"resourceVersion": "1"}}, [{"op": "test", "path": "/metadata/resourceVersion", "value": "2"}]
        )
    assert err.value.code == 422
    assert str(err.value) == "testing value /metadata/resourceVersion failed: test failed"


@pytest.mark.parametrize(
    ("operation", "message"),
    [
        ({"op": "remove", "path": "/x"}, 'remove operation does not apply: doc is missing path: "/x": missing value'),
        (
            {"op": "replace", "path": "/x", "value": 1},
            'replace operation does not apply: doc is missing path: "/x": missing value',
        ),
        (
            {"op": "add", "path": "/x/y", "value": 1},
            'add operation does not apply: doc is missing path: "/x/y": missing value',
        ),
        (
            {"op": "add", "path": "/l/9", "value": 1},
            'add operation does not apply: doc is missing path: "/l/9": missing value',
        ),
        (
            {"op": "move", "from": "/x", "path": "/y"},
            'move operation does not apply: doc is missing path: "/x": missing value',
        ),
        (
            {"op": "copy", "from": "/x", "path": "/y"},
            'copy operation does not apply: doc is missing path: "/x": missing value',
        ),
        (
            {"op": "add", "path": "/a/b/c", "value": 1},
            'add operation does not apply: doc is missing path: "/a/b/c": missing value',
        ),
    ],
)
def test_json_patch_bad_paths(operation: dict[str, Any], message: str) -> None:
    with pytest.raises(PatchError) as err:
        apply_json_patch({"a": {"b": 1}, "l": [1]}, [operation])
    assert err.value.code == 422
    assert err.value.message == message


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        ({"op": "add"}, "json: cannot unmarshal object into Go value of type jsonpatch.Patch"),
        ("text", "json: cannot unmarshal str into Go value of type jsonpatch.Patch"),
        ([1], "json: cannot unmarshal int into a patch operation"),
        ([{"op": "frobnicate", "path": "/a"}], "Unexpected kind: frobnicate"),
        ([{"path": "/a"}], "Unexpected kind: None"),
        ([{"op": "add", "value": 1}], "add operation is missing a path"),
        ([{"op": "add", "path": "/a"}], "add operation is missing a value"),
        ([{"op": "test", "path": "/a"}], "test operation is missing a value"),
        ([{"op": "move", "path": "/a"}], "move operation is missing a from path"),
    ],
)
def test_json_patch_undecodable(patch: Any, message: str) -> None:
    with pytest.raises(PatchError) as err:
        apply_json_patch({"a": 1}, patch)
    assert err.value.code == 400
    assert err.value.message == message


def test_patch_error_is_a_value_error() -> None:
    assert issubclass(PatchError, ValueError)
    assert PatchError("x").code == 422


# ----------------------------------------------------------------------------------------------------
