"""A lagging apiserver as faults: stale reads, withheld & coalesced watch events, a crash after the k-th write;
and the garbage collection of dependents whose owners were gone before them."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp

from kopf_sim.http import faults
from kopf_sim.http.app import build_app
from kopf_sim.http.faults import FaultInjector
from kopf_sim.store.cluster import Cluster
from kopf_sim.timing import virtualtime
from kopf_sim.timing.clock import ManualClock, SeededUids
from kopf_sim.timing.virtualtime import loop_clock
from kopf_sim.transports.inmemory import InMemoryServer
from tests.helpers import widget

from .conftest import CRD

WIDGETS = "/apis/acme.example/v1/namespaces/default/widgets"
MERGE = {"Content-Type": "application/merge-patch+json"}


def make_cluster(*, in_loop: bool = True) -> Cluster:
    cluster = Cluster(clock=loop_clock(None) if in_loop else ManualClock(), uids=SeededUids(1))
    cluster.create(cluster.resource("apiextensions.k8s.io", "v1", "customresourcedefinitions"), None, CRD)
    cluster.create(cluster.resource("acme.example", "v1", "widgets"), "default", widget("w1", size=1))
    return cluster


async def size_of(session: aiohttp.ClientSession, name: str = "w1") -> int:
    async with session.get(f"{WIDGETS}/{name}") as response:
        return int((await response.json())["spec"]["size"])


async def resize(session: aiohttp.ClientSession, size: int, name: str = "w1") -> None:
    async with session.patch(f"{WIDGETS}/{name}", data=json.dumps({"spec": {"size": size}}), headers=MERGE) as r:
        assert r.status == 200, await r.text()


def test_stale_reads_serve_older_revisions_by_seeded_draws() -> None:
    async def main(seed: int) -> tuple[list[int], list[str]]:
        cluster = make_cluster()
        injector = FaultInjector(seed)
        app = build_app(cluster)
        faults.install(app, injector)
        async with InMemoryServer(app) as server, server.session() as session:
            for size in (2, 3, 4, 5):
                await resize(session, size)
            injector.stale_read(3, resource="widgets", count=6)
            sizes = [await size_of(session) for _ in range(6)]
            assert await size_of(session) == 5  # the rule is exhausted: the latest again
            async with session.get(WIDGETS) as response:
                listing = await response.json()
            assert listing["items"][0]["spec"]["size"] == 5
            return sizes, injector.log

    sizes, log = virtualtime.run(main(7))
    assert all(2 <= size <= 4 for size in sizes) and len(set(sizes)) > 1
    assert len(log) == 6 and all("stale read (-" in line and "/widgets/w1" in line for line in log)
    assert virtualtime.run(main(7)) == (sizes, log)  # the same seed, the same draws


def test_stale_lists_are_snapshots_at_their_revision() -> None:
    async def main() -> None:
        cluster = make_cluster()
        injector = FaultInjector()
        app = build_app(cluster)
        faults.install(app, injector)
        async with InMemoryServer(app) as server, server.session() as session:
            async with session.post(WIDGETS, json=widget("w2", size=7)) as response:
                assert response.status == 201
            injector.stale_read(1, resource="widgets", count=1)
            async with session.get(WIDGETS) as response:
                listing = await response.json()
            assert [item["metadata"]["name"] for item in listing["items"]] == ["w1"]
            assert int(listing["metadata"]["resourceVersion"]) == cluster.rv - 1

    virtualtime.run(main())


async def watch_lines(session: aiohttp.ClientSession, rv: str, until: float) -> list[tuple[float, str, int]]:
    """(loop time, event type, size) of a watch's events until the loop time ``until``."""
    loop = asyncio.get_running_loop()
    seen: list[tuple[float, str, int]] = []
    params = {"watch": "true", "resourceVersion": rv, "timeoutSeconds": str(int(until))}
    async with session.get(WIDGETS, params=params) as response:
        async for line in response.content:
            event = json.loads(line)
            seen.append((loop.time(), event["type"], event["object"]["spec"]["size"]))
    return seen


