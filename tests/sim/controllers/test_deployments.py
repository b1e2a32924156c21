"""Deployments and ReplicaSets: rollouts, surge and unavailability limits, revisions, status and conditions."""

from __future__ import annotations

import asyncio
import re
from typing import Any

from kopf_sim.controllers import ControllerManager, Fate
from kopf_sim.store.watching import Change
from pytest_kopf.cluster import KopfCluster

from .workloads import condition, deployment, ready

JsonDict = dict[str, Any]
HASH = re.compile(r"^[bcdfghjklmnpqrstvwxz2456789]{1,10}$")


def now() -> float:
    return asyncio.get_running_loop().time()


def available(obj: JsonDict | None) -> bool:
    return condition(obj, "Available") == "True"


def complete(obj: JsonDict | None) -> bool:
    """What ``kubectl rollout status`` waits for."""
    spec, status = (obj or {}).get("spec") or {}, (obj or {}).get("status") or {}
    progressing = next((c for c in status.get("conditions") or [] if c["type"] == "Progressing"), {})
    return bool(
        status.get("observedGeneration", 0) >= (obj or {})["metadata"]["generation"]
        and status.get("updatedReplicas", 0) == spec["replicas"]
        and status.get("replicas", 0) == spec["replicas"]
        and status.get("availableReplicas", 0) == spec["replicas"]
        and progressing.get("reason") == "NewReplicaSetAvailable"
    )


async def replica_sets(kopf_cluster: KopfCluster) -> dict[str, JsonDict]:
    return {rs["metadata"]["name"]: rs for rs in await kopf_cluster.list("replicasets")}


