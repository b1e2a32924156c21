"""Server-side apply on lists: atomic, sets and maps by their keys."""

import copy

import pytest

from kopf_sim.writes.applying import (
    ApplyConflictError,
)
from kopf_sim.writes.patching import PatchError

from .helpers import (
    CM,
    _apply,
    _configmap,
    _containers,
    _deployment,
    _fields,
    _live_containers,
    _managers,
    _update,
)

# ----------------------------------------------------------------------------------------------------


def test_apply_associative_lists_merge_by_key_across_managers() -> None:
    live = _apply(None, _containers({"name": "a", "image": "a:1"}), "one")
    live = _apply(live, _containers({"name": "b", "image": "b:1"}), "two")
    assert _live_containers(live) == [{"name": "a", "image": "a:1"}, {"name": "b", "image": "b:1"}]
    assert _fields(live, "two") == {
        '.spec.template.spec.containers[name="b"]',
        '.spec.template.spec.containers[name="b"].name',
        '.spec.template.spec.containers[name="b"].image',
    }

    live = _apply(live, _containers({"name": "a", "image": "a:2"}), "one")
    assert _live_containers(live) == [{"name": "a", "image": "a:2"}, {"name": "b", "image": "b:1"}]

    live = _apply(live, _deployment(), "one")
    assert _live_containers(live) == [{"name": "b", "image": "b:1"}]
    assert list(_managers(live)) == ["two"]


def test_apply_associative_list_item_fields_conflict() -> None:
    live = _apply(None, _containers({"name": "a", "image": "a:1"}), "one")
    with pytest.raises(ApplyConflictError) as err:
        _apply(live, _containers({"name": "a", "image": "a:2"}), "two")
    assert err.value.conflicts == [("one", '.spec.template.spec.containers[name="a"].image')]


def test_apply_nested_associative_lists() -> None:
    live = _apply(None, _containers({"name": "a", "ports": [{"containerPort": 80}, {"containerPort": 81}]}))
    result = _apply(live, _containers({"name": "a", "ports": [{"containerPort": 81, "name": "x"}]}))
    assert _live_containers(result) == [{"name": "a", "ports": [{"containerPort": 81, "name": "x"}]}]


def test_apply_drops_item_but_keeps_it_for_fields_of_others() -> None:
    live = _apply(None, _containers({"name": "a", "image": "a:1", "args": ["x"]}), "one")
    changed = copy.deepcopy(live)
    _live_containers(changed)[0]["image"] = "a:2"
    live = _update(live, changed, "ctl")
    result = _apply(live, _deployment(), "one")
    assert _live_containers(result) == [{"name": "a", "image": "a:2"}]  # the key field stays, args go
    assert "one" not in _managers(result)


def test_apply_sets_merge_as_unions() -> None:
    live = _apply(None, _configmap(finalizers=["a", "b"]), "one", kind_key=CM, api_version="v1")
    live = _apply(live, _configmap(finalizers=["b", "c"]), "two", kind_key=CM, api_version="v1")
    assert live["metadata"]["finalizers"] == ["a", "b", "c"]
    live = _apply(live, _configmap(finalizers=["b"]), "one", kind_key=CM, api_version="v1")
    assert live["metadata"]["finalizers"] == ["b", "c"]
    live = _apply(live, _configmap(), "two", kind_key=CM, api_version="v1")
    assert live["metadata"]["finalizers"] == ["b"]
    assert _fields(live, "one") == {'.metadata.finalizers[="b"]'}


def test_apply_atomic_lists_are_owned_and_replaced_whole() -> None:
    live = _apply(None, _containers({"name": "a", "args": ["1", "2"]}), "one")
    assert '.spec.template.spec.containers[name="a"].args' in _fields(live, "one")
    with pytest.raises(ApplyConflictError):
        _apply(live, _containers({"name": "a", "args": ["3"]}), "two")
    result = _apply(live, _containers({"name": "a", "args": ["3"]}), "two", force=True)
    assert _live_containers(result) == [{"name": "a", "args": ["3"]}]


def test_apply_without_kind_metadata_treats_lists_as_atomic() -> None:
    thing = {
        "apiVersion": "example.com/v1",
        "kind": "Thing",
        "metadata": {"name": "t"},
        "spec": {"items": [{"name": "a"}]},
    }
    result = _apply(None, thing, kind_key=None, api_version="example.com/v1")
    assert _fields(result, "kubectl") == {".spec.items"}


def test_apply_rejects_items_without_keys() -> None:
    with pytest.raises(PatchError) as err:
        _apply(None, _containers({"image": "x"}))
    assert err.value.message == (
        ".spec.template.spec.containers: element 0: associative list with keys has "
        'an element that omits key field "name"'
    )


def test_apply_rejects_duplicate_keys() -> None:
    with pytest.raises(PatchError) as err:
        _apply(None, _containers({"name": "a"}, {"name": "a"}))
    assert err.value.message == '.spec.template.spec.containers: duplicate entries for key [name="a"]'


def test_apply_rejects_non_objects() -> None:
    with pytest.raises(PatchError) as err:
        _apply(None, [1])  # type: ignore[arg-type]
    assert err.value.code == 400


# ----------------------------------------------------------------------------------------------------