def test_withheld_events_come_late_and_in_order() -> None:
    async def main() -> list[tuple[float, str, int]]:
        cluster = make_cluster()
        injector = FaultInjector()
        app = build_app(cluster)
        faults.install(app, injector)
        async with InMemoryServer(app) as server, server.session() as session:
            injector.withhold_events(10, resource="widgets")
            rv = str(cluster.rv)
            watcher = asyncio.create_task(watch_lines(session, rv, until=100))
            await asyncio.sleep(1)
            await resize(session, 2)
            await asyncio.sleep(1)
            await resize(session, 3)
            return await watcher

    assert virtualtime.run(main()) == [(11.0, "MODIFIED", 2), (12.0, "MODIFIED", 3)]


def test_coalesced_events_keep_only_the_latest_state_of_each_object() -> None:
    async def main() -> tuple[list[tuple[float, str, int]], list[str]]:
        cluster = make_cluster()
        injector = FaultInjector()
        app = build_app(cluster)
        faults.install(app, injector)
        async with InMemoryServer(app) as server, server.session() as session:
            injector.withhold_events(5, coalesce=True, resource="widgets")
            rv = str(cluster.rv)
            watcher = asyncio.create_task(watch_lines(session, rv, until=100))
            await asyncio.sleep(1)
            for size in (2, 3, 4):
                await resize(session, size)
            async with session.post(WIDGETS, json=widget("w2", size=9)) as response:
                assert response.status == 201
            await asyncio.sleep(10)
            await resize(session, 5)
            return await watcher, injector.log

    seen, log = virtualtime.run(main())
    assert seen == [(6.0, "MODIFIED", 4), (6.0, "ADDED", 9), (16.0, "MODIFIED", 5)]
    assert [line.split(" ", 1)[1] for line in log] == [
        "withhold events 5s coalesced: GET /apis/acme.example/v1/namespaces/default/widgets (watch)",
        "coalesced away: MODIFIED default/w1 rv=7",
        "coalesced away: MODIFIED default/w1 rv=8",
    ]


def test_a_crash_after_the_kth_write_cuts_the_response_off() -> None:
    async def main() -> tuple[list[str], list[int], list[str]]:
        cluster = make_cluster()
        injector = FaultInjector()
        app = build_app(cluster)
        faults.install(app, injector)
        crashed: list[str] = []
        outcomes: list[str] = []
        injector.crash_after(2, lambda: crashed.append("now"), method="PATCH")
        async with InMemoryServer(app) as server, server.session() as session:
            for size in (2, 3, 4):
                try:
                    await resize(session, size)
                    outcomes.append("ok")
                except aiohttp.ClientError as exc:
                    outcomes.append(type(exc).__name__)
            sizes = [await size_of(session)]
        return crashed, sizes, [outcomes[0], outcomes[2], *injector.log]

    crashed, sizes, rest = virtualtime.run(main())
    assert crashed == ["now"]
    assert sizes == [4]
    assert rest[:2] == ["ok", "ok"]  # the 1st and the 3rd write got through; the 2nd was done but cut off
    assert rest[2].endswith("crash after write #2: PATCH /apis/acme.example/v1/namespaces/default/widgets/w1")


def test_a_dependent_of_an_owner_gone_before_it_was_created_is_collected() -> None:
    cluster = make_cluster(in_loop=False)
    widgets = cluster.resource("acme.example", "v1", "widgets")
    configmaps = cluster.resource("", "v1", "configmaps")
    owner = cluster.get(widgets, "default", "w1")
    ref: dict[str, Any] = {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": "w1",
        "uid": owner["metadata"]["uid"],
    }
    cluster.delete(widgets, "default", "w1")
    created = cluster.create(configmaps, "default", {"metadata": {"name": "late", "ownerReferences": [ref]}})
    assert created["metadata"]["name"] == "late"
    assert cluster.peek(configmaps.storage_key, "default", "late") is None
    assert [c.type for c in cluster.history][-2:] == ["ADDED", "DELETED"]


def test_a_dependent_pointed_at_a_gone_owner_later_is_collected_but_one_live_owner_keeps_it() -> None:
    cluster = make_cluster(in_loop=False)
    widgets = cluster.resource("acme.example", "v1", "widgets")
    configmaps = cluster.resource("", "v1", "configmaps")
    alive = cluster.create(widgets, "default", widget("w2", size=1))
    gone = cluster.get(widgets, "default", "w1")
    cluster.delete(widgets, "default", "w1")

    def ref(obj: dict[str, Any]) -> dict[str, Any]:
        return {
            "apiVersion": obj["apiVersion"],
            "kind": obj["kind"],
            "name": obj["metadata"]["name"],
            "uid": obj["metadata"]["uid"],
        }

    cluster.create(configmaps, "default", {"metadata": {"name": "both", "ownerReferences": [ref(gone), ref(alive)]}})
    assert cluster.peek(configmaps.storage_key, "default", "both") is not None
    cluster.create(configmaps, "default", {"metadata": {"name": "plain"}})
    cluster.patch(
        configmaps, "default", "plain", {"metadata": {"ownerReferences": [ref(gone)]}}, "application/merge-patch+json"
    )
    assert cluster.peek(configmaps.storage_key, "default", "plain") is None


