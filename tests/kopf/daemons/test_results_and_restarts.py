"""The daemons results, exits, restarts, and errors."""

import asyncio
from typing import Any

import pytest

import kopf
from kopf._core.engines.daemons import (
    DaemonsMemory,
)
from tests.helpers import wait_for

from ..spawning_helpers import PatchSink, daemon_handler
from .helpers import looptime, spawn


@looptime
async def test_result_goes_to_status_and_exited_daemon_is_not_restarted() -> None:
    calls: list[int] = []

    async def fn(**_: Any) -> dict[str, Any]:
        calls.append(1)
        await asyncio.sleep(10)
        return {"finished": True}

    memory = DaemonsMemory()
    sink = PatchSink()
    handler = daemon_handler(fn)
    await spawn([handler], memory, sink=sink)
    await asyncio.sleep(11)
    assert sink.statuses == [{"daemon_fn": {"finished": True}}]
    assert not memory.running
    assert handler.id in memory.exhausted

    await spawn([handler], memory, sink=sink)  # the next event: not re-spawned.
    await asyncio.sleep(100)
    assert calls == [1]


@looptime
async def test_daemon_patch_is_applied_after_it_exits() -> None:
    async def fn(patch: kopf.Patch, **_: Any) -> None:
        patch.status["seen"] = "yes"

    memory = DaemonsMemory()
    sink = PatchSink()
    await spawn([daemon_handler(fn)], memory, sink=sink)
    await wait_for(lambda: bool(sink.patches))
    assert sink.patches == [{"status": {"seen": "yes"}}]


@looptime
async def test_temporary_error_restarts_after_its_delay() -> None:
    loop = asyncio.get_running_loop()
    attempts: list[tuple[float, int]] = []

    async def fn(retry: int, **_: Any) -> None:
        attempts.append((loop.time(), retry))
        await asyncio.sleep(10)
        if retry < 2:
            raise kopf.TemporaryError("Need to restart.", delay=10)

    memory = DaemonsMemory()
    start = loop.time()
    await spawn([daemon_handler(fn)], memory)
    await asyncio.sleep(100)
    assert [retry for _, retry in attempts] == [0, 1, 2]
    assert [t - start for t, _ in attempts] == [pytest.approx(0), pytest.approx(20), pytest.approx(40)]
    assert not memory.running


@looptime
async def test_arbitrary_error_restarts_after_backoff_until_retries_exceeded(
    caplog: pytest.LogCaptureFixture,
) -> None:
    loop = asyncio.get_running_loop()
    times: list[float] = []

    async def fn(**_: Any) -> None:
        times.append(loop.time())
        raise ValueError("boom")

    memory = DaemonsMemory()
    start = loop.time()
    await spawn([daemon_handler(fn, backoff=5, retries=3)], memory)
    await asyncio.sleep(100)
    assert [t - start for t in times] == [pytest.approx(0), pytest.approx(5), pytest.approx(10)]
    assert not memory.running and "daemon_fn" in memory.exhausted
    assert "will stop now (it would exceed 3 retries on the next attempt)" in caplog.text


@looptime
async def test_permanent_errors_stop_the_daemon_forever() -> None:
    calls: list[str] = []

    async def fn1(**_: Any) -> None:
        calls.append("fn1")
        raise kopf.PermanentError("Bye-bye!")

    async def fn2(**_: Any) -> None:
        calls.append("fn2")
        raise ValueError("Bye!")

    memory = DaemonsMemory()
    handlers = [daemon_handler(fn1, id="fn1"), daemon_handler(fn2, id="fn2", errors=kopf.ErrorsMode.PERMANENT)]
    await spawn(handlers, memory)
    await asyncio.sleep(100)
    await spawn(handlers, memory)
    await asyncio.sleep(100)
    assert sorted(calls) == ["fn1", "fn2"]
    assert memory.exhausted == {"fn1", "fn2"}
