"""
Fixtures for the simulator's tests: the shared deterministic cluster (tests/conftest.py), the same cluster
with a Widget CRD (a schema with defaults, and the scale subresource), and an HTTP client of it in memory.

What they fake on top of the shared ones: nothing; the HTTP client is aiohttp's, over the in-memory transport.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
import pytest

from kopf_sim.store.cluster import Cluster
from kopf_sim.transports.inmemory import InMemoryServer

CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.acme.example"},
    "spec": {
        "group": "acme.example",
        "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"]},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {
                    "status": {},
                    "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"},
                },
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "properties": {
                                    "size": {"type": "integer", "minimum": 0},
                                    "color": {"type": "string", "default": "blue"},
                                    "replicas": {"type": "integer"},
                                    "tags": {"type": "array", "items": {"type": "string"}},
                                },
                            },
                            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                        },
                    }
                },
            }
        ],
    },
}


@pytest.fixture
def crd_cluster(cluster: Cluster) -> Cluster:
    cluster.create(cluster.resource("apiextensions.k8s.io", "v1", "customresourcedefinitions"), None, CRD)
    return cluster


@pytest.fixture
async def client(crd_cluster: Cluster, server: InMemoryServer) -> AsyncIterator[aiohttp.ClientSession]:
    """An HTTP client of the simulated apiserver (with the Widget CRD), over the in-memory transport."""
    async with server.session() as session:
        yield session
