"""Updates (PUT, patches) and the managed fields they leave."""

import copy

import pytest

from kopf_sim.writes.applying import (
    ApplyConflictError,
)

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


def test_update_on_create_owns_everything() -> None:
    obj = _deployment(replicas=1, template={"spec": {"containers": [{"name": "a"}]}})
    obj["metadata"].update(uid="u", labels={"x": "1"}, finalizers=["f"])
    result = _update(None, obj, "creator")
    assert result["metadata"]["managedFields"] == [
        {
            "manager": "creator",
            "operation": "Update",
            "apiVersion": "apps/v1",
            "time": "2024-01-02T00:00:00Z",
            "fieldsType": "FieldsV1",
            "fieldsV1": {
                "f:metadata": {"f:finalizers": {'v:"f"': {}}, "f:labels": {"f:x": {}}},
                "f:spec": {
                    "f:replicas": {},
                    "f:template": {
                        "f:spec": {
                            "f:containers": {
                                'k:{"name":"a"}': {".": {}, "f:name": {}},
                            }
                        }
                    },
                },
            },
        }
    ]
    assert result["spec"] == obj["spec"]
    assert "managedFields" not in obj["metadata"]  # not mutated


def test_update_moves_changed_fields_to_the_writer() -> None:
    live = _apply(None, _deployment(replicas=1, paused=True))
    result = _update(live, {**live, "spec": {"replicas": 2, "paused": True}}, "hpa")
    assert _fields(result, "kubectl") == {".spec.paused"}
    assert _fields(result, "hpa") == {".spec.replicas"}
    assert _managers(result)["hpa"]["operation"] == "Update"


def test_update_of_all_fields_drops_the_empty_entries() -> None:
    live = _update(None, _deployment(replicas=1), "one")
    result = _update(live, {**live, "spec": {"replicas": 2}}, "two")
    assert list(_managers(result)) == ["two"]


def test_update_removing_fields_removes_them_from_all_owners() -> None:
    live = _apply(None, _deployment(replicas=1, template={"spec": {"containers": [{"name": "a"}]}}))
    result = _update(live, {**live, "spec": {"replicas": 1}}, "ctl")
    assert _fields(result, "kubectl") == {".spec.replicas"}
    assert "ctl" not in _managers(result)


def test_update_without_changes_keeps_managed_fields() -> None:
    live = _apply(None, _deployment(replicas=1))
    assert _update(live, copy.deepcopy(live), "ctl") == live


def test_update_keeps_old_managed_fields_if_not_sent() -> None:
    live = _apply(None, _deployment(replicas=1))
    new = _deployment(replicas=1, paused=True)
    result = _update(live, new, "ctl")
    assert _fields(result, "kubectl") == {".spec.replicas"}
    assert _fields(result, "ctl") == {".spec.paused"}
    assert "managedFields" not in new["metadata"]


def test_update_with_empty_list_keeps_managed_fields() -> None:
    live = _apply(None, _deployment(replicas=1))
    new = _deployment(replicas=1, paused=True)
    new["metadata"]["managedFields"] = []
    assert _fields(_update(live, new, "ctl"), "kubectl") == {".spec.replicas"}


def test_update_with_an_empty_entry_resets_managed_fields() -> None:
    live = _apply(None, _deployment(replicas=1))
    new = _deployment(replicas=2)
    new["metadata"]["managedFields"] = [{}]
    result = _update(live, new, "ctl")
    assert "managedFields" not in result["metadata"]
    assert result["spec"] == {"replicas": 2}


def test_update_honours_managed_fields_sent_by_the_client() -> None:
    live = _apply(None, _deployment(replicas=1))
    new = _deployment(replicas=1, paused=True)
    new["metadata"]["managedFields"] = [
        {
            "manager": "someone",
            "operation": "Update",
            "apiVersion": "apps/v1",
            "time": "t",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:spec": {"f:replicas": {}}},
        }
    ]
    result = _update(live, new, "ctl")
    assert set(_managers(result)) == {"someone", "ctl"}
    assert _managers(result)["someone"] == new["metadata"]["managedFields"][0]


def test_update_entries_per_api_version_and_subresource() -> None:
    live = _update(None, _deployment(replicas=1), "ctl", api_version="apps/v1")
    live = _update(live, {**live, "spec": {"replicas": 1, "paused": True}}, "ctl", api_version="apps/v1beta2")
    live = _update(live, {**live, "status": {"replicas": 1}}, "ctl", subresource="status")
    entries = [(e["manager"], e["apiVersion"], e.get("subresource")) for e in live["metadata"]["managedFields"]]
    assert sorted(entries, key=str) == sorted(
        [("ctl", "apps/v1", None), ("ctl", "apps/v1beta2", None), ("ctl", "apps/v1", "status")], key=str
    )
    status_entry = next(e for e in live["metadata"]["managedFields"] if e.get("subresource"))
    assert status_entry["fieldsV1"] == {"f:status": {"f:replicas": {}}}


def test_update_of_a_list_item_field_moves_only_that_field() -> None:
    live = _apply(None, _containers({"name": "a", "image": "a:1", "args": ["x"]}))
    changed = copy.deepcopy(live)
    _live_containers(changed)[0]["image"] = "a:2"
    _live_containers(changed).append({"name": "b"})
    result = _update(live, changed, "ctl")
    assert _fields(result, "ctl") == {
        '.spec.template.spec.containers[name="a"].image',
        '.spec.template.spec.containers[name="b"]',
        '.spec.template.spec.containers[name="b"].name',
    }
    assert '.spec.template.spec.containers[name="a"]' in _fields(result, "kubectl")


