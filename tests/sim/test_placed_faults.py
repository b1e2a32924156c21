"""Faults placed on one request or one event: skipping the first matches, stale answers of what is read
(before its latest change, whatever else changed), one object's event held until its next one, and a watch
expired (410) at one object's event."""

from __future__ import annotations

import asyncio
import json

import aiohttp
import pytest

from kopf_sim.http import faults
from kopf_sim.http.app import build_app
from kopf_sim.http.faults import FaultInjector
from kopf_sim.store.cluster import Cluster
from kopf_sim.timing import virtualtime
from kopf_sim.transports.inmemory import InMemoryServer

from .test_lagging import WIDGETS, make_cluster, resize, size_of, watch_lines, widget

CONFIGMAPS = "/api/v1/namespaces/default/configmaps"


def served(cluster: Cluster) -> tuple[FaultInjector, aiohttp.web.Application]:
    injector = FaultInjector(store=cluster)
    app = build_app(cluster)
    faults.install(app, injector)
    return injector, app


def test_a_rule_skips_its_first_matches_and_hits_the_next_one() -> None:
    async def main() -> list[int]:
        cluster = make_cluster()
        injector, app = served(cluster)
        async with InMemoryServer(app) as server, server.session() as session:
            injector.error(503, method="GET", path=f"^{WIDGETS}/w1$", skip=2, count=1)
            statuses = []
            for _ in range(4):
                async with session.get(f"{WIDGETS}/w1") as response:
                    statuses.append(response.status)
            return statuses

    assert virtualtime.run(main()) == [200, 200, 503, 200]


def test_a_stale_answer_per_object_is_its_state_before_its_latest_change() -> None:
    async def main() -> tuple[int, int, list[str]]:
        cluster = make_cluster()
        injector, app = served(cluster)
        async with InMemoryServer(app) as server, server.session() as session:
            await resize(session, 2)
            for index in range(3):  # other objects change meanwhile: a revision lag of 1 would show the latest
                async with session.post(CONFIGMAPS, json={"metadata": {"name": f"cm{index}"}}) as response:
                    assert response.status == 201
            injector.stale_read(1, per_object=True, resource="widgets", count=1)
            stale = await size_of(session)
            latest = await size_of(session)
            return stale, latest, injector.log

    stale, latest, log = virtualtime.run(main())
    assert (stale, latest) == (1, 2)
    assert log == ["0.000000 stale read (before the last 1 change(s) of what is read): GET " + f"{WIDGETS}/w1"]


def test_a_stale_list_per_object_misses_the_latest_selected_object() -> None:
    async def main() -> list[str]:
        cluster = make_cluster()
        injector, app = served(cluster)
        async with InMemoryServer(app) as server, server.session() as session:
            for name, labels in (("a", {"owner": "w1"}), ("b", {"owner": "w1"}), ("c", {"owner": "zz"})):
                async with session.post(CONFIGMAPS, json={"metadata": {"name": name, "labels": labels}}) as response:
                    assert response.status == 201
            injector.stale_read(1, per_object=True, path=f"^{CONFIGMAPS}$", count=1)
            async with session.get(CONFIGMAPS, params={"labelSelector": "owner=w1"}) as response:
                listing = await response.json()
            return [item["metadata"]["name"] for item in listing["items"]]

    assert virtualtime.run(main()) == ["a"]  # "b" was the latest of the selected ones; "c" is not selected


@pytest.mark.parametrize(
    ("coalesce", "expected"),
    [
        (True, [(2.0, "MODIFIED", 3)]),  # the state of size 2 is never seen
        (False, [(2.0, "MODIFIED", 2), (3.0, "MODIFIED", 3)]),  # seen late, alone, when size 3 is there already
    ],
)
def test_an_event_held_until_the_objects_next_one(coalesce: bool, expected: list[tuple[float, str, int]]) -> None:
    async def main() -> tuple[list[tuple[float, str, int]], list[str]]:
        cluster = make_cluster()
        injector, app = served(cluster)
        async with InMemoryServer(app) as server, server.session() as session:
            injector.hold_event("widgets", "default", "w1", coalesce=coalesce, window=30)
            watcher = asyncio.create_task(watch_lines(session, str(cluster.rv), until=20))
            await asyncio.sleep(1)
            await resize(session, 2)
            await asyncio.sleep(1)
            await resize(session, 3)
            return await watcher, injector.log

    seen, log = virtualtime.run(main())
    assert seen == expected
    assert log[0].startswith("1.000000 hold event (until the next one, ")
    assert ("coalesced away: MODIFIED default/w1" in log[-1]) == coalesce


