"""Deletion semantics: finalizers, garbage collection by owner references, namespace and CRD termination."""

from __future__ import annotations

from typing import Any

import pytest

from kopf_sim.kube import errors
from kopf_sim.kube.resources import ResourceType
from kopf_sim.store.cluster import Cluster
from tests.helpers import widget

MERGE = "application/merge-patch+json"


def rt(cluster: Cluster, plural: str) -> ResourceType:
    if plural == "widgets":
        return cluster.resource("acme.example", "v1", "widgets")
    return cluster.resource("", "v1", plural)


def owned_configmap(name: str, owner: dict[str, Any], **extra: Any) -> dict[str, Any]:
    ref = {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        **extra,
    }
    return {"metadata": {"name": name, "ownerReferences": [ref]}}


def events_of(cluster: Cluster) -> list[tuple[str, str]]:
    return [(c.type, c.obj["metadata"]["name"]) for c in cluster.history]


def test_delete_without_finalizers_is_immediate(crd_cluster: Cluster) -> None:
    crd_cluster.create(rt(crd_cluster, "widgets"), "default", widget("w1"))
    status = crd_cluster.delete(rt(crd_cluster, "widgets"), "default", "w1")
    assert status["status"] == "Success" and status["details"]["name"] == "w1"
    assert crd_cluster.peek(("acme.example", "widgets"), "default", "w1") is None
    assert events_of(crd_cluster)[-1] == ("DELETED", "w1")


def test_finalizers_hold_the_object(crd_cluster: Cluster) -> None:
    rtype = rt(crd_cluster, "widgets")
    crd_cluster.create(rtype, "default", {**widget("w1"), "metadata": {"name": "w1", "finalizers": ["x.io/hold"]}})
    held = crd_cluster.delete(rtype, "default", "w1")
    assert held["metadata"]["deletionTimestamp"]
    assert held["metadata"]["generation"] == 2
    with pytest.raises(errors.ApiError) as err:
        crd_cluster.patch(rtype, "default", "w1", {"metadata": {"finalizers": ["x.io/hold", "y.io/new"]}}, MERGE)
    assert err.value.code == 422
    assert (
        "Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers "
        '[]string{"y.io/new"}'
    ) in err.value.message
    crd_cluster.patch(rtype, "default", "w1", {"metadata": {"finalizers": None}}, MERGE)
    assert crd_cluster.peek(("acme.example", "widgets"), "default", "w1") is None
    kinds = [kind for kind, name in events_of(crd_cluster) if name == "w1"]
    assert kinds == ["ADDED", "MODIFIED", "DELETED"]


def test_background_propagation_deletes_dependents(crd_cluster: Cluster) -> None:
    owner = crd_cluster.create(rt(crd_cluster, "widgets"), "default", widget("w1"))
    crd_cluster.create(rt(crd_cluster, "configmaps"), "default", owned_configmap("child", owner))
    crd_cluster.delete(rt(crd_cluster, "widgets"), "default", "w1")
    assert crd_cluster.peek(("", "configmaps"), "default", "child") is None
    assert events_of(crd_cluster)[-2:] == [("DELETED", "w1"), ("DELETED", "child")]


def test_dependent_with_another_live_owner_survives(crd_cluster: Cluster) -> None:
    one = crd_cluster.create(rt(crd_cluster, "widgets"), "default", widget("one"))
    two = crd_cluster.create(rt(crd_cluster, "widgets"), "default", widget("two"))
    body = owned_configmap("child", one)
    body["metadata"]["ownerReferences"] += owned_configmap("x", two)["metadata"]["ownerReferences"]
    crd_cluster.create(rt(crd_cluster, "configmaps"), "default", body)
    crd_cluster.delete(rt(crd_cluster, "widgets"), "default", "one")
    child = crd_cluster.peek(("", "configmaps"), "default", "child")
    assert child is not None
    assert [r["name"] for r in child["metadata"]["ownerReferences"]] == ["two"]


def test_orphan_propagation_keeps_dependents(crd_cluster: Cluster) -> None:
    owner = crd_cluster.create(rt(crd_cluster, "widgets"), "default", widget("w1"))
    crd_cluster.create(rt(crd_cluster, "configmaps"), "default", owned_configmap("child", owner))
    crd_cluster.delete(rt(crd_cluster, "widgets"), "default", "w1", {"propagationPolicy": "Orphan"})
    child = crd_cluster.peek(("", "configmaps"), "default", "child")
    assert child is not None and "ownerReferences" not in child["metadata"]
    assert crd_cluster.peek(("acme.example", "widgets"), "default", "w1") is None


