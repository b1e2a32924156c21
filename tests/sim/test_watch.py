"""Watch semantics over HTTP: initial state, resumption, 410, bookmarks, selector transitions, timeouts."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp
import pytest

from kopf_sim.store.cluster import Cluster
from tests.helpers import widget

WIDGETS = "/apis/acme.example/v1/namespaces/default/widgets"
MERGE = {"Content-Type": "application/merge-patch+json"}


async def read_events(client: aiohttp.ClientSession, url: str, **params: str) -> list[dict[str, Any]]:
    async with client.get(url, params={"watch": "true", **params}) as response:
        assert response.status == 200
        assert response.headers["Content-Type"] == "application/json"
        return [json.loads(line) async for line in response.content]


def summary(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(e["type"], e["object"].get("metadata", {}).get("name", "")) for e in events]


async def create(client: aiohttp.ClientSession, name: str, **labels: str) -> dict[str, Any]:
    body = widget(name)
    body["metadata"]["labels"] = labels  # type: ignore[index]
    async with client.post(WIDGETS, json=body) as response:
        assert response.status == 201
        return dict(await response.json())


@pytest.mark.looptime
async def test_watch_without_version_starts_with_existing_objects(client: aiohttp.ClientSession) -> None:
    await create(client, "a")
    await create(client, "b")
    events = await read_events(client, WIDGETS, timeoutSeconds="1")
    assert summary(events) == [("ADDED", "a"), ("ADDED", "b")]


@pytest.mark.looptime
async def test_watch_streams_changes_live(client: aiohttp.ClientSession) -> None:
    reader = asyncio.create_task(read_events(client, WIDGETS, timeoutSeconds="30", resourceVersion="0"))
    await asyncio.sleep(5)
    await create(client, "a")
    async with client.patch(f"{WIDGETS}/a", json={"spec": {"size": 3}}, headers=MERGE) as response:
        assert response.status == 200
    async with client.delete(f"{WIDGETS}/a") as response:
        assert response.status == 200
    assert summary(await reader) == [("ADDED", "a"), ("MODIFIED", "a"), ("DELETED", "a")]


@pytest.mark.looptime
async def test_resume_from_a_version_has_no_loss_and_no_duplicates(client: aiohttp.ClientSession) -> None:
    first = await create(client, "a")
    await create(client, "b")
    async with client.patch(f"{WIDGETS}/a", json={"spec": {"size": 1}}, headers=MERGE) as response:
        assert response.status == 200
    events = await read_events(
        client, WIDGETS, timeoutSeconds="1", resourceVersion=first["metadata"]["resourceVersion"]
    )
    assert summary(events) == [("ADDED", "b"), ("MODIFIED", "a")]
    versions = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    assert versions == sorted(versions) and versions[0] > int(first["metadata"]["resourceVersion"])


@pytest.mark.looptime
async def test_compacted_version_gets_an_expired_error_event(
    client: aiohttp.ClientSession, crd_cluster: Cluster
) -> None:
    first = await create(client, "a")
    await create(client, "b")
    crd_cluster.compact()
    events = await read_events(client, WIDGETS, resourceVersion=first["metadata"]["resourceVersion"])
    assert len(events) == 1 and events[0]["type"] == "ERROR"
    status = events[0]["object"]
    assert (status["kind"], status["code"], status["reason"]) == ("Status", 410, "Expired")
    assert status["message"].startswith(f"too old resource version: {first['metadata']['resourceVersion']}")


@pytest.mark.looptime
async def test_history_window_compacts_by_itself(crd_cluster: Cluster, client: aiohttp.ClientSession) -> None:
    crd_cluster.history_window = 3
    first = await create(client, "a")
    for name in "bcde":
        await create(client, name)
    events = await read_events(client, WIDGETS, resourceVersion=first["metadata"]["resourceVersion"])
    assert events[0]["object"]["code"] == 410


@pytest.mark.looptime
async def test_bookmarks_on_idle_watches(client: aiohttp.ClientSession, crd_cluster: Cluster) -> None:
    loop = asyncio.get_running_loop()
    start = loop.time()
    events = await read_events(
        client, WIDGETS, timeoutSeconds="150", allowWatchBookmarks="true", resourceVersion=str(crd_cluster.rv)
    )
    assert [e["type"] for e in events] == ["BOOKMARK", "BOOKMARK", "BOOKMARK"]  # at 60 s, 120 s, 148 s
    assert events[0]["object"] == {
        "kind": "Widget",
        "apiVersion": "acme.example/v1",
        "metadata": {"resourceVersion": str(crd_cluster.rv)},
    }
    assert round(loop.time() - start) == 150


@pytest.mark.looptime
@pytest.mark.parametrize(
    ("timeout", "moments"),
    [("10", [8.0]), ("130", [60.0, 120.0, 128.0]), ("121", [60.0, 119.0]), ("2", [])],
)
async def test_a_bookmark_comes_shortly_before_the_deadline(
    client: aiohttp.ClientSession, crd_cluster: Cluster, timeout: str, moments: list[float]
) -> None:
    loop = asyncio.get_running_loop()
    start = loop.time()
    seen: list[float] = []
    params = {"watch": "true", "timeoutSeconds": timeout, "allowWatchBookmarks": "true"}
    async with client.get(WIDGETS, params={**params, "resourceVersion": str(crd_cluster.rv)}) as response:
        async for line in response.content:
            assert json.loads(line)["type"] == "BOOKMARK"
            seen.append(loop.time() - start)
    assert seen == moments
    assert loop.time() - start == float(timeout)


@pytest.mark.looptime
async def test_no_bookmarks_unless_allowed(client: aiohttp.ClientSession, crd_cluster: Cluster) -> None:
    events = await read_events(client, WIDGETS, timeoutSeconds="150", resourceVersion=str(crd_cluster.rv))
    assert events == []


@pytest.mark.looptime
async def test_send_initial_events_ends_with_a_marked_bookmark(client: aiohttp.ClientSession) -> None:
    await create(client, "a")
    events = await read_events(
        client,
        WIDGETS,
        timeoutSeconds="1",
        allowWatchBookmarks="true",
        sendInitialEvents="true",
        resourceVersionMatch="NotOlderThan",
    )
    assert summary(events)[0] == ("ADDED", "a")
    assert events[1]["type"] == "BOOKMARK"
    assert events[1]["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}


@pytest.mark.looptime
async def test_label_selector_transitions(client: aiohttp.ClientSession) -> None:
    reader = asyncio.create_task(
        read_events(client, WIDGETS, timeoutSeconds="30", resourceVersion="0", labelSelector="tier=front")
    )
    await asyncio.sleep(1)
    await create(client, "a", tier="back")
    for tier in ("front", "front", "back"):
        patch = {"metadata": {"labels": {"tier": tier}}, "spec": {"size": len(tier)}}
        async with client.patch(f"{WIDGETS}/a", json=patch, headers=MERGE) as response:
            assert response.status == 200
    assert summary(await reader) == [("ADDED", "a"), ("DELETED", "a")]


@pytest.mark.looptime
async def test_field_selector_on_name(client: aiohttp.ClientSession) -> None:
    await create(client, "a")
    await create(client, "b")
    events = await read_events(client, WIDGETS, timeoutSeconds="1", fieldSelector="metadata.name=b")
    assert summary(events) == [("ADDED", "b")]


@pytest.mark.looptime
async def test_table_watch(client: aiohttp.ClientSession) -> None:
    await create(client, "a")
    await create(client, "b")
    accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
    async with client.get(
        WIDGETS, params={"watch": "1", "timeoutSeconds": "1"}, headers={"Accept": accept}
    ) as response:
        events = [json.loads(line) async for line in response.content]
    assert [e["object"]["kind"] for e in events] == ["Table", "Table"]
    assert events[0]["object"]["columnDefinitions"][0]["name"] == "Name"
    assert events[1]["object"]["columnDefinitions"] == []
    assert events[1]["object"]["rows"][0]["cells"][0] == "b"


@pytest.mark.looptime
async def test_server_shutdown_closes_watches(crd_cluster: Cluster) -> None:
    from kopf_sim.http.app import build_app
    from kopf_sim.transports.inmemory import InMemoryServer

    server = InMemoryServer(build_app(crd_cluster))
    await server.start()
    params = {"watch": "true", "resourceVersion": "0"}
    async with server.session() as session, session.get(WIDGETS, params=params) as response:
        stopping = asyncio.create_task(server.stop())
        lines = [line async for line in response.content]
        await stopping
    assert lines == []
