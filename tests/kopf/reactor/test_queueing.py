"""The per-object queueing: routing, batching, concurrency limits, idling, exiting, stream pressure."""

import asyncio
import logging
from typing import Any

import aiohttp
import pytest

import kopf
from kopf._cogs.clients import auth
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.structs.credentials import ConnectionInfo, Vault
from kopf._core.intents.registries import OperatorRegistry
from kopf._core.reactor.queueing import watcher
from tests.helpers import wait_for

from .conftest import DIFFBASE, KEX, Objects, Operator

pytestmark = pytest.mark.looptime


class Recorder:
    """A fake processor: records the events per object; optionally slow."""

    def __init__(self, delay: float = 0) -> None:
        self.delay = delay
        self.events: list[tuple[str | None, str, Any]] = []
        self.started: list[float] = []  # the loop time at the start of every processing
        self.running = 0
        self.max_running = 0
        self.pressures: dict[str, asyncio.Event] = {}

    async def __call__(self, *, raw_event: Any, stream_pressure: asyncio.Event) -> None:
        self.started.append(asyncio.get_running_loop().time())
        self.running += 1
        self.max_running = max(self.max_running, self.running)
        try:
            name = raw_event["object"]["metadata"]["name"]
            self.pressures[name] = stream_pressure
            if self.delay:
                await asyncio.sleep(self.delay)
            self.events.append((raw_event["type"], name, raw_event["object"].get("spec", {}).get("x")))
        finally:
            self.running -= 1

    def names(self) -> list[str]:
        return [name for _, name, _ in self.events]


async def start(vault: Vault, settings: OperatorSettings, processor: Any) -> asyncio.Task[None]:
    task = asyncio.create_task(
        watcher(namespace="default", resource=KEX, settings=settings, processor=processor, vault=vault)
    )
    await asyncio.sleep(0.5)
    return task


async def stop(task: asyncio.Task[None]) -> None:
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


def own_tasks() -> set[asyncio.Task[Any]]:
    return {task for task in asyncio.all_tasks() if task.get_name().startswith("kopf worker")}


async def test_bursts_are_batched_and_the_latest_event_wins(
    vault: Vault,
    settings: OperatorSettings,
    objects: Objects,
) -> None:
    settings.batching.batch_window = 1.0
    recorder = Recorder()
    task = await start(vault, settings, recorder)
    try:
        objects.create("kex1", x=0)
        for i in range(1, 6):
            objects.patch("kex1", {"spec": {"x": i}})
        await wait_for(lambda: recorder.events)
        await asyncio.sleep(5)
        assert recorder.events == [("MODIFIED", "kex1", 5)]
    finally:
        await stop(task)


async def test_a_lone_event_is_processed_at_once_not_after_the_batching_window(
    vault: Vault,
    settings: OperatorSettings,
    objects: Objects,
) -> None:
    settings.batching.batch_window = 1.0
    recorder = Recorder()
    task = await start(vault, settings, recorder)
    try:
        loop = asyncio.get_running_loop()
        created = loop.time()
        objects.create("kex1", x=0)
        await wait_for(lambda: recorder.events)
        assert recorder.started[0] - created < 0.1
        assert recorder.events == [("ADDED", "kex1", 0)]
    finally:
        await stop(task)


async def test_events_queued_while_processing_are_batched_and_go_next(
    vault: Vault,
    settings: OperatorSettings,
    objects: Objects,
) -> None:
    settings.batching.batch_window = 1.0
    recorder = Recorder(delay=10)
    task = await start(vault, settings, recorder)
    try:
        objects.create("kex1", x=0)
        await wait_for(lambda: recorder.running)
        first = recorder.started[0]
        objects.patch("kex1", {"spec": {"x": 1}})  # a lone event while busy: processed right after
        await wait_for(lambda: len(recorder.started) == 2)
        assert recorder.started[1] - first < 10.1
        for i in (2, 3):  # two while busy (e.g. the echoes of a processing's two patches): the latest right after
            objects.patch("kex1", {"spec": {"x": i}})
        await wait_for(lambda: len(recorder.started) == 3)
        assert recorder.started[2] - first < 20.1
        for i in range(4, 8):  # a burst while busy: waited out for the window, then only its latest
            objects.patch("kex1", {"spec": {"x": i}})
        await wait_for(lambda: len(recorder.started) == 4)
        assert 30 + 1.0 <= recorder.started[3] - first < 30 + 1.1
        await asyncio.sleep(30)
        assert [x for _, _, x in recorder.events] == [0, 1, 3, 7]
    finally:
        await stop(task)


