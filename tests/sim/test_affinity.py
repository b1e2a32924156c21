"""The threads that take turns in virtual time share one CPU while they do, and get their CPUs back after."""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import threading
import time

import pytest

from kopf_sim.timing import affinity, virtualtime

pytestmark = pytest.mark.skipif(not affinity.available(), reason="pinning threads needs Linux and 2+ CPUs")


def cpus(native_id: int | None = None) -> set[int]:
    return os.sched_getaffinity(threading.get_native_id() if native_id is None else native_id)


def soon_one_cpu(native_id: int) -> set[int]:
    """A thread's CPUs once they are one (the loop pins its thread just after it wakes a job), or after 2 s."""
    deadline = time.perf_counter() + 2
    while len(found := cpus(native_id)) > 1 and time.perf_counter() < deadline:
        os.sched_yield()
    return found


def run_jobs_that_wait(loop: virtualtime.VirtualTimeLoop, *, pinned: bool) -> dict[str, set[int]]:
    """Two jobs wait in virtual time a few times each, recording their thread's CPUs and the loop thread's."""
    seen: dict[str, set[int]] = {}
    loop_thread = threading.get_native_id()

    def job(name: str) -> None:
        for _ in range(3):
            loop.wait_in_thread(timeout=10)
        seen[name] = cpus()
        seen[f"loop while {name} runs"] = soon_one_cpu(loop_thread) if pinned else cpus(loop_thread)

    async def main() -> None:
        executor = concurrent.futures.ThreadPoolExecutor(2)
        try:
            await asyncio.gather(*(loop.run_in_executor(executor, job, name) for name in ("a", "b")))
            seen["worker after"] = executor.submit(cpus).result()
            # A thread started by the pinned loop thread inherits its pin; its job's end frees it all the same.
            late = concurrent.futures.ThreadPoolExecutor(1)
            try:
                await loop.run_in_executor(late, job, "late")
                seen["late worker after"] = late.submit(cpus).result()
            finally:
                late.shutdown()
        finally:
            executor.shutdown()

    loop.run_until_complete(main())
    seen["loop after"] = cpus()
    return seen


def test_the_loop_and_its_waiting_threads_share_one_cpu_while_they_take_turns() -> None:
    before = cpus()
    loop = virtualtime.new_virtual_loop()
    try:
        seen = run_jobs_that_wait(loop, pinned=True)
    finally:
        loop.close()
    assert len(seen["a"]) == 1
    assert seen["a"] == seen["b"] == seen["loop while a runs"] == seen["loop while b runs"]
    assert seen["late"] == seen["a"]
    assert seen["worker after"] == seen["late worker after"] == before  # the jobs' threads are free after their jobs
    assert seen["loop after"] == before  # and the loop's thread once the loop stops running


def test_nothing_is_pinned_when_told_not_to() -> None:
    before = cpus()
    loop = virtualtime.VirtualTimeLoop(one_cpu=False)
    try:
        seen = run_jobs_that_wait(loop, pinned=False)
    finally:
        loop.close()
    assert seen["a"] == seen["b"] == seen["loop while a runs"] == seen["loop after"] == before


def test_a_refused_affinity_leaves_everything_running_where_it_was(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(pid: int, cpus: object) -> None:
        raise PermissionError("not in this container")

    before = cpus()
    monkeypatch.setattr(os, "sched_setaffinity", refuse)
    loop = virtualtime.new_virtual_loop()
    try:
        seen = run_jobs_that_wait(loop, pinned=False)
    finally:
        loop.close()
    assert seen["a"] == seen["b"] == seen["loop while a runs"] == seen["loop after"] == before
