"""The timers (via the daemons engine), driven directly in virtual time: schedules, sharpness, idling, errors."""

import asyncio
import time
from typing import Any

import pytest

import kopf
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.structs.ephemera import Memo
from kopf._core.engines.daemons import DaemonsMemory, notice_change, spawn_daemons, stop_all, stop_daemons

from .spawning_helpers import LOGGER, RESOURCE, PatchSink, make_body, timer_handler

pytestmark = pytest.mark.looptime


class Recorder:
    """A timer function that records the relative times of its calls (and can take time or fail)."""

    def __init__(self, duration: float = 0, fail_while: Any = None, result: Any = None) -> None:
        self.loop = asyncio.get_running_loop()
        self.start = self.loop.time()
        self.times: list[float] = []
        self.retries: list[int] = []
        self.duration = duration
        self.fail_while = fail_while
        self.result = result

    async def __call__(self, retry: int, **_: Any) -> Any:
        self.times.append(round(self.loop.time() - self.start, 3))
        self.retries.append(retry)
        if self.duration:
            await asyncio.sleep(self.duration)
        if self.fail_while is not None and self.fail_while(retry):
            raise ValueError("Not yet.")
        return self.result


async def spawn(
    handlers: list[Any], memory: DaemonsMemory, *, body: dict[str, Any] | None = None, sink: PatchSink | None = None
) -> None:
    await spawn_daemons(
        settings=OperatorSettings(),
        handlers=handlers,
        memory=memory,
        body=body if body is not None else make_body(),
        resource=RESOURCE,
        logger=LOGGER,
        memo=Memo(),
        patch_sink=sink,
    )


async def test_interval_between_the_calls() -> None:
    fn = Recorder(duration=3)
    memory = DaemonsMemory()
    await spawn([timer_handler(fn, interval=10)], memory)
    await asyncio.sleep(50)
    assert fn.times == [0, 13, 26, 39]  # the duration of the calls is not accounted.
    await stop_all([memory], settings=OperatorSettings())


async def test_sharp_timer_keeps_its_phase() -> None:
    fn = Recorder(duration=3)
    memory = DaemonsMemory()
    await spawn([timer_handler(fn, interval=10, sharp=True)], memory)
    await asyncio.sleep(55)
    assert fn.times == [0, 10, 20, 30, 40, 50]
    await stop_all([memory], settings=OperatorSettings())


async def test_sharp_timer_skips_the_missed_ticks() -> None:
    fn = Recorder(duration=15)
    memory = DaemonsMemory()
    await spawn([timer_handler(fn, interval=10, sharp=True)], memory)
    await asyncio.sleep(65)
    assert fn.times == [0, 20, 40, 60]
    await stop_all([memory], settings=OperatorSettings())


async def test_sync_timer_in_threads() -> None:
    calls: list[float] = []
    loop = asyncio.get_running_loop()
    start = loop.time()

    def fn(**_: Any) -> None:
        time.sleep(0.001)
        calls.append(round(loop.time() - start))

    memory = DaemonsMemory()
    await spawn([timer_handler(fn, interval=10)], memory)
    await asyncio.sleep(35)
    assert calls == [0, 10, 20, 30]
    await stop_all([memory], settings=OperatorSettings())


async def test_initial_delay_shifts_the_first_call() -> None:
    fn = Recorder()
    memory = DaemonsMemory()
    await spawn([timer_handler(fn, interval=10, initial_delay=5)], memory)
    await asyncio.sleep(30)
    assert fn.times == [5, 15, 25]
    await stop_all([memory], settings=OperatorSettings())


async def test_idle_timer_does_not_fire_while_the_object_keeps_changing() -> None:
    fn = Recorder()
    memory = DaemonsMemory()
    handler = timer_handler(fn, idle=30)
    await spawn([handler], memory)  # the creation is a change too.
    for i in range(10):
        await asyncio.sleep(10)
        await spawn([handler], memory, body=make_body(spec={"field": i}))  # changes every 10s.
    assert fn.times == []
    await asyncio.sleep(29)
    assert fn.times == []
    await asyncio.sleep(2)
    assert fn.times == [130]  # 30s after the last change.
    await asyncio.sleep(100)
    assert fn.times == [130]  # no interval: only once per quiet period.
    notice_change(memory)
    await asyncio.sleep(31)
    assert fn.times == [130, 261]  # 30s after the change at 231.
    await stop_all([memory], settings=OperatorSettings())


