"""The threads that take turns in virtual time share one CPU while they do, and get their CPUs back after."""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import threading

import pytest

from kopf_sim.timing import affinity, virtualtime

pytestmark = pytest.mark.skipif(not affinity.available(), reason="pinning threads needs Linux and 2+ CPUs")


def run_jobs_that_wait(loop: virtualtime.VirtualTimeLoop, seen: dict[str, set[int]]) -> None:
    """Two jobs wait in virtual time a few times each; each records its thread's CPUs while it waits."""

    def job(name: str) -> None:
        for _ in range(3):
            loop.wait_in_thread(timeout=10)
        seen[name] = os.sched_getaffinity(threading.get_native_id())

    async def main() -> None:
        seen["loop before"] = os.sched_getaffinity(threading.get_native_id())
        executor = concurrent.futures.ThreadPoolExecutor(2)
        try:
            await asyncio.gather(*(loop.run_in_executor(executor, job, name) for name in ("a", "b")))
            seen["loop during"] = os.sched_getaffinity(threading.get_native_id())
            seen["worker after"] = executor.submit(lambda: os.sched_getaffinity(threading.get_native_id())).result()
        finally:
            executor.shutdown()

    loop.run_until_complete(main())


def test_the_loop_and_its_waiting_threads_share_the_cpu_the_loop_ran_on() -> None:
    before = os.sched_getaffinity(threading.get_native_id())
    loop = virtualtime.new_virtual_loop()
    seen: dict[str, set[int]] = {}
    try:
        run_jobs_that_wait(loop, seen)
        assert len(seen["loop during"]) == 1
        assert seen["a"] == seen["b"] == seen["loop during"]
        assert seen["worker after"] == before  # the job's thread got its CPUs back when its job ended
    finally:
        loop.close()
    assert os.sched_getaffinity(threading.get_native_id()) == before  # the loop's thread too, on close


def test_nothing_is_pinned_when_told_not_to() -> None:
    before = os.sched_getaffinity(threading.get_native_id())
    loop = virtualtime.VirtualTimeLoop(one_cpu=False)
    seen: dict[str, set[int]] = {}
    try:
        run_jobs_that_wait(loop, seen)
    finally:
        loop.close()
    assert seen["a"] == seen["b"] == seen["loop during"] == before


def test_a_refused_affinity_leaves_everything_running_where_it_was(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(pid: int, cpus: object) -> None:
        raise PermissionError("not in this container")

    before = os.sched_getaffinity(threading.get_native_id())
    monkeypatch.setattr(os, "sched_setaffinity", refuse)
    loop = virtualtime.new_virtual_loop()
    seen: dict[str, set[int]] = {}
    try:
        run_jobs_that_wait(loop, seen)
    finally:
        loop.close()
    assert seen["a"] == seen["b"] == seen["loop during"] == before
