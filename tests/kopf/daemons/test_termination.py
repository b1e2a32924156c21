"""Terminating the daemons (graceful, cancelled, abandoned, polled forever), and the operator-level stopping."""

import asyncio
import logging
import threading
import time
from typing import Any

import pytest

from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.structs.ephemera import Memo
from kopf._core.engines.daemons import (
    DaemonsMemory,
    DaemonStopped,
    DaemonStoppingReason,
    SyncDaemonStopped,
    daemon_killer,
    spawn_daemons,
    stop_all,
    stop_daemons,
)
from tests.helpers import wait_for

from ..spawning_helpers import LOGGER, RESOURCE, PatchSink, daemon_handler, make_body
from .helpers import looptime, spawn

# Termination: graceful, cancelled, abandoned, polled forever.


@looptime
async def test_graceful_exit_on_deletion_touches_the_object() -> None:
    reasons: list[DaemonStoppingReason] = []

    async def fn(stopped: DaemonStopped, **_: Any) -> None:
        while not stopped:
            await stopped.wait(10)
        await asyncio.sleep(3)  # some cleanup.
        reasons.append(stopped.reason)

    memory = DaemonsMemory()
    sink = PatchSink()
    settings = OperatorSettings()
    await spawn([daemon_handler(fn)], memory, sink=sink, settings=settings)
    await asyncio.sleep(1)
    delay = await stop_daemons(settings=settings, memory=memory, patch_sink=sink)
    assert delay == settings.background.cancellation_polling  # no timeout: polling.
    await asyncio.sleep(3.5)
    assert reasons == [DaemonStoppingReason.RESOURCE_DELETED]
    assert not memory.running
    assert sink.touches == 1  # so that the reactor re-checks the finalizer.
    assert await stop_daemons(settings=settings, memory=memory, patch_sink=sink) is None


@looptime
async def test_async_daemon_ignoring_the_flag_is_cancelled_after_backoff() -> None:
    loop = asyncio.get_running_loop()
    cancelled: list[float] = []

    async def fn(**_: Any) -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append(loop.time())
            raise

    memory = DaemonsMemory()
    settings = OperatorSettings()
    await spawn([daemon_handler(fn, cancellation_backoff=2, cancellation_timeout=5)], memory, settings=settings)
    await asyncio.sleep(1)
    start = loop.time()
    delay = await stop_daemons(settings=settings, memory=memory)
    assert delay == pytest.approx(7)
    await asyncio.sleep(1.9)
    assert not cancelled and memory.running
    await asyncio.sleep(0.2)
    assert cancelled == [pytest.approx(start + 2)]
    assert not memory.running
    assert await stop_daemons(settings=settings, memory=memory) is None


@looptime
async def test_async_daemon_cancelled_at_once_with_timeout_and_no_backoff() -> None:
    loop = asyncio.get_running_loop()
    cancelled: list[float] = []

    async def fn(**_: Any) -> None:
        try:
            await asyncio.sleep(1000)
        except asyncio.CancelledError:
            cancelled.append(loop.time())
            raise

    memory = DaemonsMemory()
    await spawn([daemon_handler(fn, cancellation_timeout=1)], memory)
    await asyncio.sleep(1)
    start = loop.time()
    await stop_all([memory], settings=OperatorSettings())
    assert cancelled == [pytest.approx(start)]


@looptime
async def test_async_daemon_resisting_cancellation_is_abandoned_after_timeout(
    caplog: pytest.LogCaptureFixture,
) -> None:
    loop = asyncio.get_running_loop()
    release = asyncio.Event()
    reasons: list[DaemonStoppingReason] = []

    async def fn(stopped: DaemonStopped, **_: Any) -> None:
        while not release.is_set():
            try:
                await release.wait()
            except asyncio.CancelledError:
                reasons.append(stopped.reason)  # and go on: a disobedient daemon.

    memory = DaemonsMemory()
    sink = PatchSink()
    settings = OperatorSettings()
    caplog.set_level(logging.WARNING)
    await spawn(
        [daemon_handler(fn, cancellation_backoff=1, cancellation_timeout=5)], memory, sink=sink, settings=settings
    )
    await asyncio.sleep(1)
    start = loop.time()
    assert await stop_daemons(settings=settings, memory=memory, patch_sink=sink) == pytest.approx(6)
    await asyncio.sleep(5.9)
    assert not memory.stopped
    with pytest.warns(ResourceWarning, match="abandoned"):
        await asyncio.sleep(0.2)
    assert memory.stopped  # abandoned: counts as stopped, the object can be released.
    assert await stop_daemons(settings=settings, memory=memory, patch_sink=sink) is None
    assert "abandoned" in caplog.text
    assert sink.touches == 1
    assert loop.time() - start < 7
    assert reasons and DaemonStoppingReason.DAEMON_CANCELLED in reasons[0]

    release.set()  # let it go, finally.
    await wait_for(lambda: not memory.running)