async def test_a_rollout_names_things_as_a_real_cluster(kopf_cluster: KopfCluster) -> None:
    await kopf_cluster.create(deployment("web", replicas=3))
    obj = await kopf_cluster.wait_for("deployments", "web", condition=complete)
    assert now() == 2.0
    assert obj["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"
    assert {k: v for k, v in obj["status"].items() if k != "conditions"} == {
        "observedGeneration": 1,
        "replicas": 3,
        "updatedReplicas": 3,
        "readyReplicas": 3,
        "availableReplicas": 3,
    }
    assert [(c["type"], c["status"], c["reason"]) for c in obj["status"]["conditions"]] == [
        ("Available", "True", "MinimumReplicasAvailable"),
        ("Progressing", "True", "NewReplicaSetAvailable"),
    ]
    [rs] = (await replica_sets(kopf_cluster)).values()
    template_hash = rs["metadata"]["labels"]["pod-template-hash"]
    assert HASH.match(template_hash)
    assert rs["metadata"]["name"] == f"web-{template_hash}"
    assert rs["spec"]["selector"]["matchLabels"] == {"app": "web", "pod-template-hash": template_hash}
    assert rs["metadata"]["annotations"] == {
        "deployment.kubernetes.io/desired-replicas": "3",
        "deployment.kubernetes.io/max-replicas": "4",
        "deployment.kubernetes.io/revision": "1",
    }
    assert rs["metadata"]["ownerReferences"][0]["kind"] == "Deployment"
    assert rs["metadata"]["ownerReferences"][0]["controller"] is True
    assert rs["status"] == {
        "replicas": 3,
        "fullyLabeledReplicas": 3,
        "readyReplicas": 3,
        "availableReplicas": 3,
        "observedGeneration": 1,
    }
    pods = await kopf_cluster.list("pods")
    assert len(pods) == 3
    for pod in pods:
        assert re.match(rf"^web-{template_hash}-[bcdfghjklmnpqrstvwxz2456789]{{5}}$", pod["metadata"]["name"])
        assert pod["metadata"]["ownerReferences"][0]["name"] == rs["metadata"]["name"]
        assert ready(pod)
    managers = {m["manager"] for m in rs["metadata"]["managedFields"]}
    assert managers == {"kube-controller-manager"}


async def test_a_rolling_update_stays_within_surge_and_unavailability(kopf_cluster: KopfCluster) -> None:
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 2, "maxUnavailable": 1}}
    await kopf_cluster.create(deployment("web", replicas=10, strategy=strategy))
    await kopf_cluster.wait_for("deployments", "web", condition=complete)
    cluster = kopf_cluster.sim.store
    seen: list[tuple[int, int]] = []

    def observe(change: Change) -> None:
        if change.key == ("", "pods"):
            pods = [p for p in cluster.objects(("", "pods")) if not p["metadata"].get("deletionTimestamp")]
            seen.append((len(pods), sum(1 for p in pods if ready(p))))

    cluster.observers.append(observe)
    await kopf_cluster.patch(
        "deployments",
        "web",
        {"spec": {"template": {"spec": {"containers": [{"name": "main", "image": "nginx:1.28"}]}}}},
    )
    obj = await kopf_cluster.wait_for("deployments", "web", condition=complete)
    cluster.observers.remove(observe)
    assert max(total for total, _ in seen) == 12  # replicas + maxSurge, reached
    assert min(up for _, up in seen) == 9  # replicas - maxUnavailable, never fewer
    assert obj["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2"
    sets = await replica_sets(kopf_cluster)
    assert sorted(
        (rs["spec"]["replicas"], rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"])
        for rs in sets.values()
    ) == [(0, "1"), (10, "2")]
    images = {p["spec"]["containers"][0]["image"] for p in await kopf_cluster.list("pods")}
    assert images == {"nginx:1.28"}


async def test_percentages_round_as_the_controller_rounds_them(kopf_cluster: KopfCluster) -> None:
    await kopf_cluster.create(deployment("web", replicas=5))  # 25%: surge 2 (up), unavailable 1 (down)
    await kopf_cluster.wait_for("deployments", "web", condition=complete)
    await kopf_cluster.patch("deployments", "web", {"spec": {"template": {"metadata": {"labels": {"v": "2"}}}}})
    await asyncio.sleep(0.5)
    sets = sorted((await replica_sets(kopf_cluster)).values(), key=lambda rs: rs["metadata"]["creationTimestamp"])
    assert [rs["spec"]["replicas"] for rs in sets] == [4, 3]  # 5 + 2 surge in all; 1 old one went at once
    assert sets[1]["metadata"]["annotations"]["deployment.kubernetes.io/max-replicas"] == "7"


async def test_scaling_through_the_scale_subresource(kopf_cluster: KopfCluster) -> None:
    await kopf_cluster.create(deployment("web", replicas=2))
    await kopf_cluster.wait_for("deployments", "web", condition=complete)
    await kopf_cluster.patch("deployments", "web", {"spec": {"replicas": 5}}, subresource="scale")
    obj = await kopf_cluster.wait_for("deployments", "web", condition=complete)
    assert obj["status"]["readyReplicas"] == 5
    await kopf_cluster.patch("deployments", "web", {"spec": {"replicas": 0}}, subresource="scale")
    obj = await kopf_cluster.wait_for("deployments", "web", condition=lambda d: not d["status"].get("replicas"))
    assert available(obj)  # zero of zero is enough
    await asyncio.sleep(5)
    assert await kopf_cluster.list("pods") == []
    assert len(await replica_sets(kopf_cluster)) == 1


async def test_the_recreate_strategy_stops_all_before_starting_any(kopf_cluster: KopfCluster) -> None:
    await kopf_cluster.create(deployment("db", replicas=3, strategy={"type": "Recreate"}))
    await kopf_cluster.wait_for("deployments", "db", condition=complete)
    cluster = kopf_cluster.sim.store
    overlaps: list[int] = []

    def observe(change: Change) -> None:
        images = {p["spec"]["containers"][0]["image"] for p in cluster.objects(("", "pods"))}
        overlaps.append(len(images))

    cluster.observers.append(observe)
    await kopf_cluster.patch(
        "deployments",
        "db",
        {"spec": {"template": {"spec": {"containers": [{"name": "main", "image": "postgres:17"}]}}}},
    )
    await kopf_cluster.wait_for("deployments", "db", condition=complete)
    cluster.observers.remove(observe)
    assert max(overlaps) == 1  # never old and new pods at once
    assert [
        rs["metadata"]["annotations"]["deployment.kubernetes.io/max-replicas"]
        for rs in (await replica_sets(kopf_cluster)).values()
    ] == ["3", "3"]


async def test_undo_brings_the_old_replica_set_back_with_the_next_revision(kopf_cluster: KopfCluster) -> None:
    await kopf_cluster.create(deployment("web", replicas=2, image="nginx:1"))
    first = await kopf_cluster.wait_for("deployments", "web", condition=complete)
    original = first["spec"]["template"]
    await kopf_cluster.patch(
        "deployments", "web", {"spec": {"template": {"spec": {"containers": [{"name": "main", "image": "nginx:2"}]}}}}
    )
    await kopf_cluster.wait_for("deployments", "web", condition=complete)
    # What `kubectl rollout undo` does: the previous revision's template back into the Deployment.
    await kopf_cluster.patch("deployments", "web", {"spec": {"template": original}})
    obj = await kopf_cluster.wait_for("deployments", "web", condition=complete)
    assert obj["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "3"
    sets = await replica_sets(kopf_cluster)
    assert len(sets) == 2
    revived = next(rs for rs in sets.values() if rs["spec"]["replicas"] == 2)
    assert revived["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1"
    assert revived["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "3"
    assert revived["metadata"]["annotations"]["deployment.kubernetes.io/revision-history"] == "1"


async def test_old_replica_sets_beyond_the_history_limit_go(kopf_cluster: KopfCluster) -> None:
    await kopf_cluster.create(deployment("web", replicas=1, revisionHistoryLimit=1))
    for version in range(2, 6):
        await kopf_cluster.wait_for("deployments", "web", condition=complete)
        await kopf_cluster.patch(
            "deployments",
            "web",
            {"spec": {"template": {"spec": {"containers": [{"name": "main", "image": f"nginx:{version}"}]}}}},
        )
    await kopf_cluster.wait_for("deployments", "web", condition=complete)
    await asyncio.sleep(1)
    revisions = sorted(
        rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"]
        for rs in (await replica_sets(kopf_cluster)).values()
    )
    assert revisions == ["4", "5"]


async def test_a_stuck_rollout_exceeds_its_progress_deadline(
    kopf_cluster: KopfCluster, controllers: ControllerManager
) -> None:
    await kopf_cluster.create(deployment("web", replicas=2, progressDeadlineSeconds=30))
    await kopf_cluster.wait_for("deployments", "web", condition=complete)
    controllers.fate("app=web", Fate.never_ready())  # the new pods never pass their probes
    await kopf_cluster.patch("deployments", "web", {"spec": {"template": {"metadata": {"labels": {"v": "2"}}}}})
    start = now()
    obj = await kopf_cluster.wait_for(
        "deployments", "web", timeout=120, condition=lambda d: condition(d, "Progressing") == "False"
    )
    progressing = next(c for c in obj["status"]["conditions"] if c["type"] == "Progressing")
    assert progressing["reason"] == "ProgressDeadlineExceeded"
    assert progressing["message"].endswith("has timed out progressing.")
    assert 30 < now() - start <= 32


async def test_a_paused_deployment_waits(kopf_cluster: KopfCluster) -> None:
    await kopf_cluster.create(deployment("web", replicas=2))
    await kopf_cluster.wait_for("deployments", "web", condition=complete)
    await kopf_cluster.patch("deployments", "web", {"spec": {"paused": True}})
    await kopf_cluster.patch("deployments", "web", {"spec": {"template": {"metadata": {"labels": {"v": "2"}}}}})
    await asyncio.sleep(30)
    obj = await kopf_cluster.get("deployments", "web")
    assert len(await replica_sets(kopf_cluster)) == 1
    progressing = next(c for c in obj["status"]["conditions"] if c["type"] == "Progressing")
    assert (progressing["status"], progressing["reason"]) == ("Unknown", "DeploymentPaused")
    await kopf_cluster.patch("deployments", "web", {"spec": {"paused": False}})
    await kopf_cluster.wait_for("deployments", "web", condition=complete)
    assert len(await replica_sets(kopf_cluster)) == 2


async def test_a_deleted_deployment_takes_its_replica_sets_and_pods(kopf_cluster: KopfCluster) -> None:
    await kopf_cluster.create(deployment("web", replicas=2))
    await kopf_cluster.wait_for("deployments", "web", condition=complete)
    await kopf_cluster.delete("deployments", "web")
    assert await kopf_cluster.list("replicasets") == []
    await asyncio.sleep(2)  # the pods' containers stop
    assert await kopf_cluster.list("pods") == []


async def test_a_replica_set_replaces_lost_pods_and_drops_the_unready_first(
    kopf_cluster: KopfCluster, controllers: ControllerManager
) -> None:
    await kopf_cluster.create(
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {"name": "rs"},
            "spec": {
                "replicas": 3,
                "selector": {"matchLabels": {"app": "rs"}},
                "template": {
                    "metadata": {"labels": {"app": "rs"}},
                    "spec": {"containers": [{"name": "c", "image": "x"}]},
                },
            },
        }
    )
    await kopf_cluster.wait_for("replicasets", "rs", condition=lambda r: r["status"].get("readyReplicas") == 3)
    victim = (await kopf_cluster.list("pods"))[0]["metadata"]["name"]
    await kopf_cluster.delete("pods", victim)
    await kopf_cluster.wait_gone("pods", victim)
    obj = await kopf_cluster.wait_for("replicasets", "rs", condition=lambda r: r["status"].get("readyReplicas") == 3)
    assert len(await kopf_cluster.list("pods")) == 3
    unready = sorted(p["metadata"]["name"] for p in await kopf_cluster.list("pods"))[1]
    await kopf_cluster.patch("pods", unready, {"metadata": {"labels": {"app": "rs", "mark": "me"}}})
    controllers.fate("mark=me", Fate.never_ready())
    await kopf_cluster.wait_for("pods", unready, condition=lambda p: not ready(p))
    await kopf_cluster.patch("replicasets", "rs", {"spec": {"replicas": 2}})
    await asyncio.sleep(0.5)
    deleting = [
        p["metadata"]["name"] for p in await kopf_cluster.list("pods") if p["metadata"].get("deletionTimestamp")
    ]
    assert deleting == [unready]
    assert obj["status"]["observedGeneration"] == 1


async def test_a_reapplied_manifest_starts_no_rollout(kopf_cluster: KopfCluster) -> None:
    manifest = deployment("web", replicas=2)
    await kopf_cluster.apply(manifest)
    first = await kopf_cluster.wait_for("deployments", "web", condition=complete)
    [rs] = (await replica_sets(kopf_cluster)).values()
    # The stored template is the defaulted one; the ReplicaSet's and its pods' are the same, with the hash.
    template = first["spec"]["template"]
    assert template["spec"]["containers"][0]["imagePullPolicy"] == "IfNotPresent"
    assert template["spec"]["restartPolicy"] == "Always"
    assert "serviceAccountName" not in template["spec"]  # what admission adds goes into pods only
    assert rs["spec"]["template"]["spec"] == template["spec"]
    for pod in await kopf_cluster.list("pods"):
        assert {k: pod["spec"][k] for k in template["spec"]} == template["spec"]
        assert pod["spec"]["serviceAccountName"] == "default"

    await kopf_cluster.apply(manifest)  # the manifest without the defaults, merged again
    await asyncio.sleep(10)
    again = await kopf_cluster.get("deployments", "web")
    assert again is not None
    assert again["metadata"]["generation"] == first["metadata"]["generation"]
    assert again["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"
    assert list(await replica_sets(kopf_cluster)) == [rs["metadata"]["name"]]
