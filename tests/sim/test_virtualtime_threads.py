"""Executor jobs that wait in ways the virtual-time loop knows of: idle, woken at their virtual deadlines."""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from kopf_sim.timing import virtualtime
from kopf_sim.timing.virtualtime import DeadlockError


def test_a_thread_sleeping_in_virtual_time_wakes_at_its_deadline() -> None:
    async def main() -> list[float]:
        loop = asyncio.get_running_loop()
        assert isinstance(loop, virtualtime.VirtualTimeLoop)
        moments: list[float] = []

        def job() -> None:
            this = virtualtime.job_loop()
            assert this is loop
            for _ in range(3):
                assert this.wait_in_thread(timeout=3600) is False
                moments.append(loop.time())

        started = time.perf_counter()
        await loop.run_in_executor(None, job)
        assert time.perf_counter() - started < 5
        return moments

    assert virtualtime.run(main()) == [3600.0, 7200.0, 10800.0]


def test_threads_and_timers_interleave_in_virtual_time() -> None:
    async def main() -> list[tuple[str, float]]:
        loop = asyncio.get_running_loop()
        events: list[tuple[str, float]] = []
        lock = threading.Lock()

        def job(name: str, period: float) -> None:
            for _ in range(3):
                loop.wait_in_thread(timeout=period)
                with lock:
                    events.append((name, loop.time()))

        async def ticker() -> None:
            for _ in range(2):
                await asyncio.sleep(25)
                events.append(("timer", loop.time()))

        executor = concurrent.futures.ThreadPoolExecutor(2)
        await asyncio.gather(
            loop.run_in_executor(executor, job, "a", 10), loop.run_in_executor(executor, job, "b", 15), ticker()
        )
        return sorted(events, key=lambda event: (event[1], event[0]))

    assert virtualtime.run(main()) == [
        ("a", 10.0),
        ("b", 15.0),
        ("a", 20.0),
        ("timer", 25.0),
        ("a", 30.0),
        ("b", 30.0),
        ("b", 45.0),
        ("timer", 50.0),
    ]


def test_a_condition_set_by_the_loop_wakes_the_thread_at_once() -> None:
    async def main() -> tuple[bool, float]:
        loop = asyncio.get_running_loop()
        flag = threading.Event()
        loop.call_later(42, flag.set)
        result = await loop.run_in_executor(None, lambda: loop.wait_in_thread(timeout=3600, until=flag.is_set))
        return result, loop.time()

    assert virtualtime.run(main()) == (True, 42.0)


def test_a_thread_at_work_holds_the_time() -> None:
    async def main() -> float:
        loop = asyncio.get_running_loop()
        release = threading.Event()

        def busy() -> None:
            release.wait(10)  # a wait the loop does not know of: the thread is at work

        future = loop.run_in_executor(None, busy)
        sleeper = asyncio.create_task(asyncio.sleep(1))
        await asyncio.sleep(0)
        loop.call_soon(release.set)
        await future
        assert not sleeper.done() or loop.time() >= 1
        await sleeper
        return loop.time()

    assert virtualtime.run(main()) == 1.0


def test_jobs_queued_behind_the_executors_limit_are_idle() -> None:
    async def main() -> list[float]:
        loop = asyncio.get_running_loop()
        executor = concurrent.futures.ThreadPoolExecutor(1)
        done: list[float] = []

        def job() -> None:
            loop.wait_in_thread(timeout=60)
            done.append(loop.time())

        await asyncio.gather(*(loop.run_in_executor(executor, job) for _ in range(3)))
        return done

    assert virtualtime.run(main()) == [60.0, 120.0, 180.0]


def test_waiting_for_a_condition_nobody_meets_is_a_deadlock_with_the_threads_stack() -> None:
    loop = virtualtime.new_virtual_loop()
    released = threading.Event()

    def forgotten_waiter() -> None:
        loop.wait_in_thread(until=released.is_set)

    try:
        with pytest.raises(DeadlockError) as err:
            loop.run_until_complete(loop.run_in_executor(None, forgotten_waiter))
    finally:
        released.set()  # the thread ends (in real time, once the loop is closed)
        executor = loop._vt_default_executor
        loop.close()
        assert executor is not None
        executor.shutdown(wait=True)
    message = str(err.value)
    assert "Threads waiting with no deadline:" in message
    assert "forgotten_waiter, waiting for a condition" in message
    assert "in forgotten_waiter" in message  # its stack


def test_misuse_is_refused() -> None:
    loop = virtualtime.new_virtual_loop()
    try:
        with pytest.raises(RuntimeError, match="only for the threads that run this loop's executor jobs"):
            loop.wait_in_thread(timeout=1)

        async def main() -> None:
            with pytest.raises(ValueError, match="needs a timeout, a condition, or both"):
                await asyncio.get_running_loop().run_in_executor(None, asyncio.get_running_loop().wait_in_thread)

        loop.run_until_complete(main())
    finally:
        loop.close()
    assert virtualtime.job_loop() is None


def test_a_blocked_loop_thread_moves_the_clock_on() -> None:
    async def main() -> float:
        loop = asyncio.get_running_loop()
        assert isinstance(loop, virtualtime.VirtualTimeLoop)
        loop.block(30)
        await asyncio.sleep(0)
        return loop.time()

    assert virtualtime.run(main()) == 30.0


