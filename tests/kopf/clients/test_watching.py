import asyncio
import contextlib
import dataclasses
import gc
import logging
import weakref
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from kopf._cogs.clients import errors, fetching, watching
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.structs.credentials import Vault
from kopf_sim.store.cluster import Cluster
from tests.helpers import widget

from .conftest import WIDGETS, Recorder, status_response

pytestmark = pytest.mark.looptime

MERGE = "application/merge-patch+json"


class Collector:
    """Runs a watcher in the background and collects its events: (type, name, size)."""

    def __init__(self) -> None:
        self.events: list[Any] = []
        self.stop = asyncio.Event()
        self.paused = watching.Toggle()
        self.arrived = asyncio.Condition()

    async def add(self, event: Any) -> None:
        async with self.arrived:
            self.events.append(event)
            self.arrived.notify_all()

    def summary(self) -> list[Any]:
        return [
            event
            if isinstance(event, watching.Bookmark)
            else (event["type"], event["object"]["metadata"]["name"], event["object"].get("spec", {}).get("size"))
            for event in self.events
        ]

    async def wait_for(self, count: int, timeout: float = 100) -> None:
        async with asyncio.timeout(timeout), self.arrived:
            await self.arrived.wait_for(lambda: len(self.events) >= count)


@contextlib.asynccontextmanager
async def watching_in_background(vault: Vault, settings: OperatorSettings, **kwargs: Any) -> AsyncIterator[Collector]:
    collector = Collector()

    async def run() -> None:
        async for event in watching.infinite_watch(
            resource=WIDGETS,
            namespace="default",
            settings=settings,
            vault=vault,
            markers=True,
            stop=collector.stop,
            operator_paused=collector.paused,
            **kwargs,
        ):
            await collector.add(event)

    task = asyncio.create_task(run())
    try:
        yield collector
    finally:
        collector.stop.set()
        await asyncio.wait_for(task, timeout=10)  # must exit by the stop-flag, not by cancellation


def ops(cluster: Cluster) -> tuple[Callable[..., None], Callable[..., None], Callable[..., None]]:
    rtype = cluster.resource("acme.example", "v1", "widgets")

    def create(name: str, size: int = 0, **kwargs: Any) -> None:
        body = widget(name, size=size)
        body["metadata"].update(kwargs)
        cluster.create(rtype, "default", body)

    def modify(name: str, size: int) -> None:
        cluster.patch(rtype, "default", name, {"spec": {"size": size}}, MERGE)

    def delete(name: str) -> None:
        cluster.delete(rtype, "default", name)

    return create, modify, delete


async def test_listing_then_watching(cluster: Cluster, vault: Vault, settings: OperatorSettings) -> None:
    create, modify, delete = ops(cluster)
    create("a", 1)
    create("b", 2)
    async with watching_in_background(vault, settings) as collector:
        await collector.wait_for(3)
        create("c", 3)
        modify("a", 10)
        delete("b")
        await collector.wait_for(6)
    assert collector.summary() == [
        (None, "a", 1),
        (None, "b", 2),
        watching.Bookmark.LISTED,
        ("ADDED", "c", 3),
        ("MODIFIED", "a", 10),
        ("DELETED", "b", 2),
    ]


async def test_resuming_after_dropped_streams_without_losses_or_duplicates(
    cluster: Cluster, vault: Vault, settings: OperatorSettings, recorder: Recorder
) -> None:
    create, modify, _ = ops(cluster)
    create("a", 1)
    async with watching_in_background(vault, settings) as collector:
        await collector.wait_for(2)
        await asyncio.sleep(1)  # let the first watch-stream start
        for round in range(5):
            modify("a", round)
            cluster.close_watches()  # drop the stream server-side
            create(f"x{round}", round)  # changed while disconnected
            await asyncio.sleep(1)
        await collector.wait_for(12)
        await asyncio.sleep(10)
    assert collector.summary() == [(None, "a", 1), watching.Bookmark.LISTED] + [
        event for round in range(5) for event in (("MODIFIED", "a", round), ("ADDED", f"x{round}", round))
    ]
    lists = [q for m, p, q in recorder.requests if p.endswith("/widgets") and "watch" not in q]
    watches = [q for m, p, q in recorder.requests if p.endswith("/widgets") and "watch=true" in q]
    assert len(lists) == 1
    assert len(watches) == 6
    assert all("resourceVersion=" in q and "allowWatchBookmarks=true" in q for q in watches)


