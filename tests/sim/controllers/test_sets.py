"""StatefulSets (ordered pods, their claims, ordered updates) and DaemonSets (a pod per fitting node)."""

from __future__ import annotations

import asyncio
from typing import Any

from kopf_sim.controllers import ControllerManager, Fate
from pytest_kopf.cluster import KopfCluster

from .workloads import pod_template, ready

JsonDict = dict[str, Any]


def now() -> float:
    return asyncio.get_running_loop().time()


def statefulset(name: str, replicas: int = 3, **spec: Any) -> JsonDict:
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "serviceName": name,
            "selector": {"matchLabels": {"app": name}},
            "template": pod_template({"app": name}),
            "volumeClaimTemplates": [
                {
                    "metadata": {"name": "data"},
                    "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
                }
            ],
            **spec,
        },
    }


def daemonset(name: str, **spec: Any) -> JsonDict:
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name},
        "spec": {"selector": {"matchLabels": {"app": name}}, "template": pod_template({"app": name}), **spec},
    }


def rolled_out(obj: JsonDict | None) -> bool:
    status = (obj or {}).get("status") or {}
    replicas = (obj or {})["spec"]["replicas"]
    return bool(
        status.get("readyReplicas") == replicas
        and status.get("updatedReplicas") == replicas
        and status.get("currentRevision") == status.get("updateRevision")
        and status.get("replicas") == replicas
    )


async def created_at(kopf_cluster: KopfCluster) -> dict[str, str]:
    return {p["metadata"]["name"]: p["metadata"]["creationTimestamp"] for p in await kopf_cluster.list("pods")}


async def test_ordered_pods_with_their_own_claims(kopf_cluster: KopfCluster) -> None:
    await kopf_cluster.create(statefulset("db"))
    obj = await kopf_cluster.wait_for("statefulsets", "db", condition=rolled_out)
    assert now() == 6.0  # one after another: each Ready (2 s) before the next starts
    assert await created_at(kopf_cluster) == {
        "db-0": "2026-01-01T00:00:00Z",
        "db-1": "2026-01-01T00:00:02Z",
        "db-2": "2026-01-01T00:00:04Z",
    }
    assert obj["status"]["currentRevision"].startswith("db-")
    pod = await kopf_cluster.get("pods", "db-1")
    assert pod is not None
    assert pod["spec"]["hostname"] == "db-1"
    assert pod["spec"]["subdomain"] == "db"
    assert pod["spec"]["volumes"] == [{"name": "data", "persistentVolumeClaim": {"claimName": "data-db-1"}}]
    assert pod["metadata"]["labels"]["statefulset.kubernetes.io/pod-name"] == "db-1"
    assert pod["metadata"]["labels"]["apps.kubernetes.io/pod-index"] == "1"
    assert pod["metadata"]["labels"]["controller-revision-hash"] == obj["status"]["updateRevision"]
    claims = {c["metadata"]["name"]: c for c in await kopf_cluster.list("persistentvolumeclaims")}
    assert sorted(claims) == ["data-db-0", "data-db-1", "data-db-2"]
    assert all(c["status"]["phase"] == "Bound" for c in claims.values())
    assert claims["data-db-0"]["metadata"]["labels"] == {"app": "db"}
    [revision] = await kopf_cluster.list("controllerrevisions")
    assert revision["metadata"]["name"] == obj["status"]["updateRevision"]
    assert revision["revision"] == 1


async def test_parallel_pods_start_together(kopf_cluster: KopfCluster) -> None:
    await kopf_cluster.create(statefulset("cache", podManagementPolicy="Parallel"))
    await kopf_cluster.wait_for("statefulsets", "cache", condition=rolled_out)
    assert now() == 2.0
    assert set((await created_at(kopf_cluster)).values()) == {"2026-01-01T00:00:00Z"}


