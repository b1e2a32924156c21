import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kopf_sim.writes.applying import (
    ApplyConflictError,
    decode_fields,
    encode_fields,
    format_path,
    server_side_apply,
    track_update,
)
from kopf_sim.writes.patching import PatchError

DEPLOY = "apps/v1/Deployment"
CM = "v1/ConfigMap"


def _deployment(**spec: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "ns"}}
    if spec:
        obj["spec"] = spec
    return obj


def _configmap(data: dict[str, Any] | None = None, **metadata: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "cm", "namespace": "ns", **metadata},
    }
    if data is not None:
        obj["data"] = data
    return obj


def _apply(
    live: dict[str, Any] | None,
    applied: dict[str, Any],
    manager: str = "kubectl",
    *,
    force: bool = False,
    kind_key: str | None = DEPLOY,
    api_version: str = "apps/v1",
    now: str = "2024-01-01T00:00:00Z",
) -> dict[str, Any]:
    return server_side_apply(
        live, applied, manager=manager, force=force, kind_key=kind_key, api_version=api_version, now=now
    )


def _update(
    old: dict[str, Any] | None,
    new: dict[str, Any],
    manager: str = "ctl",
    *,
    kind_key: str | None = DEPLOY,
    api_version: str = "apps/v1",
    now: str = "2024-01-02T00:00:00Z",
    subresource: str | None = None,
) -> dict[str, Any]:
    return track_update(
        old, new, manager=manager, kind_key=kind_key, api_version=api_version, now=now, subresource=subresource
    )


