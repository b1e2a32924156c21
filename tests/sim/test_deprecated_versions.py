"""A deprecated version of a CRD warns with every response (``Warning: 299 - "..."``), as kubectl prints it."""

from __future__ import annotations

import json

import aiohttp
import pytest

from kopf_sim.store.cluster import Cluster

OPEN = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}


def version(name: str, **extra: object) -> dict[str, object]:
    return {"name": name, "served": True, "storage": name == "v1", "schema": OPEN, **extra}


@pytest.fixture
def gadgets(cluster: Cluster) -> Cluster:
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.acme.example"},
        "spec": {
            "group": "acme.example",
            "scope": "Namespaced",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
            "versions": [
                version("v1"),
                version("v1beta1", deprecated=True, deprecationWarning="acme.example/v1beta1 Gadget is old; use v1"),
                version("v1alpha1", deprecated=True),
            ],
        },
    }
    cluster.create(cluster.resource("apiextensions.k8s.io", "v1", "customresourcedefinitions"), None, crd)
    return cluster


def url(version: str, name: str = "") -> str:
    return f"/apis/acme.example/{version}/namespaces/default/gadgets" + (f"/{name}" if name else "")


@pytest.mark.usefixtures("gadgets")
async def test_every_response_of_a_deprecated_version_warns(client: aiohttp.ClientSession) -> None:
    warning = '299 - "acme.example/v1beta1 Gadget is old; use v1"'
    body = {"apiVersion": "acme.example/v1beta1", "kind": "Gadget", "metadata": {"name": "g"}}
    async with client.post(url("v1beta1"), json=body) as response:
        assert response.status == 201
        assert response.headers.getall("Warning") == [warning]
    async with client.get(url("v1beta1", "g")) as response:
        assert response.headers.getall("Warning") == [warning]
    async with client.get(url("v1beta1"), params={"watch": "true", "timeoutSeconds": "1"}) as response:
        assert response.headers.getall("Warning") == [warning]
        assert json.loads(await response.content.readline())["type"] == "ADDED"
    async with client.get(url("v1beta1", "missing")) as response:
        assert response.status == 404
        assert response.headers.getall("Warning") == [warning]
    async with client.get(url("v1alpha1", "g")) as response:
        assert response.headers.getall("Warning") == ['299 - "acme.example/v1alpha1 Gadget is deprecated"']
    async with client.get(url("v1", "g")) as response:
        assert "Warning" not in response.headers
