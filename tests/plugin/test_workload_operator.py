"""An operator that runs a Deployment per object and reports its health, against the simulated controllers.

The object is Ready when its Deployment is Available, and Degraded when it was and is no more (here:
its pods steered into a crash loop). All of it in virtual time: the pods' delays, the kubelet's
back-offs, the controllers' reactions and the operator's handlers.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

import kopf
from kopf_sim.controllers import Fate
from pytest_kopf.cluster import KopfCluster
from pytest_kopf.operator import KopfOperator

CRD = Path(__file__).resolve().parents[2] / "examples" / "crd.yaml"
pytestmark = pytest.mark.kopf_sim_only  # it steers the simulated pods' fates


def registry_of_the_operator() -> kopf.OperatorRegistry:
    registry = kopf.OperatorRegistry()

    @kopf.on.create("kopf.dev", "v1", "kopfexamples", registry=registry)
    async def run_a_deployment(body: kopf.Body, name: str, memo: kopf.Memo, **_: Any) -> None:
        labels = {"kopf-example": name}
        deployment: dict[str, Any] = {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": f"{name}-app", "labels": labels},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {"containers": [{"name": "app", "image": "example/app:1"}]},
                },
            },
        }
        kopf.adopt(deployment, owner=body)
        await memo.cluster.create(deployment)

    @kopf.on.event("apps", "v1", "deployments", registry=registry, labels={"kopf-example": kopf.PRESENT})
    async def report_health(body: kopf.Body, namespace: str, memo: kopf.Memo, **_: Any) -> None:
        owner = body.metadata.labels["kopf-example"]
        conditions = {c["type"]: c["status"] for c in body.status.get("conditions") or []}
        parent = await memo.cluster.get("kopfexamples", owner, namespace)
        if parent is None:
            return
        was = (parent.get("status") or {}).get("phase")
        if conditions.get("Available") == "True":
            phase = "Ready"
        elif was in ("Ready", "Degraded"):
            phase = "Degraded"
        else:
            phase = "Progressing"
        if phase != was:
            await memo.cluster.patch(
                "kopfexamples", owner, {"status": {"phase": phase}}, namespace, subresource="status"
            )

    return registry


def phase(obj: dict[str, Any] | None) -> Any:
    return ((obj or {}).get("status") or {}).get("phase")


async def test_ready_when_available_and_degraded_when_crash_looping(
    kopf_cluster: KopfCluster, kopf_operator: KopfOperator
) -> None:
    loop = asyncio.get_running_loop()
    await kopf_cluster.apply(str(CRD))
    await kopf_operator.start(registry=registry_of_the_operator(), memo=kopf.Memo(cluster=kopf_cluster))
    await kopf_cluster.create(
        {"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "metadata": {"name": "shop"}, "spec": {}}
    )
    await kopf_cluster.wait_for("kopfexamples", "shop", condition=lambda o: phase(o) == "Progressing")
    await kopf_cluster.wait_for("kopfexamples", "shop", condition=lambda o: phase(o) == "Ready")
    assert loop.time() < 3  # the pods' start and readiness delays, and nothing else
    deployment = await kopf_cluster.get("deployments", "shop-app")
    assert deployment is not None and deployment["status"]["availableReplicas"] == 2
    assert deployment["metadata"]["ownerReferences"][0]["name"] == "shop"

    ready_at = loop.time()
    kopf_cluster.sim.controllers.fate({"kopf-example": "shop"}, Fate.crash_loop(after=5))
    await kopf_cluster.wait_for("kopfexamples", "shop", condition=lambda o: phase(o) == "Degraded")
    assert 5 <= loop.time() - ready_at < 6  # the containers crash 5 s after the fate was set
    await asyncio.sleep(60)
    pods = await kopf_cluster.list("pods", labels={"kopf-example": "shop"})
    assert len(pods) == 2
    for pod in pods:
        status = pod["status"]["containerStatuses"][0]
        assert status["restartCount"] >= 2
        assert status["lastState"]["terminated"]["exitCode"] == 1

    kopf_cluster.sim.controllers.fates.clear()  # healthy again
    await kopf_cluster.wait_for("kopfexamples", "shop", condition=lambda o: phase(o) == "Ready", timeout=600)
    await kopf_operator.stop()
    assert kopf_operator.exception is None