async def test_expired_version_in_stream_leads_to_a_relisting_with_differences(
    cluster: Cluster, vault: Vault, settings: OperatorSettings, recorder: Recorder
) -> None:
    create, modify, delete = ops(cluster)
    create("keep", 1)
    create("change", 2)
    create("gone", 3)
    async with watching_in_background(vault, settings) as collector:
        await collector.wait_for(4)
        await asyncio.sleep(1)  # the stream is open
        cluster.close_watches()  # dropped server-side: the changes below come while it reconnects
        modify("change", 20)
        delete("gone")
        create("new", 4)
        cluster.compact()  # the watcher's last version is now expired: 410 on reconnecting
        await collector.wait_for(7)
        create("after", 5)
        await collector.wait_for(8)
    assert collector.summary()[4:] == [  # as listed (None), as the published Kopf yields the objects of a listing
        (None, "change", 20),
        (None, "new", 4),
        ("DELETED", "gone", 3),
        ("ADDED", "after", 5),
    ]
    lists = [q for m, p, q in recorder.requests if p.endswith("/widgets") and "watch" not in q]
    assert len(lists) == 2


async def delete_while_paused(collector: Collector, cluster: Cluster, delete: Callable[..., None], *names: str) -> None:
    """Delete the objects while the watcher is paused and its version expires; wait for their DELETED events."""
    count = len(collector.events)
    await collector.paused.turn_to(True)
    await asyncio.sleep(1)
    for name in names:
        delete(name)
    cluster.compact()
    await collector.paused.turn_to(False)
    await collector.wait_for(count + len(names))


async def test_a_relisting_deletes_with_the_last_body_seen_not_as_its_consumer_changed_it(
    cluster: Cluster, vault: Vault, settings: OperatorSettings, recorder: Recorder
) -> None:
    create, modify, delete = ops(cluster)
    create("listed", 1)
    create("watched", 2)
    async with watching_in_background(vault, settings) as collector:
        await collector.wait_for(3)
        modify("watched", 20)
        await collector.wait_for(4)
        for event in collector.events:  # e.g. an operator's handlers editing the bodies they got
            if not isinstance(event, watching.Bookmark):
                event["object"]["spec"]["size"] = -1
        await delete_while_paused(collector, cluster, delete, "listed", "watched")
    assert sorted(collector.summary()[4:]) == [("DELETED", "listed", 1), ("DELETED", "watched", 20)]


async def test_a_relisting_without_the_whole_bodies_deletes_with_what_identifies_the_objects(
    cluster: Cluster, vault: Vault, settings: OperatorSettings, recorder: Recorder
) -> None:
    create, modify, delete = ops(cluster)
    create("listed", 1)
    create("watched", 2)
    async with watching_in_background(vault, settings, whole_bodies=False) as collector:
        await collector.wait_for(3)
        modify("watched", 20)
        await collector.wait_for(4)
        seen = {
            event["object"]["metadata"]["name"]: event["object"]  # the latest ones win
            for event in collector.events
            if not isinstance(event, watching.Bookmark)
        }
        before = len(collector.events)
        await delete_while_paused(collector, cluster, delete, "listed", "watched")
    deleted = {event["object"]["metadata"]["name"]: event for event in collector.events[before:]}
    assert set(deleted) == {"listed", "watched"}
    for name, event in deleted.items():
        metadata = seen[name]["metadata"]
        assert event["type"] == "DELETED"
        assert event["object"] == {
            "apiVersion": "acme.example/v1",
            "kind": "Widget",
            "metadata": {
                "name": name,
                "namespace": "default",
                "uid": metadata["uid"],
                "resourceVersion": metadata["resourceVersion"],
            },
        }


