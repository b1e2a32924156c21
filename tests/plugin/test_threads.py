"""The operators' executor on the session's threads: a thread pool's behaviour, the threads kept between tests."""

from __future__ import annotations

import asyncio
import threading

import pytest

import kopf
from kopf_sim.timing import virtualtime
from pytest_kopf._leaks import leaked_threads
from pytest_kopf._threads import LentThreadsExecutor, shared_pool, shared_threads

from .conftest import BASE, NO_ASYNCIO
from .test_operator import ROOT, run_one


def test_results_and_errors_come_back() -> None:
    executor = LentThreadsExecutor()
    assert executor.submit(lambda x: x * 2, 21).result(timeout=10) == 42
    with pytest.raises(ZeroDivisionError):
        executor.submit(lambda: 1 / 0).result(timeout=10)
    executor.shutdown()


@pytest.mark.parametrize("limit", [1, 2])
def test_no_more_jobs_at_once_than_the_limit_set_in_the_settings(limit: int) -> None:
    settings = kopf.OperatorSettings()
    settings.execution.executor = LentThreadsExecutor()
    settings.execution.max_workers = limit
    assert settings.execution.max_workers == limit
    changed = threading.Condition()
    running, most = 0, 0
    release = threading.Event()

    def job() -> None:
        nonlocal running, most
        with changed:
            running += 1
            most = max(most, running)
            changed.notify_all()
        release.wait(10)
        with changed:
            running -= 1

    futures = [settings.execution.executor.submit(job) for _ in range(4)]
    with changed:
        assert changed.wait_for(lambda: running == limit, timeout=10)
    assert sum(future.done() for future in futures) == 0
    release.set()
    for future in futures:
        future.result(timeout=10)
    assert most == limit


def test_the_threads_are_lent_again_to_the_next_executors() -> None:
    warm_up = LentThreadsExecutor()
    warm_up.submit(threading.current_thread).result(timeout=10)
    assert warm_up.finish(grace=1.0) == []
    threads = shared_threads()  # one or more idle ones: earlier tests of this process may have used several
    used = set()
    for _ in range(20):
        executor = LentThreadsExecutor()
        used.add(executor.submit(threading.current_thread).result(timeout=10))
        assert executor.finish(grace=1.0) == []
    assert used <= threads and shared_threads() == threads  # no executor started a thread of its own
    assert all(thread.name.startswith("kopf-handlers") for thread in used)


def test_a_shutdown_cancels_the_queued_jobs_on_request_and_refuses_new_ones() -> None:
    executor = LentThreadsExecutor(max_workers=1)
    release = threading.Event()
    running = executor.submit(release.wait, 10)
    queued = executor.submit(lambda: "never")
    executor.shutdown(wait=False, cancel_futures=True)
    assert queued.cancelled()
    with pytest.raises(RuntimeError, match="after shutdown"):
        executor.submit(lambda: None)
    release.set()
    assert running.result(timeout=10) is True
    executor.shutdown(wait=True)


def test_a_stuck_job_names_its_thread_which_is_lent_no_more() -> None:
    executor = LentThreadsExecutor()
    release = threading.Event()
    started = threading.Event()

    def stuck() -> None:
        started.set()
        release.wait(10)

    pool = shared_pool()
    executor.submit(stuck)
    assert started.wait(10)
    try:
        busy = executor.finish(grace=0.0)
        assert len(busy) == 1 and busy[0].is_alive()
        assert shared_pool() is not pool  # the next executors get fresh threads
        assert busy[0] not in shared_threads()
    finally:
        release.set()


FILES = """
import threading
import kopf
from pytest_kopf._threads import shared_threads

THREADS = []

def operator():
    registry = kopf.OperatorRegistry()

    @kopf.on.startup(registry=registry)
    def remember(**_):
        THREADS.append(threading.current_thread())

    return registry

async def test_one(kopf_cluster, kopf_operator):
    await kopf_operator.start(registry=operator())
    await kopf_operator.stop()

async def test_two(kopf_cluster, kopf_operator):
    await kopf_operator.start(registry=operator())
    await kopf_operator.stop()

def test_three():
    assert len(THREADS) == 2
    # kept: still alive among the session's threads (which idle one takes a job is up to the pool)
    assert all(thread.is_alive() and thread in shared_threads() for thread in THREADS) == REUSED
    assert any(thread.is_alive() for thread in THREADS) == REUSED  # otherwise joined at each stop
"""


@pytest.mark.parametrize("reuse", [True, False])
def test_sync_handlers_of_the_next_tests_run_on_the_kept_threads(pytester: pytest.Pytester, reuse: bool) -> None:
    result = run_one(pytester, FILES.replace("REUSED", str(reuse)), "-o", f"kopf_reuse_threads={str(reuse).lower()}")
    result.assert_outcomes(passed=3)


def test_the_shared_threads_are_daemons_not_joined_at_the_exit() -> None:
    import concurrent.futures.thread

    executor = LentThreadsExecutor()
    thread = executor.submit(threading.current_thread).result(timeout=10)
    assert executor.finish(grace=1.0) == []
    assert thread.daemon
    assert thread not in concurrent.futures.thread._threads_queues  # not joined by concurrent.futures at exit


def test_the_idle_threads_of_another_loops_to_thread_are_no_leak_of_an_operator() -> None:
    """A check's worlds are loops of one process: an operator stopped in one loop has not started the threads
    that ``asyncio.to_thread()`` in another loop keeps idle (its default executor's)."""
    this, other = virtualtime.new_virtual_loop(), virtualtime.new_virtual_loop()
    settings = kopf.OperatorSettings()
    threads_at_start = set(threading.enumerate())

    async def operator_stopped() -> list[threading.Thread]:
        return leaked_threads(settings, threads_at_start)

    try:
        other.run_until_complete(asyncio.to_thread(int))
        assert this.run_until_complete(operator_stopped()) == []
    finally:
        for loop in (this, other):
            loop.run_until_complete(loop.shutdown_default_executor())
            loop.close()


NEVER_ENDING = """
import time
from pathlib import Path
import kopf

CRD = Path(__file__).parent / "crd.yaml"

def operator():
    registry = kopf.OperatorRegistry()

    @kopf.daemon("kopfexamples", registry=registry)
    def poll(**_):
        while True:  # the stop-flag ignored: the thread never ends
            time.sleep(10)

    return registry

async def test_leaky(kopf_cluster, kopf_operator):
    await kopf_cluster.apply(CRD)
    await kopf_operator.start(registry=operator())
    await kopf_cluster.create({"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "metadata": {"name": "ex1"}})
    await kopf_cluster.sim.advance(60)
"""


def test_a_sync_daemon_that_never_ends_is_reported_and_the_session_exits(pytester: pytest.Pytester) -> None:
    """The leaked thread fails its test (KopfLeakError); the pytest process exits all the same (in real time)."""
    (pytester.path / "crd.yaml").write_text((ROOT / "examples" / "crd.yaml").read_text())
    pytester.makepyfile(test_leaky=NEVER_ENDING)
    result = pytester.runpytest_subprocess("--kopf-sim", *NO_ASYNCIO, *BASE, timeout=120)
    result.assert_outcomes(passed=1, errors=1)  # the test itself, then the operator's teardown
    result.stdout.fnmatch_lines(["*KopfLeakError*", "*thread 'kopf-handlers_*"])
