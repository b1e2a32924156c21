"""The end state compared by the checks: everything an operator can touch, not one namespace.

Objects in other namespaces (e.g. Secrets copied elsewhere) and cluster-scoped ones (Namespaces; the driven
resource itself, when it is cluster-scoped) are compared; the simulator's own objects are compared once
changed or deleted, and left out while they are as at the cluster's start (the same in every run).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import kopf
from kopf._cogs.clients import api
from pytest_kopf._oracles import final_bodies
from pytest_kopf.checks import check_operator
from pytest_kopf.driving import end_state, settle, without_bookkeeping
from pytest_kopf.errors import OperatorCheckFailed
from pytest_kopf.stateful import OperatorSpec, World
from pytest_kopf.strategies.steps import CrashAfterWrites

GALLERY = Path(__file__).parent / "gallery"
CRD = GALLERY / "crd.yaml"
RESOURCE = "gadgets.checks.example"
OTHER = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other"}}
CLUSTER_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "globals.checks.example"},
    "spec": {
        "group": "checks.example",
        "scope": "Cluster",
        "names": {"plural": "globals", "singular": "global", "kind": "Global"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
            }
        ],
    },
}
SETTINGS = kopf.OperatorSettings()


def idle_registry() -> kopf.OperatorRegistry:
    return kopf.OperatorRegistry()


def test_other_namespaces_and_cluster_scoped_objects_are_in_the_end_state() -> None:
    world = World(OperatorSpec(manifests=(CRD, OTHER), registry=idle_registry))
    try:
        cluster = world.cluster
        before = end_state(cluster)
        kinds = {(obj["kind"], obj["metadata"]["name"]) for obj in before}
        assert ("Namespace", "other") in kinds  # from the manifests
        assert ("CustomResourceDefinition", RESOURCE) in kinds
        assert ("Node", "node-1") not in kinds  # the simulator's own, untouched
        assert ("Namespace", "default") not in kinds

        world.run(
            cluster.create({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "copy", "namespace": "other"}})
        )
        world.run(cluster.patch("nodes", "node-1", {"metadata": {"labels": {"touched": "yes"}}}))
        world.run(cluster.delete("storageclasses", "standard"))
        after = {
            (obj["kind"], obj["metadata"].get("namespace"), obj["metadata"]["name"]): obj for obj in end_state(cluster)
        }
        assert ("Secret", "other", "copy") in after
        assert after["Node", None, "node-1"]["metadata"]["labels"]["touched"] == "yes"
        assert after["StorageClass", None, "standard"] == {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": "standard"},
            "deleted": True,
        }
        world.run(cluster.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "here"}}))
        only_default = end_state(cluster, namespace="default")
        assert [(obj["kind"], obj["metadata"]["name"]) for obj in only_default] == [("ConfigMap", "here")]
    finally:
        world.close()


def copying_registry() -> kopf.OperatorRegistry:
    """BUG (crash-restart): a copy with a generated name in another namespace: a re-run after a crash makes two."""
    registry = kopf.OperatorRegistry()

    @kopf.on.create("gadgets", registry=registry)
    async def copy_fn(name: str, **_: Any) -> str:
        copy = {"apiVersion": "v1", "kind": "Secret", "metadata": {"generateName": f"{name}-"}, "data": {}}
        await api.post("/api/v1/namespaces/other/secrets", payload=copy, settings=SETTINGS)
        return "copied"

    return registry


def counting_registry() -> kopf.OperatorRegistry:
    """BUG (crash-restart): the cluster-scoped object's own label counts the handler's runs (not idempotent)."""
    registry = kopf.OperatorRegistry()

    @kopf.on.create("globals", registry=registry)
    async def count_fn(name: str, labels: Any, **_: Any) -> str:
        runs = int(labels.get("runs", "0")) + 1
        await api.patch(
            f"/apis/checks.example/v1/globals/{name}",
            payload={"metadata": {"labels": {"runs": str(runs)}}},
            settings=SETTINGS,
        )
        return "counted"

    return registry


@pytest.mark.parametrize(
    ("registry", "manifests", "resource", "kind"),
    [
        pytest.param(copying_registry, [CRD, OTHER], RESOURCE, "Secret", id="another-namespace"),
        pytest.param(counting_registry, [CLUSTER_CRD], "globals.checks.example", "Global", id="cluster-scoped"),
    ],
)
def test_a_difference_outside_the_namespace_fails_the_comparison(
    registry: Any, manifests: list[Any], resource: str, kind: str
) -> None:
    with pytest.raises(OperatorCheckFailed) as info:
        check_operator(
            registry=registry,
            manifests=manifests,
            resources=[resource],
            checks=["crash-restart"],
            initial_steps=[CrashAfterWrites(1)],  # the handler's write (then a re-run after the crash)
            max_examples=20,
            max_steps=4,
            names=["obj-0"],
        )
    assert info.value.check == "crash-restart"
    assert "the end state differs" in str(info.value)
    assert f"kind: {kind}" in str(info.value)


async def test_names_made_of_generated_ones_are_masked_as_those(kopf_cluster: Any) -> None:
    # A Job named after a pod of a Deployment (its random suffix), as smoke-test operators make them.
    made = await kopf_cluster.create(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "web-7d4f-"}, "data": {}}
    )
    generated = made["metadata"]["name"]
    await kopf_cluster.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": f"probe-{generated}", "labels": {"probed": generated}},
            "data": {"args": f"--pod={generated}", "other": "web-7d4f-"},
        }
    )
    maps = {obj["metadata"]["name"]: obj for obj in end_state(kopf_cluster) if obj["kind"] == "ConfigMap"}
    assert set(maps) == {"web-7d4f-*", "probe-web-7d4f-*"}
    assert maps["probe-web-7d4f-*"]["metadata"]["labels"] == {"probed": "web-7d4f-*"}
    assert maps["probe-web-7d4f-*"]["data"] == {"args": "--pod=web-7d4f-*", "other": "web-7d4f-"}


def test_what_the_controllers_write_of_a_run_is_masked_in_their_references() -> None:
    from pytest_kopf.driving import mask_object

    uid = "0361524c-2cc0-4859-aa65-24ab713b7e05"
    claim = {
        "kind": "PersistentVolumeClaim",
        "name": "data-ts-0",
        "namespace": "ns",
        "uid": uid,
        "resourceVersion": "7",
    }
    volume = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": f"pvc-{uid}"},
        "spec": {"claimRef": claim},
    }
    masked = mask_object(volume)
    assert masked["metadata"]["name"] == "pvc-*"  # named after its claim's uid
    assert masked["spec"]["claimRef"] == {"kind": "PersistentVolumeClaim", "name": "data-ts-0", "namespace": "ns"}
    pod = {"kind": "Pod", "name": "ts-0", "uid": uid, "resourceVersion": "9"}
    endpoints = {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "ts"}}
    endpoints["subsets"] = [{"addresses": [{"ip": "10.0.0.1", "targetRef": pod}], "notReadyAddresses": []}]
    assert mask_object(endpoints)["subsets"][0]["addresses"][0]["targetRef"] == {"kind": "Pod", "name": "ts-0"}


def test_where_the_scheduler_puts_a_controllers_pods_is_masked() -> None:
    from pytest_kopf.driving import mask_object

    owner = [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "ts", "controller": True}]
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "ts-0", "ownerReferences": owner},
        "spec": {"nodeName": "node-2"},
        "status": {"hostIP": "172.18.0.3", "hostIPs": [{"ip": "172.18.0.3"}], "phase": "Running"},
    }
    assert mask_object(pod)["spec"] == {"nodeName": "<scheduled>"}
    assert mask_object(pod)["status"] == {"phase": "Running"}
    pinned = {**pod, "metadata": {"name": "mine"}}  # made by the operator, on the node it chose: kept
    assert mask_object(pinned)["spec"] == {"nodeName": "node-2"}
    endpoint = {"addresses": ["10.0.0.1"], "nodeName": "node-2", "targetRef": {"kind": "Pod", "name": "ts-0"}}
    endpoints = {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "metadata": {"name": "ts-x"}}
    assert mask_object({**endpoints, "endpoints": [endpoint]})["endpoints"] == [
        {"addresses": ["10.0.0.1"], "targetRef": {"kind": "Pod", "name": "ts-0"}}
    ]


def test_the_endpoints_come_in_the_order_of_their_pods() -> None:
    from pytest_kopf.driving import mask_object

    def address(ip: str, pod: str) -> dict[str, Any]:
        return {"ip": ip, "targetRef": {"kind": "Pod", "name": pod, "namespace": "ns"}}

    endpoints = {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "ts"}}
    endpoints["subsets"] = [{"addresses": [address("10.0.0.1", "ts-1"), address("10.0.0.2", "ts-0")]}]
    addresses = mask_object(endpoints)["subsets"][0]["addresses"]
    assert [entry["targetRef"]["name"] for entry in addresses] == ["ts-0", "ts-1"]  # by pod, not by (random) IP


async def test_a_pods_ip_where_the_operator_copies_it_is_masked(kopf_cluster: Any) -> None:
    from tests.sim.controllers.workloads import pod, ready

    await kopf_cluster.create(pod("web"))
    running = await kopf_cluster.wait_for("pods", "web", condition=ready)
    ip = running["status"]["podIP"]
    args = {"probe": f"http://{ip}/healthz", "other": f"{ip}0"}  # the IP, and another that starts as it does
    await kopf_cluster.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "probe"}, "data": args})
    maps = {obj["metadata"]["name"]: obj for obj in end_state(kopf_cluster) if obj["kind"] == "ConfigMap"}
    assert maps["probe"]["data"] == {"probe": "http://<pod IP>/healthz", "other": f"{ip}0"}


async def test_a_statefulsets_revisions_are_its_history_not_its_state(kopf_cluster: Any) -> None:
    from tests.sim.controllers.workloads import pod_template

    labels = {"app": "db"}
    spec = {"serviceName": "db", "replicas": 1, "selector": {"matchLabels": labels}, "template": pod_template(labels)}
    body = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"}, "spec": spec}
    await kopf_cluster.create(body)
    await kopf_cluster.sim.advance(1)
    assert await kopf_cluster.list("controllerrevisions")  # made by the cluster
    assert "ControllerRevision" not in {obj["kind"] for obj in end_state(kopf_cluster)}


async def test_the_claims_a_deleted_statefulset_has_left_are_the_clusters_not_the_state(kopf_cluster: Any) -> None:
    from tests.sim.controllers.workloads import pod_template

    labels = {"app": "db"}
    claim = {"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"]}}
    spec = {"serviceName": "db", "replicas": 1, "selector": {"matchLabels": labels}, "template": pod_template(labels)}
    body = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"}}
    await kopf_cluster.create({**body, "spec": {**spec, "volumeClaimTemplates": [claim]}})
    made_by_hand = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data-gone-0"}}
    await kopf_cluster.create({**made_by_hand, "spec": claim["spec"]})  # named as a StatefulSet's, made by a client
    await kopf_cluster.sim.advance(10)

    def claims() -> list[str]:
        return [obj["metadata"]["name"] for obj in end_state(kopf_cluster) if obj["kind"] == "PersistentVolumeClaim"]

    assert claims() == ["data-db-0", "data-gone-0"]  # while the StatefulSet is there: its claim is in (as it was)
    await kopf_cluster.delete("statefulsets", "db")
    await kopf_cluster.sim.advance(10)
    assert {c["metadata"]["name"] for c in await kopf_cluster.list("persistentvolumeclaims")} == {
        "data-db-0",  # kept: Kubernetes' default retention policy
        "data-gone-0",
    }
    assert claims() == ["data-gone-0"]


GADGET = {
    "apiVersion": "checks.example/v1",
    "kind": "Gadget",
    "metadata": {"name": "obj-0", "namespace": "default"},
    "spec": {},
}


def own_storages_registry() -> kopf.OperatorRegistry:
    """An operator that keeps its state under its own prefix and keys, and makes a child per gadget."""
    registry = kopf.OperatorRegistry()

    @kopf.on.startup(registry=registry)
    def storages(settings: kopf.OperatorSettings, **_: Any) -> None:
        settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix="gadgets.example")
        settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(prefix="gadgets.example", key="spec")

    @kopf.on.create("gadgets", registry=registry)
    async def create_fn(name: str, namespace: str, body: kopf.Body, **_: Any) -> None:
        child = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"{name}-child"}, "data": {}}
        kopf.adopt(child, owner=body)
        await api.post(f"/api/v1/namespaces/{namespace}/configmaps", payload=child, settings=kopf.OperatorSettings())

    return registry


async def test_the_operators_own_bookkeeping_is_no_users_field_nor_its_outcome(
    kopf_cluster: Any, kopf_operator: Any
) -> None:
    """What an operator's storages keep under their own prefix and keys is masked as kopf's own is; and it is no field
    of the user's for an object created directly in its final state (``transition``): copied there, the fresh operator
    took the object as handled already and made nothing (a false alarm on a correct operator)."""
    await kopf_cluster.apply(CRD)
    await kopf_operator.start(registry=own_storages_registry())
    await kopf_cluster.create({**GADGET, "metadata": {**GADGET["metadata"], "annotations": {"team": "a"}}})
    await settle(kopf_cluster, kopf_operator)
    gadget = await kopf_cluster.get(RESOURCE, "obj-0", "default")
    assert set(gadget["metadata"]["annotations"]) == {"team", "gadgets.example/kopf-managed", "gadgets.example/spec"}
    [masked] = [obj for obj in end_state(kopf_cluster) if obj["kind"] == "Gadget"]
    assert masked["metadata"]["annotations"] == {"team": "a"}
    [final] = final_bodies([without_bookkeeping(gadget, kopf_cluster.sim.operator_settings)])
    assert final["metadata"]["annotations"] == {"team": "a"}