def test_the_watch_state_keeps_whole_bodies_only_if_asked() -> None:
    body = widget("w", size=1)
    body["metadata"].update(uid="u1", resourceVersion="5")
    whole, identities = watching.WatchState(), watching.WatchState(whole_bodies=False)
    for state in (whole, identities):
        assert state.remember("ADDED", body)
    assert whole.forget("u1") == body
    assert identities.forget("u1") == {
        "apiVersion": body["apiVersion"],
        "kind": body["kind"],
        "metadata": {"name": "w", "namespace": body["metadata"]["namespace"], "uid": "u1", "resourceVersion": "5"},
    }


async def test_the_listed_bodies_are_not_kept_by_the_watch_once_consumed(
    cluster: Cluster, vault: Vault, settings: OperatorSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Body(dict[str, Any]):  # unlike a dict, can be weakly referenced
        pass

    listed: list[weakref.ref[Body]] = []
    list_pages = fetching.list_pages

    async def tracked_list_pages(**kwargs: Any) -> AsyncIterator[fetching.ListingPage]:
        async for page in list_pages(**kwargs):
            bodies = [Body(item) for item in page.items]
            listed.extend(weakref.ref(body) for body in bodies)
            yield dataclasses.replace(page, items=bodies)

    monkeypatch.setattr(fetching, "list_pages", tracked_list_pages)
    create, _, _ = ops(cluster)
    create("a", 1)
    create("b", 2)
    async with watching_in_background(vault, settings) as collector:
        await collector.wait_for(3)
        collector.events.clear()  # the consumer is done with them (e.g. the objects' workers have idled out)
        await asyncio.sleep(1)
        gc.collect()
        assert [ref() for ref in listed] == [None, None]  # while the watch goes on


async def test_the_first_listing_goes_chunk_by_chunk_as_the_chunks_come(
    cluster: Cluster, vault: Vault, settings: OperatorSettings, recorder: Recorder
) -> None:
    create, _, _ = ops(cluster)
    for i in range(5):
        create(f"o{i}", i)
    settings.watching.chunk_size = 2
    stream = watching.continuous_watch(resource=WIDGETS, namespace="default", settings=settings, vault=vault)
    async with contextlib.aclosing(stream):
        first = await anext(stream)
        listings = [q for m, p, q in recorder.requests if p.endswith("/widgets") and "watch" not in q]
        assert len(listings) == 1  # the first object goes to work before the next chunk is asked for
        assert not isinstance(first, watching.Bookmark)
        assert (first["type"], first["object"]["metadata"]["name"]) == (None, "o0")


async def test_a_first_listing_restarted_midway_brings_no_duplicates_and_deletes_the_gone(
    cluster: Cluster, vault: Vault, settings: OperatorSettings, recorder: Recorder
) -> None:
    create, modify, delete = ops(cluster)
    for i in range(5):
        create(f"o{i}", i)
    settings.watching.chunk_size = 2

    def meanwhile(request: Any) -> bool:  # the first chunk is out; its continue token expires, and changes come
        if "continue" not in request.query:
            return False
        delete("o0")
        modify("o1", 10)
        cluster.compact()
        return True

    recorder.fail(1, status_response(410, "Expired"), when=meanwhile)
    async with watching_in_background(vault, settings) as collector:
        await collector.wait_for(7)
    assert collector.summary() == [
        (None, "o0", 0),
        (None, "o1", 1),
        (None, "o1", 10),  # listed again after the restart: changed meanwhile
        (None, "o2", 2),
        (None, "o3", 3),
        (None, "o4", 4),
        ("DELETED", "o0", 0),  # gone meanwhile
        watching.Bookmark.LISTED,
    ]


async def test_expired_version_as_http_410_leads_to_a_relisting(
    cluster: Cluster, vault: Vault, settings: OperatorSettings, recorder: Recorder
) -> None:
    create, _, _ = ops(cluster)
    create("a", 1)
    recorder.fail(1, status_response(410, "Expired"), when=lambda r: r.query.get("watch") == "true")
    async with watching_in_background(vault, settings) as collector:
        await collector.wait_for(2)
        await asyncio.sleep(1)
        create("b", 2)
        await collector.wait_for(3)
    assert collector.summary() == [(None, "a", 1), watching.Bookmark.LISTED, ("ADDED", "b", 2)]
    lists = [q for m, p, q in recorder.requests if p.endswith("/widgets") and "watch" not in q]
    assert len(lists) == 2


async def test_server_timeout_and_reconnect_backoff(
    cluster: Cluster, vault: Vault, settings: OperatorSettings, recorder: Recorder
) -> None:
    settings.watching.server_timeout = 100
    settings.watching.reconnect_backoff = 5
    loop = asyncio.get_running_loop()
    start = loop.time()
    async with watching_in_background(vault, settings) as collector:
        await collector.wait_for(1)
        await asyncio.sleep(330)
    watches = [q for m, p, q in recorder.requests if "watch=true" in q]
    assert all("timeoutSeconds=100" in q for q in watches)
    assert len(watches) == 4  # at 0, 105, 210, 315
    assert loop.time() - start >= 330


async def test_inactivity_timeout_restarts_the_stream(
    cluster: Cluster, vault: Vault, settings: OperatorSettings, recorder: Recorder
) -> None:
    settings.watching.inactivity_timeout = 30  # the simulator's bookmarks come every 60 s
    settings.watching.reconnect_backoff = 0
    async with watching_in_background(vault, settings) as collector:
        await collector.wait_for(1)
        await asyncio.sleep(100)
    watches = [q for m, p, q in recorder.requests if "watch=true" in q]
    assert len(watches) == 4  # at 0, 30, 60, 90


async def test_client_timeout_restarts_the_stream(
    cluster: Cluster, vault: Vault, settings: OperatorSettings, recorder: Recorder
) -> None:
    settings.watching.client_timeout = 45
    settings.watching.reconnect_backoff = 0
    create, _, _ = ops(cluster)
    async with watching_in_background(vault, settings) as collector:
        await collector.wait_for(1)
        await asyncio.sleep(100)
        create("late", 1)
        await collector.wait_for(2)
    watches = [q for m, p, q in recorder.requests if "watch=true" in q]
    assert len(watches) == 3  # at 0, 45, 90
    assert collector.summary()[-1] == ("ADDED", "late", 1)


async def test_label_selectors_are_pushed_to_the_server(
    cluster: Cluster, vault: Vault, settings: OperatorSettings, recorder: Recorder
) -> None:
    create, _, _ = ops(cluster)
    create("red", 1, labels={"color": "red"})
    create("blue", 2, labels={"color": "blue"})
    async with watching_in_background(vault, settings, label_selector={"color": "red"}) as collector:
        await collector.wait_for(2)
        create("red2", 3, labels={"color": "red"})
        create("blue2", 4, labels={"color": "blue"})
        await collector.wait_for(3)
        await asyncio.sleep(1)
    assert collector.summary() == [(None, "red", 1), watching.Bookmark.LISTED, ("ADDED", "red2", 3)]
    widget_requests = [q for m, p, q in recorder.requests if p.endswith("/widgets")]
    assert all("labelSelector=color%3Dred" in q for q in widget_requests)


async def test_pausing_closes_the_stream_and_resumes_with_everything_listed_anew(
    cluster: Cluster, vault: Vault, settings: OperatorSettings, recorder: Recorder
) -> None:
    """As at the start: the unchanged objects come again too (the pause has stopped their daemons & timers)."""
    create, _, delete = ops(cluster)
    create("before", 0)
    create("gone", 2)
    async with watching_in_background(vault, settings) as collector:
        await collector.wait_for(3)
        await collector.paused.turn_to(True)
        await asyncio.sleep(10)
        create("during", 1)
        delete("gone")
        await asyncio.sleep(10)
        assert len(collector.events) == 3
        await collector.paused.turn_to(False)
        await collector.wait_for(6)
        await asyncio.sleep(10)
    assert collector.summary() == [
        (None, "before", 0),
        (None, "gone", 2),
        watching.Bookmark.LISTED,
        (None, "before", 0),
        (None, "during", 1),
        ("DELETED", "gone", 2),
    ]
    lists = [q for m, p, q in recorder.requests if p.endswith("/widgets") and "watch" not in q]
    assert len(lists) == 2


async def test_no_events_are_yielded_once_the_pause_is_on(
    cluster: Cluster, vault: Vault, settings: OperatorSettings
) -> None:
    """Found by the compatibility check: an object created right after "Pausing operations" was still handled.

    The stream is closed by a waiter task that runs a moment after the pause begins; an event that arrives in that
    moment must not be yielded (the object comes with the listing after resuming).
    """
    create, _, _ = ops(cluster)
    async with watching_in_background(vault, settings) as collector:
        await collector.wait_for(1)
        await asyncio.sleep(1)  # let the watch-stream start
        await collector.paused.turn_to(True)
        create("during", 1)
        await asyncio.sleep(10)
        assert collector.summary() == [watching.Bookmark.LISTED]
        await collector.paused.turn_to(False)
        await collector.wait_for(2)
        await asyncio.sleep(10)
    assert collector.summary() == [watching.Bookmark.LISTED, (None, "during", 1)]


async def test_stop_flag_ends_the_watch_promptly(cluster: Cluster, vault: Vault, settings: OperatorSettings) -> None:
    loop = asyncio.get_running_loop()
    async with watching_in_background(vault, settings) as collector:
        await collector.wait_for(1)
        start = loop.time()
    assert loop.time() - start < 1


async def test_api_errors_of_watching_escalate(
    cluster: Cluster, vault: Vault, settings: OperatorSettings, recorder: Recorder
) -> None:
    recorder.fail(1, status_response(403, "Forbidden"), when=lambda r: r.query.get("watch") == "true")
    with pytest.raises(errors.APIForbiddenError):
        async for _ in watching.infinite_watch(resource=WIDGETS, namespace="default", settings=settings, vault=vault):
            pass


async def test_in_stream_errors_other_than_410_reconnect(
    cluster: Cluster, vault: Vault, settings: OperatorSettings, recorder: Recorder, caplog: pytest.LogCaptureFixture
) -> None:
    from aiohttp import web

    line = b'{"type": "ERROR", "object": {"kind": "Status", "code": 500, "message": "etcd hiccup"}}\n'
    recorder.fail(
        1,
        lambda: web.Response(body=line, content_type="application/json"),
        when=lambda r: r.query.get("watch") == "true",
    )
    create, _, _ = ops(cluster)
    caplog.set_level(logging.WARNING)
    async with watching_in_background(vault, settings) as collector:
        await collector.wait_for(1)
        await asyncio.sleep(1)
        create("a", 1)
        await collector.wait_for(2)
    assert collector.summary() == [watching.Bookmark.LISTED, ("ADDED", "a", 1)]
    assert "etcd hiccup" in caplog.text


def test_toggle_repr() -> None:
    assert repr(watching.Toggle(True)) == "<Toggle: on>"
    assert watching.Toggle().is_off()


async def test_a_cancellation_while_a_stream_ends_is_not_swallowed(
    cluster: Cluster, vault: Vault, settings: OperatorSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by the checks' long run: an operator's graceful stop hung forever (a new watch-stream was started).

    The watcher was cancelled while its ended stream waited for its interruption waiter to finish; that cancellation
    was suppressed, and the watching went on. Here, the waiter takes a second to finish, to widen that moment.
    """

    async def slow_to_finish(stop: Any, paused: Any) -> None:
        try:
            await asyncio.Event().wait()
        finally:
            await asyncio.sleep(1)

    monkeypatch.setattr(watching, "_interrupted", slow_to_finish)
    create, _, _ = ops(cluster)
    create("a", 1)
    events: list[Any] = []

    async def run() -> None:
        async for event in watching.infinite_watch(
            resource=WIDGETS, namespace="default", settings=settings, vault=vault
        ):
            events.append(event)

    task = asyncio.create_task(run())
    await asyncio.sleep(5)  # listed, and watching
    assert [event["object"]["metadata"]["name"] for event in events] == ["a"]
    cluster.close_watches()  # the stream ends: its waiter is being cancelled for a second
    await asyncio.sleep(0.5)
    task.cancel()
    try:
        done, _ = await asyncio.wait([task], timeout=10)
        assert done and task.cancelled()
    finally:
        while not task.done():  # with that bug, a second cancellation ends it (the new stream is not ending)
            task.cancel()
            await asyncio.wait([task], timeout=1)
