"""Shared fixtures for the simulator's tests: a deterministic cluster and in-memory HTTP clients."""
from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
import pytest

from kopf_sim.http.app import ServerOptions, build_app
from kopf_sim.store.cluster import Cluster
from kopf_sim.timing.clock import ManualClock, SeededUids
from kopf_sim.transports.inmemory import InMemoryServer

CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.acme.example"},
    "spec": {
        "group": "acme.example",
        "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"]},
        "versions": [{
            "name": "v1", "served": True, "storage": True,
            "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas",
                                                     "statusReplicasPath": ".status.replicas"}},
            "schema": {"openAPIV3Schema": {
                "type": "object",
                "properties": {
                    "spec": {"type": "object", "properties": {
                        "size": {"type": "integer", "minimum": 0},
                        "color": {"type": "string", "default": "blue"},
                        "replicas": {"type": "integer"},
                        "tags": {"type": "array", "items": {"type": "string"}},
                    }},
                    "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                },
            }},
        }],
    },
}


def widget(name: str, namespace: str = "default", **spec: object) -> dict[str, object]:
    return {"apiVersion": "acme.example/v1", "kind": "Widget",
            "metadata": {"name": name, "namespace": namespace}, "spec": dict(spec)}


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def cluster(clock: ManualClock) -> Cluster:
    return Cluster(clock=clock, uids=SeededUids(1))


@pytest.fixture
def crd_cluster(cluster: Cluster) -> Cluster:
    cluster.create(cluster.resource("apiextensions.k8s.io", "v1", "customresourcedefinitions"), None, CRD)
    return cluster


@pytest.fixture
async def client(crd_cluster: Cluster) -> AsyncIterator[aiohttp.ClientSession]:
    """An HTTP client of the simulated apiserver (with the Widget CRD), over the in-memory transport."""
    server = InMemoryServer(build_app(crd_cluster, ServerOptions(bookmark_interval=60)))
    async with server, server.session() as session:
        yield session