def test_threads_still_waiting_when_the_loop_closes_wait_in_real_time() -> None:
    loop = virtualtime.new_virtual_loop()
    entered = threading.Event()
    result: list[bool] = []
    flag = threading.Event()

    def job() -> None:
        entered.set()
        result.append(loop.wait_in_thread(timeout=3600, until=flag.is_set))

    future = loop.run_in_executor(None, job)
    loop.run_until_complete(asyncio.sleep(0))
    assert entered.wait(10)
    while not any(job.waiting for job in loop._vt_threads.jobs):
        time.sleep(0.001)
    default_executor = loop._vt_default_executor
    loop.close()
    flag.set()  # the orphaned wait polls its condition in real time
    assert default_executor is not None
    default_executor.shutdown(wait=True)
    assert result == [True]
    assert future.done() or True


def test_a_job_cancelled_before_its_thread_started_holds_no_time() -> None:
    async def main() -> float:
        loop = asyncio.get_running_loop()
        executor = concurrent.futures.ThreadPoolExecutor(1)
        release = threading.Event()
        first = loop.run_in_executor(executor, release.wait)  # the only worker is busy with it
        queued = loop.run_in_executor(executor, time.sleep, 0)  # so this one waits in the executor's queue
        executor.shutdown(wait=False, cancel_futures=True)  # as an operator's executor is shut down at its stop
        release.set()
        await first
        with pytest.raises(asyncio.CancelledError):
            await queued
        await asyncio.sleep(3600)  # nothing holds the time: the cancelled job will never run
        return loop.time()

    assert virtualtime.run(main(), executor_timeout=5) == 3600.0


class LateFreeingExecutor(concurrent.futures.Executor):
    """One worker that starts the next job only once the loop sleeps: a job's end frees its place late.

    (As a real pool does now and then: its thread still resolves the future of the job that has returned.)
    """

    def __init__(self, loop: virtualtime.VirtualTimeLoop) -> None:
        self._max_workers = 1
        self._loop = loop
        self._queue: queue.SimpleQueue[tuple[concurrent.futures.Future[Any], Callable[[], Any]] | None] = (
            queue.SimpleQueue()
        )
        self._thread = threading.Thread(target=self._work, daemon=True)
        self._thread.start()

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> concurrent.futures.Future[Any]:
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self._queue.put((future, functools.partial(fn, *args, **kwargs)))
        return future

    def _work(self) -> None:
        pause = threading.Event()
        first = True
        while (item := self._queue.get()) is not None:
            while not first and not self._loop._vt_threads.sleep:  # the loop has decided what it waits for
                pause.wait(0.0005)
            first = False
            future, call = item
            if future.set_running_or_notify_cancel():
                future.set_result(call())

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self._queue.put(None)
        if wait:
            self._thread.join()


def test_only_the_queued_jobs_that_can_start_are_waited_for() -> None:
    async def main() -> list[float]:
        loop = asyncio.get_running_loop()
        assert isinstance(loop, virtualtime.VirtualTimeLoop)
        executor = LateFreeingExecutor(loop)
        done: list[float] = []

        def job() -> None:
            loop.wait_in_thread(timeout=60)
            done.append(loop.time())

        try:
            await asyncio.gather(*(loop.run_in_executor(executor, job) for _ in range(3)))
        finally:
            executor.shutdown()
        return done

    assert virtualtime.run(main(), executor_timeout=10) == [60.0, 120.0, 180.0]


def test_threads_due_at_one_moment_go_on_together_if_the_first_waits_for_another() -> None:
    """The threads due at one moment run one at a time, but not if the one whose turn it is waits for another."""

    async def main() -> list[str]:
        loop = asyncio.get_running_loop()
        assert isinstance(loop, virtualtime.VirtualTimeLoop)
        executor = concurrent.futures.ThreadPoolExecutor(2)
        handed_over = threading.Event()  # a wait that the loop does not know of
        order: list[str] = []

        def taker() -> None:
            loop.wait_in_thread(timeout=10)  # the first to wait: the first woken at 10
            order.append("taker woken")
            handed_over.wait(5)
            order.append(f"taker got it: {handed_over.is_set()}")

        def giver() -> None:
            loop.wait_in_thread(timeout=5)
            loop.wait_in_thread(timeout=5)  # due at 10 too, but started later: woken after the taker
            order.append("giver woken")
            handed_over.set()

        try:
            await asyncio.gather(loop.run_in_executor(executor, taker), loop.run_in_executor(executor, giver))
        finally:
            executor.shutdown()
        return order

    order = virtualtime.run(main(), executor_timeout=5)
    assert order[-1] == "taker got it: True"  # not after 5 real seconds, but at once
    assert sorted(order[:-1]) == ["giver woken", "taker woken"]  # the taker first, unless the machine paused it


def test_a_condition_may_call_the_loop_thread_safely() -> None:
    """The loop checks the waits' conditions under its lock; a thread-safe call in one must not deadlock."""

    async def main() -> float:
        loop = asyncio.get_running_loop()
        assert isinstance(loop, virtualtime.VirtualTimeLoop)
        flag = threading.Event()
        loop.call_later(5, flag.set)

        checks: list[None] = []

        def noisy_condition() -> bool:
            checks.append(None)
            if len(checks) == 2:  # the first check is the thread's own; the second is the loop's, under its lock
                loop.call_soon_threadsafe(lambda: None)
            return flag.is_set()

        await loop.run_in_executor(None, functools.partial(loop.wait_in_thread, until=noisy_condition))
        return loop.time()

    assert virtualtime.run(main(), executor_timeout=5) == 5.0