async def test_objects_are_processed_in_parallel_and_each_in_order(
    vault: Vault,
    settings: OperatorSettings,
    objects: Objects,
) -> None:
    settings.batching.batch_window = 0
    recorder = Recorder(delay=10)
    task = await start(vault, settings, recorder)
    try:
        objects.create("a", x=1)
        objects.create("b", x=1)
        await asyncio.sleep(1)
        objects.patch("a", {"spec": {"x": 2}})  # queued while the 1st event of "a" is being processed.
        await asyncio.sleep(0.5)
        assert recorder.pressures["a"].is_set()  # the processor of "a" is notified.
        assert not recorder.pressures["b"].is_set()
        await wait_for(lambda: len(recorder.events) == 3)
        assert recorder.max_running == 2
        assert [e for e in recorder.events if e[1] == "a"] == [("ADDED", "a", 1), ("MODIFIED", "a", 2)]
    finally:
        await stop(task)


@pytest.fixture
def turns_taken(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The orders of the turns taken by the new objects (see ``auth.take_turn``)."""
    taken: list[int] = []
    take_turn = auth.take_turn

    async def counted_take_turn(order: int, **kwargs: Any) -> Any:
        taken.append(order)
        return await take_turn(order, **kwargs)

    monkeypatch.setattr(auth, "take_turn", counted_take_turn)
    return taken


async def test_workers_exit_at_once_when_idle_and_their_objects_stay_in_work_for_the_idle_timeout(
    vault: Vault,
    settings: OperatorSettings,
    objects: Objects,
    turns_taken: list[int],
) -> None:
    settings.batching.idle_timeout = 30
    recorder = Recorder()
    task = await start(vault, settings, recorder)
    try:
        objects.create("a", x=1)
        await wait_for(lambda: recorder.events)
        await asyncio.sleep(0)  # the worker's return
        assert own_tasks() == set()  # no task idles: an idle object costs its queue only
        assert len(turns_taken) == 1

        await asyncio.sleep(20)
        objects.patch("a", {"spec": {"x": 2}})  # still in work: a new worker at once, with no turn to take
        await wait_for(lambda: len(recorder.events) == 2)
        assert len(turns_taken) == 1

        await asyncio.sleep(31)
        objects.patch("a", {"spec": {"x": 3}})  # forgotten: its turn as a new object's
        await wait_for(lambda: len(recorder.events) == 3)
        assert len(turns_taken) == 2
        assert recorder.events == [("ADDED", "a", 1), ("MODIFIED", "a", 2), ("MODIFIED", "a", 3)]
    finally:
        await stop(task)


async def test_without_an_idle_timeout_objects_stay_in_work_while_the_watcher_runs(
    vault: Vault,
    settings: OperatorSettings,
    objects: Objects,
    turns_taken: list[int],
) -> None:
    settings.batching.idle_timeout = None  # type: ignore[assignment]  # as asyncio.timeout(None): forever
    recorder = Recorder()
    task = await start(vault, settings, recorder)
    try:
        objects.create("a", x=1)
        await wait_for(lambda: recorder.events)
        await asyncio.sleep(100_000)
        objects.patch("a", {"spec": {"x": 2}})
        await wait_for(lambda: len(recorder.events) == 2)
        assert len(turns_taken) == 1
        assert own_tasks() == set()
    finally:
        await stop(task)


async def test_exiting_waits_for_the_workers_then_cancels_them(
    vault: Vault,
    settings: OperatorSettings,
    objects: Objects,
) -> None:
    loop = asyncio.get_running_loop()
    settings.batching.exit_timeout = 7
    finished: list[str] = []
    cancelled: list[str] = []

    async def processor(*, raw_event: Any, stream_pressure: asyncio.Event) -> None:
        name = raw_event["object"]["metadata"]["name"]
        try:
            await asyncio.sleep(5 if name == "quick" else 100)
            finished.append(name)
        except asyncio.CancelledError:
            cancelled.append(name)
            raise

    task = await start(vault, settings, processor)
    objects.create("quick")
    objects.create("slow")
    await asyncio.sleep(1)
    started = loop.time()
    await stop(task)
    assert 6.9 <= loop.time() - started <= 7.5
    assert finished == ["quick"]
    assert cancelled == ["slow"]
    assert own_tasks() == set()


async def test_processing_errors_do_not_stop_the_watcher(
    vault: Vault,
    settings: OperatorSettings,
    objects: Objects,
    caplog: pytest.LogCaptureFixture,
) -> None:
    settings.batching.error_delays = []  # no throttling.
    calls: list[str] = []

    async def processor(*, raw_event: Any, stream_pressure: asyncio.Event) -> None:
        calls.append(raw_event["object"]["metadata"]["name"])
        raise RuntimeError("boom")

    task = await start(vault, settings, processor)
    try:
        objects.create("a")
        objects.create("b")
        await wait_for(lambda: len(calls) == 2)
        assert not task.done()
        assert "Processing has failed with an unexpected error: RuntimeError('boom')" in caplog.text  # per object
    finally:
        await stop(task)


async def test_one_thousand_objects_with_a_limited_number_of_workers(
    vault: Vault,
    settings: OperatorSettings,
    registry: OperatorRegistry,
    objects: Objects,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="kopf")  # the debug logs of 1000 objects are too costly.
    settings.batching.worker_limit = 10
    running = 0
    max_running = 0
    handled: set[str] = set()

    @kopf.on.create("kopfexamples", registry=registry)
    async def create_fn(name: str, **_: Any) -> None:
        nonlocal running, max_running
        running += 1
        max_running = max(max_running, running)
        try:
            await asyncio.sleep(1)
            handled.add(name)
        finally:
            running -= 1

    for i in range(1000):
        objects.create(f"kex{i:04d}", index=i)

    operator = Operator(vault=vault, settings=settings, registry=registry)
    operator.start()
    try:
        await wait_for(lambda: len(handled) == 1000, timeout=1000)
        await wait_for(
            lambda: all(DIFFBASE in objects.annotations(f"kex{i:04d}") for i in range(1000)), timeout=100, step=1
        )
    finally:
        await operator.stop()
    assert max_running == 10
    assert len(operator.memories) == 1000
    # Without daemons or timers, the objects keep no memory for them (~0.6 KB each at 10,000 objects).
    assert not any("daemons" in memory.extras for memory in operator.memories.iter_all_memories())


async def test_new_objects_wait_while_more_requests_queue_than_slots_but_known_objects_go_on(
    vault: Vault,
    settings: OperatorSettings,
    objects: Objects,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(auth, "MAX_CONCURRENT_REQUESTS", 1)
    settings.batching.idle_timeout = 1000
    recorder = Recorder()
    objects.create("known", x=0)
    task = await start(vault, settings, recorder)
    release = asyncio.Event()

    async def hold(info: ConnectionInfo, session: aiohttp.ClientSession) -> None:
        await release.wait()

    try:
        await wait_for(lambda: recorder.names() == ["known"])
        congestion = [asyncio.create_task(auth.authenticated(hold, vault=vault)) for _ in range(3)]
        await asyncio.sleep(1)  # 1 request in its slot, 2 waiting for it: more than the slots
        objects.create("new", x=1)
        objects.patch("known", {"spec": {"x": 2}})
        await wait_for(lambda: ("MODIFIED", "known", 2) in recorder.events)
        await asyncio.sleep(10)
        assert "new" not in recorder.names()  # its worker waits for its turn, with only its event
        release.set()
        await asyncio.gather(*congestion)
        await wait_for(lambda: "new" in recorder.names())
    finally:
        release.set()
        await stop(task)


async def test_a_burst_of_new_objects_goes_on_a_few_at_a_time(
    vault: Vault,
    settings: OperatorSettings,
    objects: Objects,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(auth, "MAX_CONCURRENT_REQUESTS", 1)  # so, 2 new objects' processings at once
    recorder = Recorder(delay=0.1)  # each well within the lapse of a turn
    for i in range(6):
        objects.create(f"kex{i}", x=i)
    task = await start(vault, settings, recorder)
    try:
        await wait_for(lambda: len(recorder.events) == 6)
    finally:
        await stop(task)
    assert recorder.max_running == 2
    assert sorted(recorder.names()) == [f"kex{i}" for i in range(6)]


async def test_new_objects_slow_in_their_processing_hold_up_the_next_ones_for_a_while_only(
    vault: Vault,
    settings: OperatorSettings,
    objects: Objects,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(auth, "MAX_CONCURRENT_REQUESTS", 1)
    recorder = Recorder(delay=1000)  # e.g. handlers sleeping for long
    for i in range(5):
        objects.create(f"kex{i}", x=i)
    task = await start(vault, settings, recorder)
    try:
        await asyncio.sleep(auth.TURN_LAPSE / 2)
        assert recorder.running == 2
        await asyncio.sleep(auth.TURN_LAPSE)
        assert recorder.running == 4
        await asyncio.sleep(auth.TURN_LAPSE)
        assert recorder.running == 5
    finally:
        await stop(task)


async def test_new_objects_wait_for_their_turn_without_workers_and_with_their_latest_event_only(
    vault: Vault,
    settings: OperatorSettings,
    objects: Objects,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(auth, "MAX_CONCURRENT_REQUESTS", 1)  # so, 2 new objects' processings at once
    recorder = Recorder(delay=auth.TURN_LAPSE * 0.8)  # with the batching window, within the lapse
    for i in range(10):
        objects.create(f"kex{i}", x=i)
    task = await start(vault, settings, recorder)
    try:
        assert len(own_tasks()) <= 2  # the other 8 wait with their events, not as tasks
        objects.patch("kex9", {"spec": {"x": 90}})  # the watch-stream goes on meanwhile
        objects.patch("kex9", {"spec": {"x": 99}})
        await wait_for(lambda: len(recorder.events) == 10)
    finally:
        await stop(task)
    assert recorder.max_running == 2
    assert [(type_, x) for type_, name, x in recorder.events if name == "kex9"] == [("MODIFIED", 99)]


async def test_events_superseded_while_waiting_for_a_turn_are_no_burst(
    vault: Vault,
    settings: OperatorSettings,
    objects: Objects,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(auth, "MAX_CONCURRENT_REQUESTS", 1)  # so, 2 new objects' processings at once
    settings.batching.batch_window = 1.0
    recorder = Recorder(delay=0.9)  # within the turns' lapse
    for i in range(3):
        objects.create(f"kex{i}", x=i)
    task = await start(vault, settings, recorder)  # (0.5 s: the first two are being processed)
    try:
        for x in (20, 21, 22, 23):  # while kex2 waits for its turn: the operator's backlog, not the writer's burst
            objects.patch("kex2", {"spec": {"x": x}})
        await wait_for(lambda: len(recorder.events) == 3)
    finally:
        await stop(task)
    assert recorder.events[-1] == ("MODIFIED", "kex2", 23)
    assert recorder.started[2] - recorder.started[0] < 0.9 + 0.1  # right after the first ones, not a window later


async def test_a_backlog_gives_its_items_in_order_and_wakes_its_waiting_consumer() -> None:
    from kopf._core.reactor.queueing import EOS, Backlog

    backlog = Backlog()
    assert backlog.empty()
    with pytest.raises(asyncio.QueueEmpty):
        backlog.get_nowait()
    getter = asyncio.create_task(backlog.get())
    await asyncio.sleep(0)
    assert not getter.done()
    first: Any = {"type": "ADDED", "object": {}}
    backlog.put_nowait(first)
    backlog.put_nowait(EOS)
    assert await getter is first
    assert backlog.get_nowait() is EOS
    assert backlog.empty()


async def test_a_backlog_keeps_only_the_newest_of_the_waiting_events_and_the_end_of_stream_last() -> None:
    from kopf._core.reactor.queueing import EOS, Backlog

    backlog = Backlog()
    older: Any = {"type": "ADDED", "object": {}}
    newer: Any = {"type": "MODIFIED", "object": {}}
    newest: Any = {"type": "DELETED", "object": {}}
    backlog.put_nowait(older)
    backlog.put_nowait(newer)  # the older one is dropped: the worker would skip it anyway
    backlog.put_nowait(EOS)
    backlog.put_nowait(newest)  # after the end of the stream: kept after it
    assert backlog.get_nowait() is newer
    assert backlog.get_nowait() is EOS
    assert backlog.get_nowait() is newest
    assert backlog.empty()


async def test_a_backlog_keeps_the_item_if_its_consumer_is_cancelled_after_the_wake_up() -> None:
    from kopf._core.reactor.queueing import Backlog

    backlog = Backlog()
    getter = asyncio.create_task(backlog.get())
    await asyncio.sleep(0)
    item: Any = {"type": "MODIFIED", "object": {}}
    backlog.put_nowait(item)  # wakes the getter, which is cancelled before it runs: nothing is lost
    getter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await getter
    assert not backlog.empty()
    assert await asyncio.wait_for(backlog.get(), timeout=1) is item


async def test_the_pressure_flag_wakes_its_waiters_and_forgets_the_cancelled_ones() -> None:
    from kopf._core.reactor.queueing import Pressure

    pressure = Pressure()
    assert not pressure.is_set()
    waiters = [asyncio.create_task(pressure.wait()) for _ in range(2)]
    cancelled = asyncio.create_task(pressure.wait())
    await asyncio.sleep(0)
    assert not any(waiter.done() for waiter in [*waiters, cancelled])
    cancelled.cancel()
    await asyncio.gather(cancelled, return_exceptions=True)
    pressure.set()
    assert pressure.is_set()
    assert await asyncio.gather(*waiters) == [True, True]
    assert await pressure.wait()  # already set: at once
    pressure.clear()
    assert not pressure.is_set()
    late = asyncio.create_task(pressure.wait())
    await asyncio.sleep(0)
    assert not late.done()
    pressure.set()
    assert await late