def test_an_owner_in_another_namespace_is_absent_for_the_collector() -> None:
    """As in Kubernetes: a namespaced owner is looked for in its dependent's namespace only."""
    cluster = make_cluster(in_loop=False)
    widgets = cluster.resource("acme.example", "v1", "widgets")
    configmaps = cluster.resource("", "v1", "configmaps")
    namespaces = cluster.resource("", "v1", "namespaces")
    cluster.create(namespaces, None, {"metadata": {"name": "other"}})
    owner = cluster.get(widgets, "default", "w1")
    ref = {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": "w1", "uid": owner["metadata"]["uid"]}
    cluster.create(configmaps, "other", {"metadata": {"name": "elsewhere", "ownerReferences": [ref]}})
    cluster.create(configmaps, "default", {"metadata": {"name": "beside", "ownerReferences": [ref]}})
    assert cluster.peek(configmaps.storage_key, "other", "elsewhere") is None
    assert cluster.peek(configmaps.storage_key, "default", "beside") is not None
    namespace = cluster.get(namespaces, None, "other")
    cluster_scoped_ref = {"apiVersion": "v1", "kind": "Namespace", "name": "other", "uid": namespace["metadata"]["uid"]}
    cluster.create(
        configmaps, "default", {"metadata": {"name": "of-a-namespace", "ownerReferences": [cluster_scoped_ref]}}
    )
    assert cluster.peek(configmaps.storage_key, "default", "of-a-namespace") is not None


def test_a_stale_get_lags_in_content_only_never_in_whether_or_which_object_is_there() -> None:
    """A deleted object stays gone, one just made is there, a namesake made anew is itself (not its predecessor).

    A GET by name is a quorum read on a real apiserver: get-or-create operators rely on it. Lists lag as a cache.
    """

    async def status_and_uid(session: aiohttp.ClientSession, name: str) -> tuple[int, str | None]:
        async with session.get(f"{WIDGETS}/{name}") as response:
            body = await response.json()
            return response.status, body.get("metadata", {}).get("uid")

    async def main(per_object: bool) -> None:
        cluster = make_cluster()
        injector = FaultInjector()
        app = build_app(cluster)
        faults.install(app, injector)
        async with InMemoryServer(app) as server, server.session() as session:
            async with session.delete(f"{WIDGETS}/w1") as response:
                assert response.status == 200
            async with session.post(WIDGETS, json=widget("w2", size=2)) as response:
                assert response.status == 201
            async with session.post(WIDGETS, json=widget("w1", size=3)) as response:  # a namesake, made anew
                assert response.status == 201
                new_uid = (await response.json())["metadata"]["uid"]
            async with session.delete(f"{WIDGETS}/w2") as response:
                assert response.status == 200
            async with session.post(WIDGETS, json=widget("w3", size=4)) as response:
                assert response.status == 201
            injector.stale_read(5, per_object=per_object, resource="widgets", count=3)
            assert await status_and_uid(session, "w2") == (404, None)  # deleted: gone, at any lag
            assert (await status_and_uid(session, "w3"))[0] == 200  # just made: there
            assert await status_and_uid(session, "w1") == (200, new_uid)  # the namesake, not the one deleted
            assert len(injector.injections) == 3
            await resize(session, 5, name="w3")
            injector.stale_read(1, per_object=per_object, resource="widgets", count=1)
            assert await size_of(session, "w3") == 4  # its content lags, as before
            injector.stale_read(3, resource="widgets", count=1)
            async with session.get(WIDGETS) as response:  # a list lags as a cache: w2 listed again
                names = [item["metadata"]["name"] for item in (await response.json())["items"]]
            assert "w2" in names

    virtualtime.run(main(False))
    virtualtime.run(main(True))