async def test_idle_timer_with_interval_stops_on_changes() -> None:
    fn = Recorder()
    memory = DaemonsMemory()
    handler = timer_handler(fn, idle=10, interval=1)
    await spawn([handler], memory)
    await asyncio.sleep(12.5)
    assert fn.times == [10, 11, 12]
    notice_change(memory)
    await asyncio.sleep(14.9)
    assert fn.times == [10, 11, 12, 22.5, 23.5, 24.5, 25.5, 26.5]
    await stop_all([memory], settings=OperatorSettings())


async def test_errors_override_the_schedule_with_backoff() -> None:
    # The documented example: 3 failures with backoff=5, then the interval of 10.
    fn = Recorder(fail_while=lambda retry: retry < 3)
    memory = DaemonsMemory()
    await spawn([timer_handler(fn, interval=10, backoff=5)], memory)
    await asyncio.sleep(26)
    assert fn.times == [0, 5, 10, 15, 25]
    assert fn.retries == [0, 1, 2, 3, 0]
    await stop_all([memory], settings=OperatorSettings())


async def test_temporary_error_delay_overrides_the_schedule() -> None:
    attempts: list[int] = []

    async def fn(retry: int, **_: Any) -> None:
        attempts.append(retry)
        if retry == 0:
            raise kopf.TemporaryError("later", delay=3)

    memory = DaemonsMemory()
    await spawn([timer_handler(fn, interval=10)], memory)
    await asyncio.sleep(2)
    assert attempts == [0]
    await asyncio.sleep(2)
    assert attempts == [0, 1]
    await asyncio.sleep(10)
    assert attempts == [0, 1, 0]
    await stop_all([memory], settings=OperatorSettings())


async def test_permanent_error_stops_the_timer_forever() -> None:
    calls: list[int] = []

    async def fn(**_: Any) -> None:
        calls.append(1)
        raise kopf.PermanentError("never again")

    memory = DaemonsMemory()
    handler = timer_handler(fn, interval=10)
    await spawn([handler], memory)
    await asyncio.sleep(100)
    await spawn([handler], memory)
    await asyncio.sleep(100)
    assert calls == [1]
    assert "timer_fn" in memory.exhausted and not memory.running


async def test_results_go_to_status() -> None:
    fn = Recorder(result=42)
    memory = DaemonsMemory()
    sink = PatchSink()
    await spawn([timer_handler(fn, interval=10)], memory, sink=sink)
    await asyncio.sleep(25)
    assert sink.statuses == [{"timer_fn": 42}] * 3
    await stop_all([memory], settings=OperatorSettings())


async def test_timer_patches_are_applied_per_call() -> None:
    count = 0

    async def fn(patch: kopf.Patch, **_: Any) -> None:
        nonlocal count
        count += 1
        patch.spec["field"] = count

    memory = DaemonsMemory()
    sink = PatchSink()
    await spawn([timer_handler(fn, interval=10)], memory, sink=sink)
    await asyncio.sleep(15)
    assert sink.patches == [{"spec": {"field": 1}}, {"spec": {"field": 2}}]
    await stop_all([memory], settings=OperatorSettings())


async def test_timer_stops_promptly_on_deletion() -> None:
    fn = Recorder()
    memory = DaemonsMemory()
    sink = PatchSink()
    settings = OperatorSettings()
    await spawn([timer_handler(fn, interval=1000)], memory, sink=sink)
    await asyncio.sleep(1)
    assert await stop_daemons(settings=settings, memory=memory, patch_sink=sink) is None
    assert not memory.running
    await asyncio.sleep(2000)
    assert fn.times == [0]


async def test_timer_never_overlaps_with_itself() -> None:
    active = 0
    overlaps = 0

    async def fn(**_: Any) -> None:
        nonlocal active, overlaps
        active += 1
        overlaps += active > 1
        await asyncio.sleep(25)
        active -= 1

    memory = DaemonsMemory()
    await spawn([timer_handler(fn, interval=10, sharp=True)], memory)
    await asyncio.sleep(200)
    assert overlaps == 0
    await stop_all([memory], settings=OperatorSettings())