@pytest.mark.parametrize("how", ["hold", "withhold"])
def test_an_object_deleted_and_made_anew_is_another_object_whose_events_never_coalesce_with_its(how: str) -> None:
    # A relist shows the new object only, but a watcher that tracks objects by uid (kopf) learns that the old one is
    # gone: its DELETED is seen, never coalesced away into the new one's ADDED (kopf then handled a deletion of the
    # old object late, after its consistency timeout, against the new one's children).
    async def main() -> list[tuple[float, str, int]]:
        cluster = make_cluster()
        injector, app = served(cluster)
        async with InMemoryServer(app) as server, server.session() as session:
            if how == "hold":
                injector.hold_event("widgets", "default", "w1", coalesce=True, window=5)
            else:
                injector.withhold_events(5, coalesce=True, resource="widgets")
            watcher = asyncio.create_task(watch_lines(session, str(cluster.rv), until=20))
            await asyncio.sleep(1)
            async with session.delete(f"{WIDGETS}/w1") as response:
                assert response.status == 200
            async with session.post(WIDGETS, json=widget("w1", size=7)) as response:
                assert response.status == 201
            return await watcher

    assert virtualtime.run(main()) == [(6.0, "DELETED", 1), (6.0, "ADDED", 7)]


def test_an_event_held_with_no_next_one_goes_out_after_its_window() -> None:
    async def main() -> list[tuple[float, str, int]]:
        cluster = make_cluster()
        injector, app = served(cluster)
        async with InMemoryServer(app) as server, server.session() as session:
            injector.hold_event("widgets", "default", "w1", skip=1, window=5)
            watcher = asyncio.create_task(watch_lines(session, str(cluster.rv), until=20))
            await resize(session, 2)  # skipped
            await asyncio.sleep(1)
            await resize(session, 3)  # held for 5 s, and nothing after it
            assert cluster.withheld() == 1  # settling waits for it
            return await watcher

    assert virtualtime.run(main()) == [(0.0, "MODIFIED", 2), (6.0, "MODIFIED", 3)]


def test_a_watch_expires_at_the_objects_event_instead_of_sending_it() -> None:
    async def main() -> tuple[list[tuple[str, object]], list[str], int]:
        cluster = make_cluster()
        injector, app = served(cluster)
        async with InMemoryServer(app) as server, server.session() as session:
            injector.expire_at_event("widgets", "default", "w1", skip=1)
            seen: list[tuple[str, object]] = []
            params = {"watch": "true", "resourceVersion": str(cluster.rv), "timeoutSeconds": "60"}
            async with session.get(WIDGETS, params=params) as response:
                await resize(session, 2)  # skipped: sent
                await resize(session, 3)  # never sent: the stream ends with a 410 there
                await resize(session, 4)  # nor anything after it
                async for line in response.content:
                    event = json.loads(line)
                    obj = event["object"]
                    seen.append((event["type"], obj["spec"]["size"] if event["type"] != "ERROR" else obj["code"]))
            return seen, injector.log, len(injector.injections)

    seen, log, injected = virtualtime.run(main())
    assert seen == [("MODIFIED", 2), ("ERROR", 410)]
    assert injected == 1
    assert "expire the watches at the event: MODIFIED widgets.acme.example default/w1" in log[0]
    assert "watch expired (410) instead of: MODIFIED default/w1" in log[1]


def test_holding_events_needs_the_store() -> None:
    with pytest.raises(RuntimeError, match="needs the injector's store"):
        FaultInjector().hold_event("widgets", "default", "w1")
    with pytest.raises(RuntimeError, match="needs the injector's store"):
        FaultInjector().expire_at_event("widgets", "default", "w1")
    with pytest.raises(ValueError, match="skip must be non-negative"):
        FaultInjector().error(500, skip=-1)