def _managers(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {entry["manager"]: entry for entry in obj["metadata"].get("managedFields", [])}


def _fields(obj: dict[str, Any], manager: str) -> set[str]:
    """The owned paths of a manager, each rendered as the apiserver prints them."""
    return {format_path(path) for path in decode_fields(_managers(obj)[manager]["fieldsV1"])}


# ----------------------------------------------------------------------------------------------------
# FieldsV1 encoding
# ----------------------------------------------------------------------------------------------------


def test_encode_fields_uses_dots_for_owned_nodes_with_children() -> None:
    paths = {
        ("f:spec", "f:replicas"),
        ("f:spec", "f:containers", 'k:{"name":"a"}'),
        ("f:spec", "f:containers", 'k:{"name":"a"}', "f:image"),
        ("f:metadata", "f:finalizers", 'v:"x"'),
    }
    assert encode_fields(paths) == {
        "f:metadata": {"f:finalizers": {'v:"x"': {}}},
        "f:spec": {"f:containers": {'k:{"name":"a"}': {".": {}, "f:image": {}}}, "f:replicas": {}},
    }
    assert decode_fields(encode_fields(paths)) == paths


def test_decode_fields_tolerates_garbage() -> None:
    assert decode_fields(None) == set()
    assert decode_fields({"f:a": "junk", "f:b": {"f:c": {}}}) == {("f:a",), ("f:b", "f:c")}


elements = st.sampled_from(["f:a", "f:b", 'k:{"name":"x"}', 'v:"y"', "f:c"])


@settings(max_examples=100, deadline=None)
@given(st.sets(st.lists(elements, min_size=1, max_size=4).map(tuple), max_size=8))
def test_fields_encoding_roundtrips(paths: set[tuple[str, ...]]) -> None:
    assert decode_fields(encode_fields(paths)) == paths


@pytest.mark.parametrize(
    ("path", "text"),
    [
        (("f:spec", "f:replicas"), ".spec.replicas"),
        (("f:spec", "f:containers", 'k:{"name":"c"}', "f:image"), '.spec.containers[name="c"].image'),
        (("f:ports", 'k:{"containerPort":80,"protocol":"TCP"}'), '.ports[containerPort=80,protocol="TCP"]'),
        (("f:metadata", "f:finalizers", 'v:"x"'), '.metadata.finalizers[="x"]'),
        (("f:data", "f:.dockerconfigjson"), ".data..dockerconfigjson"),
        (("f:items", "i:3"), ".items[3]"),
    ],
)
def test_format_path(path: tuple[str, ...], text: str) -> None:
    assert format_path(path) == text


# ----------------------------------------------------------------------------------------------------
# Server-side apply: creation
# ----------------------------------------------------------------------------------------------------


def test_apply_creates_with_an_apply_entry() -> None:
    applied = _deployment(
        replicas=2,
        template={
            "spec": {
                "containers": [
                    {"name": "c", "image": "i", "ports": [{"containerPort": 80}]},
                ]
            }
        },
    )
    applied["metadata"]["labels"] = {"app": "x"}
    applied["metadata"]["finalizers"] = ["f"]
    result = _apply(None, applied)
    assert result["spec"] == applied["spec"]
    assert result["metadata"]["name"] == "d"
    assert result["metadata"]["namespace"] == "ns"
    assert result["apiVersion"] == "apps/v1"
    assert result["metadata"]["managedFields"] == [
        {
            "manager": "kubectl",
            "operation": "Apply",
            "apiVersion": "apps/v1",
            "time": "2024-01-01T00:00:00Z",
            "fieldsType": "FieldsV1",
            "fieldsV1": {
                "f:metadata": {"f:finalizers": {'v:"f"': {}}, "f:labels": {"f:app": {}}},
                "f:spec": {
                    "f:replicas": {},
                    "f:template": {
                        "f:spec": {
                            "f:containers": {
                                'k:{"name":"c"}': {
                                    ".": {},
                                    "f:image": {},
                                    "f:name": {},
                                    # Ports are keyed by number and protocol, which defaults to TCP.
                                    "f:ports": {
                                        'k:{"containerPort":80,"protocol":"TCP"}': {".": {}, "f:containerPort": {}}
                                    },
                                }
                            }
                        }
                    },
                },
            },
        }
    ]


def test_apply_does_not_track_identity_and_server_fields() -> None:
    applied = _deployment(replicas=1)
    applied["metadata"].update(
        uid="u", resourceVersion="5", generation=3, creationTimestamp="x", managedFields=[{"manager": "evil"}]
    )
    result = _apply(None, applied)
    assert "uid" not in result["metadata"]
    assert "resourceVersion" not in result["metadata"]
    assert "generation" not in result["metadata"]
    assert _fields(result, "kubectl") == {".spec.replicas"}
    assert list(_managers(result)) == ["kubectl"]


def test_apply_ignores_nulls() -> None:
    result = _apply(None, _deployment(replicas=1, paused=None))
    assert result["spec"] == {"replicas": 1}
    assert _fields(result, "kubectl") == {".spec.replicas"}


def test_apply_does_not_mutate_inputs() -> None:
    live = _apply(None, _deployment(replicas=1, template={"spec": {"containers": [{"name": "a"}]}}))
    applied = _deployment(replicas=2, template={"spec": {"containers": [{"name": "a", "image": "x"}]}})
    live_copy, applied_copy = copy.deepcopy(live), copy.deepcopy(applied)
    result = _apply(live, applied)
    result["spec"]["template"]["spec"]["containers"][0]["image"] = "changed"
    assert live == live_copy
    assert applied == applied_copy


# ----------------------------------------------------------------------------------------------------
# Server-side apply: updates, removals, co-ownership
# ----------------------------------------------------------------------------------------------------


def test_apply_same_configuration_is_a_noop() -> None:
    applied = _deployment(replicas=1)
    live = _apply(None, applied)
    again = _apply(live, applied, now="2025-01-01T00:00:00Z")
    assert again == live


def test_apply_changes_own_fields_without_conflicts() -> None:
    live = _apply(None, _deployment(replicas=1))
    result = _apply(live, _deployment(replicas=3), now="2025-01-01T00:00:00Z")
    assert result["spec"]["replicas"] == 3
    assert _managers(result)["kubectl"]["time"] == "2025-01-01T00:00:00Z"


def test_apply_keeps_unowned_live_fields() -> None:
    live = _update(None, _deployment(replicas=1, paused=False), manager="ctl")
    result = _apply(live, _deployment(minReadySeconds=5))
    assert result["spec"] == {"replicas": 1, "paused": False, "minReadySeconds": 5}


def test_apply_removes_dropped_fields() -> None:
    live = _apply(None, _deployment(replicas=1, paused=True, minReadySeconds=5))
    result = _apply(live, _deployment(replicas=1))
    assert result["spec"] == {"replicas": 1}
    assert _fields(result, "kubectl") == {".spec.replicas"}


def test_apply_removes_dropped_maps_emptied_by_that() -> None:
    applied = _configmap({"a": "1"}, labels={"x": "1"}, annotations={"y": "2"})
    live = _apply(None, applied, kind_key=CM, api_version="v1")
    result = _apply(live, _configmap(), kind_key=CM, api_version="v1")
    assert result["metadata"] == {"name": "cm", "namespace": "ns"}  # managedFields dropped: nothing owned
    assert "data" not in result


def test_apply_keeps_maps_with_others_fields_when_dropping() -> None:
    live = _apply(None, _configmap({"a": "1"}), "one", kind_key=CM, api_version="v1")
    live = _update(
        live,
        _configmap({"a": "1", "b": "2"}, managedFields=live["metadata"]["managedFields"]),
        "two",
        kind_key=CM,
        api_version="v1",
    )
    result = _apply(live, _configmap(), "one", kind_key=CM, api_version="v1")
    assert result["data"] == {"b": "2"}
    assert list(_managers(result)) == ["two"]


def test_apply_by_two_managers_with_the_same_value_co_owns_the_field() -> None:
    live = _apply(None, _deployment(replicas=2), "one")
    live = _apply(live, _deployment(replicas=2), "two")
    assert _fields(live, "one") == _fields(live, "two") == {".spec.replicas"}

    # Dropped by one co-owner: kept for the other one.
    live = _apply(live, _deployment(), "one")
    assert live["spec"] == {"replicas": 2}
    assert list(_managers(live)) == ["two"]

    # Dropped by the last owner: removed.
    live = _apply(live, _deployment(), "two")
    assert "spec" not in live


def test_apply_by_two_managers_with_different_values_conflicts() -> None:
    live = _apply(None, _deployment(replicas=2), "one")
    with pytest.raises(ApplyConflictError) as err:
        _apply(live, _deployment(replicas=3), "two")
    assert err.value.message == 'Apply failed with 1 conflict: conflict with "one": .spec.replicas'
    assert err.value.conflicts == [("one", ".spec.replicas")]
    assert err.value.causes == [
        {"reason": "FieldManagerConflict", "message": 'conflict with "one"', "field": ".spec.replicas"}
    ]


def test_apply_conflicts_with_an_updater() -> None:
    live = _apply(None, _deployment(replicas=1))
    live = _update(live, {**live, "spec": {"replicas": 5}}, "kubectl-client-side-apply")
    assert live["spec"]["replicas"] == 5
    with pytest.raises(ApplyConflictError) as err:
        _apply(live, _deployment(replicas=1))
    assert str(err.value) == (
        'Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using apps/v1: .spec.replicas'
    )


def test_apply_conflicts_message_for_many() -> None:
    live = _update(None, _deployment(replicas=1, paused=True, minReadySeconds=1), "alpha")
    live = _update(live, {**live, "spec": {**live["spec"], "revisionHistoryLimit": 1}}, "beta", subresource="scale")
    with pytest.raises(ApplyConflictError) as err:
        _apply(live, _deployment(replicas=2, paused=False, minReadySeconds=1, revisionHistoryLimit=2))
    assert err.value.message == (
        'Apply failed with 3 conflicts: conflicts with "alpha" using apps/v1:\n'
        "- .spec.paused\n"
        "- .spec.replicas\n"
        'conflicts with "beta" with subresource "scale" using apps/v1:\n'
        "- .spec.revisionHistoryLimit"
    )
    assert err.value.conflicts == [
        ("alpha", ".spec.paused"),
        ("alpha", ".spec.replicas"),
        ("beta", ".spec.revisionHistoryLimit"),
    ]


def test_apply_conflict_does_not_happen_for_equal_values() -> None:
    live = _update(None, _deployment(replicas=1), "ctl")
    result = _apply(live, _deployment(replicas=1))
    assert _fields(result, "ctl") == _fields(result, "kubectl") == {".spec.replicas"}


def test_apply_force_takes_over_ownership() -> None:
    live = _update(None, _deployment(replicas=1, paused=True), "ctl")
    result = _apply(live, _deployment(replicas=2), force=True)
    assert result["spec"] == {"replicas": 2, "paused": True}
    assert _fields(result, "kubectl") == {".spec.replicas"}
    assert _fields(result, "ctl") == {".spec.paused"}


def test_apply_force_drops_emptied_entries() -> None:
    live = _update(None, _deployment(replicas=1), "ctl")
    result = _apply(live, _deployment(replicas=2), force=True)
    assert list(_managers(result)) == ["kubectl"]


def test_apply_on_objects_without_managed_fields_conflicts_with_before_first_apply() -> None:
    live = _deployment(replicas=1)
    with pytest.raises(ApplyConflictError) as err:
        _apply(live, _deployment(replicas=2))
    assert err.value.message == (
        'Apply failed with 1 conflict: conflict with "before-first-apply" using apps/v1: .spec.replicas'
    )
    result = _apply(live, _deployment(replicas=1, paused=True))
    assert set(_managers(result)) == {"kubectl", "before-first-apply"}
    assert _fields(result, "before-first-apply") == {".spec.replicas"}


def test_apply_never_changes_identity_and_server_fields() -> None:
    live = _apply(None, _deployment(replicas=1))
    live["metadata"].update(uid="u1", resourceVersion="7", generation=2, creationTimestamp="t")
    applied = _deployment(replicas=2)
    applied["metadata"].update(name="other", namespace="other", uid="u2", resourceVersion="1", generation=9)
    applied["apiVersion"] = "apps/v1beta1"
    result = _apply(live, applied)
    assert result["metadata"]["name"] == "d"
    assert result["metadata"]["namespace"] == "ns"
    assert result["metadata"]["uid"] == "u1"
    assert result["metadata"]["resourceVersion"] == "7"
    assert result["metadata"]["generation"] == 2
    assert result["metadata"]["creationTimestamp"] == "t"
    assert result["apiVersion"] == "apps/v1"


def test_apply_entries_are_sorted_appliers_first() -> None:
    live = _update(None, _deployment(paused=True), "zeta", now="2024-01-01T00:00:00Z")
    live = _apply(live, _deployment(replicas=1), "alpha", now="2024-01-03T00:00:00Z")
    live = _update(live, {**live, "spec": {**live["spec"], "minReadySeconds": 1}}, "beta", now="2024-01-02T00:00:00Z")
    assert [(e["manager"], e["operation"]) for e in live["metadata"]["managedFields"]] == [
        ("alpha", "Apply"),
        ("zeta", "Update"),
        ("beta", "Update"),  # updaters by time
    ]


# ----------------------------------------------------------------------------------------------------
# Server-side apply: lists
# ----------------------------------------------------------------------------------------------------


def _containers(*containers: dict[str, Any]) -> dict[str, Any]:
    return _deployment(template={"spec": {"containers": list(containers)}})


def _live_containers(obj: dict[str, Any]) -> list[dict[str, Any]]:
    containers: list[dict[str, Any]] = obj["spec"]["template"]["spec"]["containers"]
    return containers


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
# Updates
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
