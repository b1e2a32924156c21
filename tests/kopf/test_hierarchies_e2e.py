"""End to end in the simulated cluster: a child adopted by a cluster-scoped owner, as operators write it."""

from __future__ import annotations

from typing import Any

import kubernetes

import kopf
from pytest_kopf.client import Client
from pytest_kopf.operator import KopfOperator


async def test_a_child_of_a_namespace_is_adopted_and_created_in_it(
    kopf_cluster: Client, kopf_operator: KopfOperator
) -> None:
    registry = kopf.OperatorRegistry()

    @kopf.on.create("namespaces", registry=registry, labels={"team": kopf.PRESENT})
    def create_notes(name: str, **_: Any) -> None:
        child: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"for": name}}
        kopf.adopt(child, strict=True)
        assert child["metadata"]["namespace"] is None  # the owner has none (as in the published framework)
        child["metadata"]["labels"]["app"] = "notes"
        kubernetes.config.load_kube_config()
        kubernetes.client.CoreV1Api().create_namespaced_config_map(name, child)  # with "namespace": null

    await kopf_operator.start(registry=registry)
    await kopf_cluster.create(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a", "labels": {"team": "a"}}}
    )
    child = await kopf_cluster.wait_for("configmaps", "team-a", namespace="team-a", timeout=60)
    assert child["metadata"]["namespace"] == "team-a"
    assert child["metadata"]["labels"]["team"] == "a" and child["metadata"]["labels"]["app"] == "notes"
    assert child["metadata"]["ownerReferences"][0]["kind"] == "Namespace"
    await kopf_operator.stop()
    assert kopf_operator.exception is None