@looptime
async def test_async_daemon_without_timeout_is_never_cancelled() -> None:
    cancelled: list[int] = []

    async def fn(**_: Any) -> None:
        try:
            await asyncio.sleep(10_000)
        except asyncio.CancelledError:
            cancelled.append(1)
            raise

    memory = DaemonsMemory()
    settings = OperatorSettings()
    await spawn([daemon_handler(fn, cancellation_backoff=1, cancellation_polling=30)], memory, settings=settings)
    await asyncio.sleep(1)
    assert await stop_daemons(settings=settings, memory=memory) == 30
    await asyncio.sleep(1000)
    assert not cancelled and memory.running and not memory.stopped
    assert await stop_daemons(settings=settings, memory=memory) == 30  # still blocking the deletion.

    task = memory.daemons[0].task
    assert task is not None
    task.cancel()  # e.g. the operator's cancellation of the hung tasks on exit.
    await asyncio.wait([task])
    assert cancelled == [1]
    await wait_for(lambda: not memory.running)


async def test_sync_daemon_exits_on_the_flag() -> None:
    exited = threading.Event()

    def fn(stopped: DaemonStopped, **_: Any) -> None:
        assert isinstance(stopped, SyncDaemonStopped)
        while not stopped:
            stopped.wait(10)
        exited.set()

    memory = DaemonsMemory()
    settings = OperatorSettings()
    await spawn([daemon_handler(fn)], memory, settings=settings)
    await asyncio.sleep(0.01)
    started = time.monotonic()
    await stop_all([memory], settings=settings)
    assert time.monotonic() - started < 1.0  # ~0.01 s; the sync daemon would block for 10 s otherwise
    assert exited.is_set()
    assert not memory.running
    settings.execution.executor.shutdown(wait=True)


async def test_sync_daemon_ignoring_the_flag_is_abandoned_and_does_not_block_the_exit(
    caplog: pytest.LogCaptureFixture,
) -> None:
    release = threading.Event()
    entered = threading.Event()

    def fn(**_: Any) -> None:
        entered.set()
        release.wait(5)  # ignores the stop-flag until released (bounded, just in case).

    memory = DaemonsMemory()
    settings = OperatorSettings()
    caplog.set_level(logging.WARNING)
    await spawn([daemon_handler(fn, cancellation_backoff=0.05, cancellation_timeout=0.1)], memory, settings=settings)
    await asyncio.to_thread(entered.wait, 1)
    started = time.monotonic()
    with pytest.warns(ResourceWarning, match="abandoned"):
        await stop_all([memory], settings=settings)
    elapsed = time.monotonic() - started
    assert 0.14 <= elapsed < 1.0  # backoff + timeout (0.15 s), not the daemon's 5 s (a margin for loaded machines)
    assert "abandoned" in caplog.text
    assert memory.stopped and not memory.running  # the thread runs on; its task is released.

    release.set()
    settings.execution.executor.shutdown(wait=True)


@looptime
async def test_filters_mismatch_stops_and_rematch_respawns() -> None:
    runs: list[DaemonStoppingReason] = []

    async def fn(stopped: DaemonStopped, **_: Any) -> None:
        await stopped.wait()
        runs.append(stopped.reason)

    memory = DaemonsMemory()
    handler = daemon_handler(fn)
    await spawn([handler], memory)
    await asyncio.sleep(1)
    await spawn([], memory)  # the filters do not match anymore.
    await asyncio.sleep(1)
    assert runs == [DaemonStoppingReason.FILTERS_MISMATCH]
    assert not memory.running and not memory.exhausted
    await spawn([handler], memory)  # they match again.
    await asyncio.sleep(1)
    assert len(memory.running) == 1
    await stop_all([memory], settings=OperatorSettings())
    assert runs == [DaemonStoppingReason.FILTERS_MISMATCH, DaemonStoppingReason.OPERATOR_EXITING]


@looptime
async def test_terminating_daemon_is_not_respawned_until_it_exits() -> None:
    starts: list[int] = []

    async def fn(stopped: DaemonStopped, **_: Any) -> None:
        starts.append(1)
        await stopped.wait()
        await asyncio.sleep(10)  # slow cleanup.

    memory = DaemonsMemory()
    handler = daemon_handler(fn)
    await spawn([handler], memory)
    await asyncio.sleep(1)
    await spawn([], memory)
    await asyncio.sleep(1)
    await spawn([handler], memory)  # still terminating: not re-spawned.
    await asyncio.sleep(1)
    assert starts == [1]
    await asyncio.sleep(10)
    await spawn([handler], memory)
    await asyncio.sleep(1)
    assert starts == [1, 1]
    await stop_all([memory], settings=OperatorSettings())


# The operator-level stopping.


