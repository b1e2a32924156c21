import copy
from typing import Any

import jsonpatch
import pytest

from kopf._cogs.structs import patches
from kopf._cogs.structs.patches import MetaPatch, Patch, SpecPatch, StatusPatch


def test_patch_is_a_dict_and_empty_by_default() -> None:
    patch = Patch()
    assert isinstance(patch, dict)
    assert patch == {}
    assert not patch
    assert patch.body is None


def test_patch_from_source_is_a_copy() -> None:
    src = {"spec": {"x": 1}}
    patch = Patch(src)
    assert patch == src
    patch["other"] = 1
    assert "other" not in src


def test_stanza_views_types() -> None:
    patch = Patch()
    assert isinstance(patch.metadata, MetaPatch)
    assert isinstance(patch.meta, MetaPatch)
    assert isinstance(patch.spec, SpecPatch)
    assert isinstance(patch.status, StatusPatch)


def test_reading_views_does_not_create_stanzas() -> None:
    patch = Patch()
    assert patch.spec == {}
    assert patch.status.get("x") is None
    assert patch.meta.labels == {}
    assert patch == {}


def test_writing_via_views_creates_stanzas() -> None:
    patch = Patch()
    patch.spec["field"] = "v"
    patch.status["create_fn"] = {"done": True}
    patch.metadata.labels["l1"] = "v1"
    patch.meta.annotations["a1"] = None
    patch.meta["finalizers"] = []
    assert patch == {
        "spec": {"field": "v"},
        "status": {"create_fn": {"done": True}},
        "metadata": {"labels": {"l1": "v1"}, "annotations": {"a1": None}, "finalizers": []},
    }
    assert patch.spec == {"field": "v"}
    assert patch.meta.labels == {"l1": "v1"}
    del patch.spec["field"]
    assert patch["spec"] == {}


def test_writing_after_a_stanza_removal() -> None:
    patch = Patch({"status": None})
    patch.status["x"] = 1
    assert patch == {"status": {"x": 1}}


def test_copying_keeps_content_and_body() -> None:
    patch = Patch({"spec": {"x": 1}}, body={"spec": {}})
    clone = copy.deepcopy(patch)
    assert clone == patch
    assert clone.body == {"spec": {}}
    clone.spec["y"] = 2
    assert "y" not in patch["spec"]


def test_json_patch_without_body_adds_everything() -> None:
    patch = Patch({"spec": {"numbers": [1, 2, 3]}})
    assert patch.as_json_patch() == [{"op": "add", "path": "/spec", "value": {"numbers": [1, 2, 3]}}]


def test_json_patch_against_body() -> None:
    body = {"metadata": {"labels": {"old": "x", "keep": "y"}}, "spec": {"numbers": ["1"], "gone": 1}}
    patch = Patch(body=body)
    patch.spec["numbers"] = [1.0]
    patch.spec["new"] = {"a": 1, "b": None}
    patch.spec["gone"] = None
    patch.spec["never-existed"] = None
    patch.meta.labels["old"] = None
    patch.meta.labels["added"] = "z"
    patch.status["x"] = 1
    assert patch.as_json_patch() == [
        {"op": "replace", "path": "/spec/numbers", "value": [1.0]},
        {"op": "add", "path": "/spec/new", "value": {"a": 1}},
        {"op": "remove", "path": "/spec/gone"},
        {"op": "remove", "path": "/metadata/labels/old"},
        {"op": "add", "path": "/metadata/labels/added", "value": "z"},
        {"op": "add", "path": "/status", "value": {"x": 1}},
    ]


def test_json_patch_escapes_pointers() -> None:
    body: dict[str, Any] = {"metadata": {"annotations": {}}}
    patch = Patch(body=body)
    patch.meta.annotations["example.com/a~b"] = "v"
    assert patch.as_json_patch() == [
        {"op": "add", "path": "/metadata/annotations/example.com~1a~0b", "value": "v"},
    ]


@pytest.mark.parametrize(
    "merge",
    [
        {"spec": {"a": 1}},
        {"spec": {"x": None, "y": {"z": None, "w": 2}}},
        {"metadata": {"labels": {"a": None, "b": "c"}}, "status": {"s": [1]}},
        {"spec": None},
    ],
)
def test_json_patch_is_equivalent_to_merge_patch(merge: dict[str, Any]) -> None:
    body = {"metadata": {"labels": {"a": "1"}}, "spec": {"x": 1, "y": {"z": 1}}}
    expected = _merge(copy.deepcopy(body), merge)
    result = jsonpatch.apply_patch(body, Patch(merge, body=body).as_json_patch())
    assert result == expected


def _merge(target: Any, patch: Any) -> Any:
    """A reference implementation of RFC 7386, for comparison."""
    if not isinstance(patch, dict):
        return patch
    if not isinstance(target, dict):
        target = {}
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        else:
            target[key] = _merge(target.get(key), value)
    return target


def test_merge_patched_view() -> None:
    body = {"a": {"b": 1, "c": 2}, "d": [1], "e": "x"}
    result = patches.merge_patched_view(body, {"a": {"b": None, "f": {"g": 3}}, "d": [2], "e": None})
    assert result == {"a": {"c": 2, "f": {"g": 3}}, "d": [2]}
    assert body == {"a": {"b": 1, "c": 2}, "d": [1], "e": "x"}


def test_merge_patched_view_copies_the_patch_and_shares_the_untouched_body() -> None:
    body = {"metadata": {"labels": {"x": "1"}}, "spec": {"items": [1, 2]}}
    patch = {"status": {"list": [1]}, "metadata": {"annotations": {"a": "b"}}}
    result = patches.merge_patched_view(body, patch)
    patch["status"]["list"].append(2)
    assert result["status"] == {"list": [1]}
    assert result["spec"] is body["spec"]  # never patched: not copied
    assert result["metadata"] is not body["metadata"]  # patched: a new mapping
    assert result["metadata"]["labels"] is body["metadata"]["labels"]
    assert body == {"metadata": {"labels": {"x": "1"}}, "spec": {"items": [1, 2]}}