async def test_scaling_down_goes_from_the_highest_ordinal_and_keeps_the_claims(kopf_cluster: KopfCluster) -> None:
    await kopf_cluster.create(statefulset("db", replicas=4))
    await kopf_cluster.wait_for("statefulsets", "db", condition=rolled_out)
    gone: list[str] = []
    cluster = kopf_cluster.sim.store
    cluster.observers.append(
        lambda c: gone.append(c.obj["metadata"]["name"]) if c.type == "DELETED" and c.key == ("", "pods") else None
    )
    await kopf_cluster.patch("statefulsets", "db", {"spec": {"replicas": 1}})
    await kopf_cluster.wait_for("statefulsets", "db", condition=lambda s: s["status"].get("replicas") == 1)
    await asyncio.sleep(2)
    assert gone == ["db-3", "db-2", "db-1"]
    assert len(await kopf_cluster.list("persistentvolumeclaims")) == 4  # retained (the default policy)


async def claim_names(kopf_cluster: KopfCluster) -> list[str]:
    return sorted(c["metadata"]["name"] for c in await kopf_cluster.list("persistentvolumeclaims"))


async def test_the_claims_retention_policy_deletes_the_claims_of_a_scale_down_and_of_a_deletion(
    kopf_cluster: KopfCluster,
) -> None:
    policy = {"whenScaled": "Delete", "whenDeleted": "Retain"}
    await kopf_cluster.create(statefulset("db", replicas=3, persistentVolumeClaimRetentionPolicy=policy))
    await kopf_cluster.wait_for("statefulsets", "db", condition=rolled_out)
    assert "ownerReferences" not in (await kopf_cluster.get("persistentvolumeclaims", "data-db-0") or {})["metadata"]
    await kopf_cluster.patch("statefulsets", "db", {"spec": {"replicas": 1}})
    await kopf_cluster.wait_for("statefulsets", "db", condition=lambda s: s["status"].get("replicas") == 1)
    await asyncio.sleep(10)
    assert await claim_names(kopf_cluster) == ["data-db-0"]  # the scaled-down pods' claims went with them
    policy = {"whenScaled": "Retain", "whenDeleted": "Delete"}  # applies to the claims made before, too
    await kopf_cluster.patch("statefulsets", "db", {"spec": {"persistentVolumeClaimRetentionPolicy": policy}})
    await asyncio.sleep(1)
    [ref] = (await kopf_cluster.get("persistentvolumeclaims", "data-db-0") or {})["metadata"]["ownerReferences"]
    assert (ref["kind"], ref["name"], ref["controller"]) == ("StatefulSet", "db", True)
    await kopf_cluster.delete("statefulsets", "db")
    await asyncio.sleep(10)
    assert await claim_names(kopf_cluster) == []


async def test_a_rolling_update_goes_backwards_and_respects_the_partition(kopf_cluster: KopfCluster) -> None:
    await kopf_cluster.create(
        statefulset("db", updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"partition": 1}})
    )
    first = await kopf_cluster.wait_for("statefulsets", "db", condition=rolled_out)
    await kopf_cluster.patch("statefulsets", "db", {"spec": {"template": {"metadata": {"labels": {"v": "2"}}}}})
    obj = await kopf_cluster.wait_for(
        "statefulsets",
        "db",
        timeout=120,
        condition=lambda s: s["status"].get("updatedReplicas") == 2 and s["status"].get("readyReplicas") == 3,
    )
    await asyncio.sleep(30)
    labels = {p["metadata"]["name"]: p["metadata"]["labels"] for p in await kopf_cluster.list("pods")}
    assert labels["db-0"]["controller-revision-hash"] == first["status"]["updateRevision"]  # below the partition
    assert labels["db-1"]["controller-revision-hash"] == obj["status"]["updateRevision"]
    assert labels["db-2"]["v"] == "2"
    created = await created_at(kopf_cluster)
    assert created["db-2"] < created["db-1"]  # the highest ordinal first
    assert obj["status"]["currentRevision"] == first["status"]["updateRevision"]
    assert len(await kopf_cluster.list("controllerrevisions")) == 2