@looptime
async def test_daemon_killer_stops_on_pausing_and_on_exit() -> None:
    from kopf._cogs.aiokits.toggles import ToggleSet

    reasons: list[DaemonStoppingReason] = []

    async def fn(stopped: DaemonStopped, **_: Any) -> None:
        await stopped.wait()
        reasons.append(stopped.reason)

    memories = [DaemonsMemory() for _ in range(3)]
    paused = ToggleSet(any)
    toggle = await paused.make_toggle(False)
    killer = asyncio.create_task(
        daemon_killer(settings=OperatorSettings(), memories=lambda: memories, operator_paused=paused)
    )
    for i, memory in enumerate(memories):
        await spawn([daemon_handler(fn)], memory, body=make_body(f"kex{i}"))
    await asyncio.sleep(1)
    await toggle.turn_to(True)
    await asyncio.sleep(1)
    assert reasons == [DaemonStoppingReason.OPERATOR_PAUSING] * 3
    await toggle.turn_to(False)
    for i, memory in enumerate(memories):
        await spawn([daemon_handler(fn)], memory, body=make_body(f"kex{i}"))
    await asyncio.sleep(1)
    killer.cancel()
    with pytest.raises(asyncio.CancelledError):
        await killer
    assert reasons[3:] == [DaemonStoppingReason.OPERATOR_EXITING] * 3
    assert all(not memory.running for memory in memories)


@looptime
async def test_instant_exit_timeout_is_respected() -> None:
    loop = asyncio.get_running_loop()

    async def fn(stopped: DaemonStopped, **_: Any) -> None:
        await stopped.wait()
        await asyncio.sleep(3)

    memory = DaemonsMemory()
    settings = OperatorSettings()
    settings.background.instant_exit_timeout = 10
    await spawn([daemon_handler(fn)], memory, settings=settings)
    await asyncio.sleep(1)
    start = loop.time()
    await stop_all([memory], settings=settings)
    assert loop.time() - start == pytest.approx(3)
    assert not memory.running


@looptime
async def test_thousand_objects_start_and_stop_cleanly() -> None:
    before = asyncio.all_tasks()
    started: list[int] = []

    async def fn(stopped: DaemonStopped, **_: Any) -> None:
        started.append(1)
        while not stopped:
            await stopped.wait(60)

    memories = [DaemonsMemory() for _ in range(1000)]
    handler = daemon_handler(fn)
    for i, memory in enumerate(memories):
        await spawn([handler], memory, body=make_body(f"kex{i}"))
    await asyncio.sleep(1)
    assert len(started) == 1000
    assert len(asyncio.all_tasks() - before) == 1000
    await stop_all(memories, settings=OperatorSettings())
    await asyncio.sleep(0)
    assert all(not memory.running for memory in memories)
    assert asyncio.all_tasks() == before


def test_soak_of_create_delete_cycles_leaves_nothing_behind() -> None:
    """10,000 objects come & go (in concurrent batches) with a daemon, a timer, and an index each."""
    import gc
    import weakref

    from kopf._core.engines.indexing import IndexingMemory, OperatorIndexers, discard_object, index_object
    from kopf_sim.timing import virtualtime

    from ..spawning_helpers import index_handler, timer_handler

    memos: list[weakref.ref[Memo]] = []
    counts = {"daemon": 0, "timer": 0}

    async def daemon_fn(stopped: DaemonStopped, **_: Any) -> None:
        counts["daemon"] += 1
        while not stopped:
            await stopped.wait(60)

    async def timer_fn(**_: Any) -> None:
        counts["timer"] += 1

    def index_fn(name: str, **_: Any) -> Any:
        return {name[-1]: name}

    handlers = [daemon_handler(daemon_fn), timer_handler(timer_fn, interval=1)]
    indexer = index_handler(index_fn, id="by_suffix")
    indexers = OperatorIndexers()
    sink = PatchSink()
    settings = OperatorSettings()
    threads_before = set(threading.enumerate())

    async def cycle(i: int) -> None:
        memo = Memo()
        memos.append(weakref.ref(memo))
        memory = DaemonsMemory()
        imemory = IndexingMemory()
        body = make_body(f"kex{i}")
        await spawn_daemons(
            settings=settings,
            handlers=handlers,
            memory=memory,
            body=body,
            resource=RESOURCE,
            logger=LOGGER,
            memo=memo,
            indices=indexers.indices,
            patch_sink=sink,
        )
        await index_object(
            indexers=indexers,
            handlers=[indexer],
            body=body,
            memory=imemory,
            resource=RESOURCE,
            logger=LOGGER,
            settings=settings,
            memo=memo,
            indices=indexers.indices,
        )
        await asyncio.sleep(0.5)
        assert await stop_daemons(settings=settings, memory=memory, patch_sink=sink) is None
        discard_object(indexers=indexers, body=body, memory=imemory)

    async def main() -> None:
        tasks_before = asyncio.all_tasks()
        for batch in range(100):
            await asyncio.gather(*(cycle(batch * 100 + i) for i in range(100)))
            assert len(indexers.indices["by_suffix"]) == 0
        await asyncio.sleep(0)
        assert asyncio.all_tasks() == tasks_before

    virtualtime.run(main())
    assert counts == {"daemon": 10_000, "timer": 10_000}
    assert len(indexers["by_suffix"]) == 0 and len(indexers.indices["by_suffix"]) == 0
    assert len(sink.patches) == 10_000  # one touch per deleted object, when all its daemons are gone.
    gc.collect()
    assert len(memos) == 10_000
    assert sum(1 for ref in memos if ref() is not None) == 0
    settings.execution.executor.shutdown(wait=True)
    assert [thread for thread in threading.enumerate() if thread not in threads_before] == []  # others may end
