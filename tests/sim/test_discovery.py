"""Discovery: the legacy lists, and aggregated discovery (apidiscovery.k8s.io/v2) when a client asks for it."""
from __future__ import annotations

import aiohttp

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
        assert response.headers["Content-Type"] == ("application/json;g=apidiscovery.k8s.io;v=v2;"
                                                    "as=APIGroupDiscoveryList")
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