def test_foreground_propagation_waits_for_dependents(crd_cluster: Cluster) -> None:
    owner = crd_cluster.create(rt(crd_cluster, "widgets"), "default", widget("w1"))
    body = owned_configmap("child", owner, blockOwnerDeletion=True)
    body["metadata"]["finalizers"] = ["x.io/hold"]
    crd_cluster.create(rt(crd_cluster, "configmaps"), "default", body)
    crd_cluster.delete(rt(crd_cluster, "widgets"), "default", "w1", {"propagationPolicy": "Foreground"})
    waiting = crd_cluster.peek(("acme.example", "widgets"), "default", "w1")
    assert waiting is not None and waiting["metadata"]["finalizers"] == ["foregroundDeletion"]
    child = crd_cluster.peek(("", "configmaps"), "default", "child")
    assert child is not None and child["metadata"]["deletionTimestamp"]
    crd_cluster.patch(rt(crd_cluster, "configmaps"), "default", "child", {"metadata": {"finalizers": None}}, MERGE)
    assert crd_cluster.peek(("", "configmaps"), "default", "child") is None
    assert crd_cluster.peek(("acme.example", "widgets"), "default", "w1") is None


def test_namespace_deletion_removes_contents(crd_cluster: Cluster) -> None:
    namespaces = rt(crd_cluster, "namespaces")
    crd_cluster.create(namespaces, None, {"metadata": {"name": "tmp"}})
    crd_cluster.create(rt(crd_cluster, "configmaps"), "tmp", {"metadata": {"name": "c"}})
    crd_cluster.create(
        rt(crd_cluster, "widgets"),
        "tmp",
        {**widget("w", namespace="tmp"), "metadata": {"name": "w", "finalizers": ["x.io/hold"]}},
    )
    crd_cluster.delete(namespaces, None, "tmp")
    ns = crd_cluster.peek(("", "namespaces"), None, "tmp")
    assert ns is not None and ns["status"]["phase"] == "Terminating"
    assert crd_cluster.peek(("", "configmaps"), "tmp", "c") is None
    with pytest.raises(errors.ApiError) as err:
        crd_cluster.create(rt(crd_cluster, "configmaps"), "tmp", {"metadata": {"name": "new"}})
    assert err.value.code == 403
    assert err.value.message == (
        'configmaps "new" is forbidden: unable to create new content in namespace tmp because it is being terminated'
    )
    crd_cluster.patch(rt(crd_cluster, "widgets"), "tmp", "w", {"metadata": {"finalizers": None}}, MERGE)
    assert crd_cluster.peek(("", "namespaces"), None, "tmp") is None


def test_default_namespace_cannot_be_deleted(cluster: Cluster) -> None:
    with pytest.raises(errors.ApiError) as err:
        cluster.delete(rt(cluster, "namespaces"), None, "default")
    assert err.value.code == 403
    assert err.value.message == 'namespaces "default" is forbidden: this namespace may not be deleted'


def test_crd_deletion_removes_instances_and_stops_serving(crd_cluster: Cluster) -> None:
    crds = crd_cluster.resource("apiextensions.k8s.io", "v1", "customresourcedefinitions")
    crd_cluster.create(rt(crd_cluster, "widgets"), "default", widget("w1"))
    crd_cluster.delete(crds, None, "widgets.acme.example")
    assert crd_cluster.peek(crds.storage_key, None, "widgets.acme.example") is None
    assert crd_cluster.count(("acme.example", "widgets")) == 0
    assert crd_cluster.catalogue.lookup("acme.example", "v1", "widgets") is None


def test_delete_preconditions(crd_cluster: Cluster) -> None:
    crd_cluster.create(rt(crd_cluster, "widgets"), "default", widget("w1"))
    with pytest.raises(errors.ApiError) as err:
        crd_cluster.delete(rt(crd_cluster, "widgets"), "default", "w1", {"preconditions": {"uid": "other"}})
    assert err.value.code == 409 and "Precondition failed: UID in precondition: other" in err.value.message


def test_delete_collection_by_label(crd_cluster: Cluster) -> None:
    from kopf_sim.kube.selectors import LabelSelector

    rtype = rt(crd_cluster, "configmaps")
    for name, app in [("a", "x"), ("b", "y"), ("c", "x")]:
        crd_cluster.create(rtype, "default", {"metadata": {"name": name, "labels": {"app": app}}})
    result = crd_cluster.delete_collection(rtype, "default", labels=LabelSelector.parse("app=x"))
    assert [o["metadata"]["name"] for o in result["items"]] == ["a", "c"]
    assert [o["metadata"]["name"] for o in crd_cluster.list(rtype, "default")["items"]] == ["b"]
