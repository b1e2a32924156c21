"""End to end in the simulated cluster: the documented namespace patterns (globs, negations, the first glob)."""

from __future__ import annotations

import asyncio
from typing import Any

import kopf
from pytest_kopf.client import Client
from pytest_kopf.operator import KopfOperator

NAMESPACES = ["myapp-live", "myapp-pr-456", "myapp-pr-123", "otherapp-live", "otherapp-pr-123"]


async def test_the_documented_pattern_and_namespaces_created_later(
    kopf_cluster: Client, kopf_operator: KopfOperator
) -> None:
    registry = kopf.OperatorRegistry()
    handled: set[str] = set()

    @kopf.on.create("configmaps", registry=registry, labels={"probe": "yes"})
    def create_fn(namespace: str, **_: Any) -> None:
        handled.add(namespace)

    for namespace in NAMESPACES[:3]:
        await kopf_cluster.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    await kopf_operator.start(registry=registry, namespaces=["myapp-*,!*-pr-*,*-pr-123"])
    for namespace in NAMESPACES[3:]:  # appearing while the operator runs
        await kopf_cluster.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    await asyncio.sleep(5)
    for namespace in NAMESPACES:
        await kopf_cluster.create(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "probe", "namespace": namespace, "labels": {"probe": "yes"}},
            }
        )
    await asyncio.sleep(30)
    assert handled == {"myapp-live", "myapp-pr-123"}
    await kopf_operator.stop()


async def test_a_negation_first_serves_all_but_the_excluded(kopf_cluster: Client, kopf_operator: KopfOperator) -> None:
    registry = kopf.OperatorRegistry()
    handled: set[str] = set()

    @kopf.on.create("configmaps", registry=registry, labels={"probe": "yes"})
    def create_fn(namespace: str, **_: Any) -> None:
        handled.add(namespace)

    await kopf_operator.start(registry=registry, namespaces=["!*-pr-*"])
    for namespace in NAMESPACES:
        await kopf_cluster.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    await asyncio.sleep(5)
    for namespace in NAMESPACES:
        await kopf_cluster.create(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "probe", "namespace": namespace, "labels": {"probe": "yes"}},
            }
        )
    await asyncio.sleep(30)
    assert handled == {"myapp-live", "otherapp-live"}
    await kopf_operator.stop()