async def test_ordered_creation_waits_for_a_ready_predecessor(
    kopf_cluster: KopfCluster, controllers: ControllerManager
) -> None:
    controllers.fate("statefulset.kubernetes.io/pod-name=db-1", Fate.never_ready())
    await kopf_cluster.create(statefulset("db"))
    await asyncio.sleep(120)
    assert sorted(await created_at(kopf_cluster)) == ["db-0", "db-1"]


async def test_a_pod_on_every_node(kopf_cluster: KopfCluster) -> None:
    await kopf_cluster.create(daemonset("agent"))
    obj = await kopf_cluster.wait_for("daemonsets", "agent", condition=lambda d: d["status"].get("numberReady") == 3)
    assert {k: v for k, v in obj["status"].items()} == {
        "currentNumberScheduled": 3,
        "numberMisscheduled": 0,
        "desiredNumberScheduled": 3,
        "numberReady": 3,
        "observedGeneration": 1,
        "updatedNumberScheduled": 3,
        "numberAvailable": 3,
    }
    pods = await kopf_cluster.list("pods")
    assert sorted(p["spec"]["nodeName"] for p in pods) == ["node-1", "node-2", "node-3"]
    for pod in pods:
        terms = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        assert terms["nodeSelectorTerms"][0]["matchFields"][0]["values"] == [pod["spec"]["nodeName"]]
        assert any(t["key"] == "node.kubernetes.io/unschedulable" for t in pod["spec"]["tolerations"])

    await kopf_cluster.create(
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-4"}, "spec": {"podCIDR": "10.244.4.0/24"}}
    )
    await kopf_cluster.wait_for("daemonsets", "agent", condition=lambda d: d["status"].get("numberReady") == 4)
    await kopf_cluster.delete("nodes", "node-1")
    obj = await kopf_cluster.wait_for(
        "daemonsets",
        "agent",
        condition=lambda d: d["status"]["desiredNumberScheduled"] == 3 and d["status"]["currentNumberScheduled"] == 3,
    )
    await asyncio.sleep(1)  # the orphaned pod is collected
    assert sorted(p["spec"]["nodeName"] for p in await kopf_cluster.list("pods")) == ["node-2", "node-3", "node-4"]


async def test_node_selectors_and_updates(kopf_cluster: KopfCluster) -> None:
    await kopf_cluster.patch("nodes", "node-2", {"metadata": {"labels": {"role": "edge"}}})
    body = daemonset("edge")
    body["spec"]["template"]["spec"]["nodeSelector"] = {"role": "edge"}
    await kopf_cluster.create(body)
    await kopf_cluster.wait_for("daemonsets", "edge", condition=lambda d: d["status"].get("numberReady") == 1)
    await kopf_cluster.patch("nodes", "node-3", {"metadata": {"labels": {"role": "edge"}}})
    await kopf_cluster.wait_for("daemonsets", "edge", condition=lambda d: d["status"].get("numberReady") == 2)
    await kopf_cluster.patch("daemonsets", "edge", {"spec": {"template": {"metadata": {"labels": {"v": "2"}}}}})
    obj = await kopf_cluster.wait_for(
        "daemonsets",
        "edge",
        timeout=120,
        condition=lambda d: (
            d["status"]["observedGeneration"] == d["metadata"]["generation"] == 2
            and d["status"].get("updatedNumberScheduled") == 2
            and d["status"].get("numberAvailable") == 2
        ),
    )
    assert obj["status"]["desiredNumberScheduled"] == 2
    pods = [p for p in await kopf_cluster.list("pods") if not p["metadata"].get("deletionTimestamp")]
    assert all(p["metadata"]["labels"].get("v") == "2" and ready(p) for p in pods)
    assert len(await kopf_cluster.list("controllerrevisions")) == 2
