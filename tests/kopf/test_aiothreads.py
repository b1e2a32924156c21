"""Sync callables in an executor, awaited in the loop: run_in_executor()'s semantics, the results in batches."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable, Coroutine, Iterator
from typing import Any, TypeVar

import pytest

from kopf._cogs.aiokits import aiothreads
from kopf._cogs.aiokits.aiothreads import run_in_executor

_T = TypeVar("_T")
Runner = Callable[[Callable[[], Coroutine[Any, Any, _T]]], _T]


@pytest.fixture
def pool() -> Iterator[concurrent.futures.ThreadPoolExecutor]:
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as executor:
        yield executor


@pytest.fixture
def plain() -> Iterator[Runner[Any]]:
    """Run a coroutine in a plain asyncio loop: the results are handed over here, not by the loop."""
    loop = asyncio.SelectorEventLoop()
    assert type(loop).run_in_executor is asyncio.BaseEventLoop.run_in_executor
    yield lambda main: loop.run_until_complete(main())
    loop.close()


def test_the_result_comes_back(plain: Runner[Any], pool: concurrent.futures.ThreadPoolExecutor) -> None:
    async def main() -> tuple[str, int]:
        return await run_in_executor(pool, lambda: ("done", threading.get_ident()))

    result = plain(main)
    assert result[0] == "done" and result[1] != threading.get_ident()


def test_the_exception_comes_back(plain: Runner[Any], pool: concurrent.futures.ThreadPoolExecutor) -> None:
    def fail() -> None:
        raise ZeroDivisionError("boom")

    async def main() -> None:
        await run_in_executor(pool, fail)

    with pytest.raises(ZeroDivisionError, match="boom"):
        plain(main)


def test_stop_iteration_comes_back_as_an_error(plain: Runner[Any], pool: concurrent.futures.ThreadPoolExecutor) -> None:
    async def main() -> None:
        await run_in_executor(pool, lambda: next(iter([])))

    with pytest.raises(RuntimeError, match="StopIteration"):
        plain(main)


async def test_stop_iteration_in_loops_of_their_own_too(pool: concurrent.futures.ThreadPoolExecutor) -> None:
    assert type(asyncio.get_running_loop()).run_in_executor is not asyncio.BaseEventLoop.run_in_executor  # looptime
    with pytest.raises(RuntimeError, match="StopIteration"):
        await run_in_executor(pool, lambda: next(iter([])))


def test_many_results_wake_the_loop_up_in_batches(
    plain: Runner[Any], pool: concurrent.futures.ThreadPoolExecutor
) -> None:
    release = threading.Event()
    wakeups = 0

    async def main() -> list[int]:
        loop = asyncio.get_running_loop()
        original = loop.call_soon_threadsafe

        def counting(*args: Any, **kwargs: Any) -> asyncio.Handle:
            nonlocal wakeups
            wakeups += 1
            return original(*args, **kwargs)

        loop.call_soon_threadsafe = counting  # type: ignore[method-assign]
        awaitings = [asyncio.ensure_future(run_in_executor(pool, lambda i=i: release.wait() and i)) for i in range(50)]
        await asyncio.sleep(0)
        release.set()
        for _ in range(2):  # the loop is blocked until both threads are through all the jobs (in their order)
            pool.submit(lambda: None).result()
        return await asyncio.gather(*awaitings)

    assert plain(main) == list(range(50))
    assert wakeups <= 2  # one per result without the batches; two if a thread's last delivery is after the resume


def test_cancelling_before_the_start_cancels_the_job(
    plain: Runner[Any], pool: concurrent.futures.ThreadPoolExecutor
) -> None:
    release = threading.Event()
    ran: list[int] = []

    async def main() -> None:
        blockers = [asyncio.ensure_future(run_in_executor(pool, release.wait)) for _ in range(2)]  # both threads busy
        queued = asyncio.ensure_future(run_in_executor(pool, lambda: ran.append(1)))
        await asyncio.sleep(0)
        queued.cancel()
        with pytest.raises(asyncio.CancelledError):
            await queued
        release.set()
        await asyncio.gather(*blockers)

    plain(main)
    pool.submit(lambda: None).result()
    assert ran == []


def test_cancelling_a_running_job_drops_its_result(plain: Runner[Any]) -> None:
    # One worker: the other job runs only after the cancelled one has finished and handed its result over,
    # so that result has surely reached the loop (and been dropped) when the other one's arrives.
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
    started = threading.Event()
    release = threading.Event()
    finished: list[str] = []

    def job() -> str:
        started.set()
        release.wait()
        finished.append("yes")
        return "late"

    errors: list[dict[str, Any]] = []

    async def main() -> str:
        asyncio.get_running_loop().set_exception_handler(lambda _, context: errors.append(context))
        awaiting = asyncio.ensure_future(run_in_executor(pool, job))
        await asyncio.sleep(0)
        started.wait()
        awaiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await awaiting
        other = asyncio.ensure_future(run_in_executor(pool, lambda: "after the late one"))
        await asyncio.sleep(0)
        release.set()
        # The late result is handed over and dropped, with no errors; the other one arrives (a regression: not soon).
        return await asyncio.wait_for(other, timeout=10)

    try:
        assert plain(main) == "after the late one"
    finally:
        release.set()
        pool.shutdown(wait=True)
    assert finished == ["yes"]
    assert errors == []


def test_a_result_after_the_loop_is_closed_goes_nowhere() -> None:
    loop = asyncio.SelectorEventLoop()
    handover = aiothreads._HANDOVERS.get(loop)
    future = loop.create_future()
    loop.close()
    handover.deliver(future, True, "late")  # in a job's thread, it would raise nothing there
    assert not future.done()


def test_the_default_executor_is_the_loops(plain: Runner[Any]) -> None:
    async def main() -> bool:
        return await run_in_executor(None, lambda: threading.current_thread() is not threading.main_thread())

    assert plain(main)


async def test_loops_with_their_own_run_in_executor_get_theirs(pool: concurrent.futures.ThreadPoolExecutor) -> None:
    loop = asyncio.get_running_loop()  # looptime's: it tracks the executors' futures
    assert await run_in_executor(pool, lambda: 42) == 42
    assert loop not in aiothreads._HANDOVERS
