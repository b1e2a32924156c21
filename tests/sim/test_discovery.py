"""Discovery: the legacy lists, and aggregated discovery (apidiscovery.k8s.io/v2) when a client asks for it."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from kopf_sim.http import discovery
from kopf_sim.http.app import build_app, dumps
from kopf_sim.store.cluster import Cluster
from kopf_sim.transports.inmemory import InMemoryServer

from .conftest import CRD

AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"


async def test_legacy_discovery_by_default(client: aiohttp.ClientSession) -> None:
    async with client.get("/apis") as response:
        assert response.headers["Content-Type"] == "application/json"
        groups = {group["name"] for group in (await response.json())["groups"]}
    assert {"apps", "acme.example", "apiextensions.k8s.io"} <= groups
    async with client.get("/api") as response:
        assert (await response.json())["versions"] == ["v1"]


async def test_aggregated_discovery_of_named_groups(client: aiohttp.ClientSession) -> None:
    async with client.get("/apis", headers={"Accept": AGGREGATED}) as response:
        assert response.headers["Content-Type"] == (
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
        )
        doc = await response.json()
    assert (doc["kind"], doc["apiVersion"]) == ("APIGroupDiscoveryList", "apidiscovery.k8s.io/v2")
    groups = {item["metadata"]["name"]: item for item in doc["items"]}
    assert "" not in groups
    [widgets] = [r for r in groups["acme.example"]["versions"][0]["resources"] if r["resource"] == "widgets"]
    assert widgets["responseKind"] == {"group": "acme.example", "version": "v1", "kind": "Widget"}
    assert widgets["scope"] == "Namespaced" and widgets["singularResource"] == "widget"
    assert widgets["shortNames"] == ["wd"]
    assert {s["subresource"] for s in widgets["subresources"]} == {"status", "scale"}
    [deployments] = [r for r in groups["apps"]["versions"][0]["resources"] if r["resource"] == "deployments"]
    [scale] = [s for s in deployments["subresources"] if s["subresource"] == "scale"]
    assert scale["responseKind"] == {"group": "autoscaling", "version": "v1", "kind": "Scale"}


async def test_aggregated_discovery_of_the_core_group(client: aiohttp.ClientSession) -> None:
    async with client.get("/api", headers={"Accept": AGGREGATED}) as response:
        doc = await response.json()
    [core] = doc["items"]
    assert core["metadata"] == {} and [v["version"] for v in core["versions"]] == ["v1"]
    namespaces = next(r for r in core["versions"][0]["resources"] if r["resource"] == "namespaces")
    assert namespaces["scope"] == "Cluster"


async def test_only_v2_is_served_aggregated(client: aiohttp.ClientSession) -> None:
    accept = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"
    async with client.get("/apis", headers={"Accept": accept}) as response:
        assert (await response.json())["kind"] == "APIGroupList"


# -- The encoded documents are cached: they must follow every change of the served resources ----------

CRDS_URL = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


async def _aggregated_groups(session: aiohttp.ClientSession) -> dict[str, Any]:
    async with session.get("/apis", headers={"Accept": AGGREGATED}) as response:
        return {item["metadata"]["name"]: item for item in (await response.json())["items"]}


async def _status(session: aiohttp.ClientSession, path: str) -> int:
    async with session.get(path) as response:
        return response.status


@pytest.fixture
async def bare_client(cluster: Cluster) -> AsyncIterator[aiohttp.ClientSession]:
    """A client of a cluster without the Widget CRD (yet)."""
    async with InMemoryServer(build_app(cluster)) as server, server.session() as session:
        yield session


async def test_discovery_follows_crds_created_and_deleted(bare_client: aiohttp.ClientSession) -> None:
    assert "acme.example" not in await _aggregated_groups(bare_client)
    assert await _status(bare_client, "/apis/acme.example/v1") == 404
    async with bare_client.post(CRDS_URL, json=CRD) as response:
        assert response.status == 201
    assert "acme.example" in await _aggregated_groups(bare_client)
    assert await _status(bare_client, "/apis/acme.example") == 200
    assert await _status(bare_client, "/apis/acme.example/v1") == 200
    async with bare_client.delete(f"{CRDS_URL}/widgets.acme.example") as response:
        assert response.status == 200
    assert "acme.example" not in await _aggregated_groups(bare_client)
    assert await _status(bare_client, "/apis/acme.example") == 404
    async with bare_client.get("/apis") as response:
        assert "acme.example" not in {group["name"] for group in (await response.json())["groups"]}


async def test_discovery_follows_crds_updated(bare_client: aiohttp.ClientSession) -> None:
    async with bare_client.post(CRDS_URL, json=CRD) as response:
        assert response.status == 201
    [resource] = (await _aggregated_groups(bare_client))["acme.example"]["versions"][0]["resources"]
    assert resource["shortNames"] == ["wd"]
    patch = {"spec": {"names": {"shortNames": ["wd", "wdg"]}}}
    async with bare_client.patch(
        f"{CRDS_URL}/widgets.acme.example", json=patch, headers={"Content-Type": "application/merge-patch+json"}
    ) as response:
        assert response.status == 200
    [resource] = (await _aggregated_groups(bare_client))["acme.example"]["versions"][0]["resources"]
    assert resource["shortNames"] == ["wd", "wdg"]
    async with bare_client.get("/apis/acme.example/v1") as response:
        [widgets] = [r for r in (await response.json())["resources"] if r["name"] == "widgets"]
    assert widgets["shortNames"] == ["wd", "wdg"]


async def test_clusters_with_other_crds_get_their_own_documents(client: aiohttp.ClientSession) -> None:
    assert "acme.example" in await _aggregated_groups(client)
    async with InMemoryServer(build_app(Cluster())) as server, server.session() as other:
        assert "acme.example" not in await _aggregated_groups(other)


async def test_cached_documents_are_the_built_ones(crd_cluster: Cluster, client: aiohttp.ClientSession) -> None:
    for path, doc in [
        ("/apis", discovery.group_list(crd_cluster.catalogue)),
        ("/apis/acme.example", discovery.group(crd_cluster.catalogue, "acme.example")),
        ("/api/v1", discovery.resource_list(crd_cluster.catalogue, "", "v1")),
    ]:
        for _ in range(2):
            async with client.get(path) as response:
                assert await response.read() == dumps(doc)
    for _ in range(2):
        async with client.get("/apis", headers={"Accept": AGGREGATED}) as response:
            assert await response.read() == dumps(discovery.aggregated(crd_cluster.catalogue, core=False))


async def test_legacy_core_versions_name_the_address_as_reached(client: aiohttp.ClientSession) -> None:
    for host in ("one.example:6443", "two.example:8443"):
        async with client.get("/api", headers={"Host": host}) as response:
            [entry] = (await response.json())["serverAddressByClientCIDRs"]
        assert entry["serverAddress"] == host


async def test_malformed_crd_names_are_served_but_not_shared(
    crd_cluster: Cluster, client: aiohttp.ClientSession
) -> None:
    [widgets] = [rtype for rtype in crd_cluster.catalogue if rtype.plural == "widgets"]
    assert discovery.shareable(crd_cluster.catalogue) is not None
    crd_cluster.catalogue.add(dataclasses.replace(widgets, short_names=(True,)))  # type: ignore[arg-type]
    assert discovery.shareable(crd_cluster.catalogue) is None
    [resource] = (await _aggregated_groups(client))["acme.example"]["versions"][0]["resources"]
    assert resource["shortNames"] == [True]


def test_resource_types_hash_once_and_not_across_copies(crd_cluster: Cluster) -> None:
    """Types are the cache keys of shared documents: their hash is kept, but never pickled or copied."""
    import copy
    import pickle

    widgets = crd_cluster.resource("acme.example", "v1", "widgets")
    key = dataclasses.replace(widgets, schema=None, printer_columns=(), scale=None)
    expected = hash(tuple(getattr(key, field.name) for field in dataclasses.fields(key)))
    assert hash(key) == expected and key.__dict__["_hash"] == expected
    for clone in (pickle.loads(pickle.dumps(key)), copy.copy(key)):
        assert "_hash" not in clone.__dict__
        assert clone == key and hash(clone) == expected
    assert hash(dataclasses.replace(key, plural="gadgets")) != expected
