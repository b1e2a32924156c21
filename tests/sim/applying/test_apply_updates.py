"""Server-side apply updating objects: removals, conflicts, co-ownership."""

import pytest

from kopf_sim.writes.applying import (
    ApplyConflictError,
)

from .helpers import CM, _apply, _configmap, _deployment, _fields, _managers, _update

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