def test_update_of_sets_tracks_values() -> None:
    live = _update(None, _configmap(finalizers=["a"]), "one", kind_key=CM, api_version="v1")
    result = _update(live, _configmap(finalizers=["a", "b"]), "two", kind_key=CM, api_version="v1")
    assert _fields(result, "one") == {'.metadata.finalizers[="a"]'}
    assert _fields(result, "two") == {'.metadata.finalizers[="b"]'}
    result = _update(result, _configmap(finalizers=["b"]), "three", kind_key=CM, api_version="v1")
    assert "one" not in _managers(result)


def test_update_changing_shape_purges_the_old_subtree() -> None:
    live = _update(None, _configmap(data=None, labels={"a": "1"}), "one", kind_key=CM, api_version="v1")
    new = _configmap(labels={})
    result = _update(live, new, "two", kind_key=CM, api_version="v1")
    assert list(_managers(result)) == ["two"]
    assert _fields(result, "two") == {".metadata.labels"}


def test_update_with_unkeyable_items_falls_back_to_atomic() -> None:
    live = _update(None, _containers({"name": "a"}), "one")
    result = _update(live, _containers({"image": "no-name"}), "two")
    assert _fields(result, "two") == {".spec.template.spec.containers"}
    assert "one" not in _managers(result)


def test_update_is_cheap_for_big_objects() -> None:
    data = {f"key{i}": str(i) for i in range(5000)}
    live = _update(None, _configmap(data), "one", kind_key=CM, api_version="v1")
    changed = _configmap({**data, "key1": "x"}, managedFields=live["metadata"]["managedFields"])
    result = _update(live, changed, "two", kind_key=CM, api_version="v1")
    assert _fields(result, "two") == {".data.key1"}
    assert len(_fields(result, "one")) == 4999


def test_cached_field_trees_are_neither_shared_nor_misread_after_changes_in_place() -> None:
    first = _update(None, _configmap({"a": "1"}), kind_key=CM, api_version="v1")
    second = _update(None, _configmap({"a": "1"}), kind_key=CM, api_version="v1")
    tree = first["metadata"]["managedFields"][0]["fieldsV1"]
    assert tree == second["metadata"]["managedFields"][0]["fieldsV1"] == {"f:data": {"f:a": {}}}
    assert tree is not second["metadata"]["managedFields"][0]["fieldsV1"]

    # The rendered (and memoized) tree is changed in place: the change is seen as if never cached.
    tree["f:data"]["f:z"] = {}
    changed = {**first, "data": {"a": "2"}}
    result = _update(first, changed, "other", kind_key=CM, api_version="v1")
    assert result == _update(copy.deepcopy(first), copy.deepcopy(changed), "other", kind_key=CM, api_version="v1")
    assert _fields(result, "ctl") == {".data.z"}
    assert _fields(result, "other") == {".data.a"}

    # Nothing else is affected by that change: the same fields render as before.
    third = _update(None, _configmap({"a": "1"}), kind_key=CM, api_version="v1")
    assert third["metadata"]["managedFields"][0]["fieldsV1"] == {"f:data": {"f:a": {}}}
    assert second["metadata"]["managedFields"][0]["fieldsV1"] == {"f:data": {"f:a": {}}}


def test_apply_changing_a_co_owned_field_conflicts_even_for_a_co_owner() -> None:
    live = _apply(None, _deployment(replicas=2), "one")
    live = _apply(live, _deployment(replicas=2), "two")
    with pytest.raises(ApplyConflictError) as err:
        _apply(live, _deployment(replicas=3), "one")
    assert err.value.conflicts == [("two", ".spec.replicas")]


def test_apply_of_an_empty_map_owns_the_map() -> None:
    result = _apply(None, _configmap(labels={}), kind_key=CM, api_version="v1")
    assert _fields(result, "kubectl") == {".metadata.labels"}


def test_apply_on_custom_resources_knows_the_metadata_lists() -> None:
    thing = {
        "apiVersion": "example.com/v1",
        "kind": "Thing",
        "metadata": {"name": "t", "finalizers": ["a"], "ownerReferences": [{"uid": "u", "name": "o"}]},
    }
    result = _apply(None, thing, kind_key=None, api_version="example.com/v1")
    assert _fields(result, "kubectl") == {
        '.metadata.finalizers[="a"]',
        '.metadata.ownerReferences[uid="u"]',
        '.metadata.ownerReferences[uid="u"].uid',
        '.metadata.ownerReferences[uid="u"].name',
    }
    changed = copy.deepcopy(result)
    changed["metadata"]["finalizers"].append("kopf.zalando.org/KopfFinalizerMarker")
    result = _update(result, changed, "kopf", kind_key=None, api_version="example.com/v1")
    assert _fields(result, "kopf") == {'.metadata.finalizers[="kopf.zalando.org/KopfFinalizerMarker"]'}


def test_update_removing_all_fields_drops_all_entries() -> None:
    live = _update(None, _configmap({"a": "1"}), "one", kind_key=CM, api_version="v1")
    result = _update(live, _configmap(), "two", kind_key=CM, api_version="v1")
    assert "managedFields" not in result["metadata"]
    result = _update(result, _configmap({"b": "2"}), "three", kind_key=CM, api_version="v1")
    assert list(_managers(result)) == ["three"]
