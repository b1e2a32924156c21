"""What an operator leaves behind when it stops or crashes: its sync handlers' jobs and threads.

A real operator's process, stopped gracefully, exits once its thread pool's threads have finished their jobs;
killed, it takes them along. In a test, the threads outlive the operator: these helpers wait for their jobs
as a process would, end the abandoned ones at their next wait in virtual time, and name the threads that
are still running after that (a leak: usually a sync daemon sleeping with ``time.sleep()``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import sys
import threading
import time
import traceback
from collections.abc import Sequence
from typing import Any

import kopf
from kopf_sim.timing.virtualtime import VirtualTimeLoop, default_executor_threads

from ._threads import LentThreadsExecutor, shared_threads

__all__ = [
    "LEAKED_THREADS_HINT",
    "THREADS_GRACE",
    "abandon_jobs",
    "describe_leaked_threads",
    "jobs_done",
    "leaked_threads",
]

#: Real seconds to let the threads of the operator's executor finish after it is shut down.
THREADS_GRACE = 1.0
#: Virtual seconds for the sync handlers of a crashed operator to end (at their next wait in virtual time).
ABANDONED_JOBS_TIMEOUT = 1.0


def leaked_threads(settings: kopf.OperatorSettings, threads_before: set[threading.Thread]) -> list[threading.Thread]:
    """The threads started since the start and still alive, and those still running the operator's jobs.

    The executor is shut down first (a fresh one of the same kind and limit is left for a restart).
    """
    executor = settings.execution.executor
    busy: list[threading.Thread] = []
    if isinstance(executor, LentThreadsExecutor):
        busy = executor.finish(THREADS_GRACE)
        settings.execution.executor = LentThreadsExecutor(settings.execution.max_workers)
    elif isinstance(executor, concurrent.futures.ThreadPoolExecutor):
        executor.shutdown(wait=False, cancel_futures=True)
        max_workers = settings.execution.max_workers
        settings.execution.executor = concurrent.futures.ThreadPoolExecutor(max_workers)
    loop_executor = getattr(asyncio.get_running_loop(), "_default_executor", None)
    loops_threads = set(getattr(loop_executor, "_threads", ())) | default_executor_threads()
    kept = loops_threads | shared_threads() | threads_before
    deadline = time.perf_counter() + THREADS_GRACE
    leaked = list(busy)
    for thread in threading.enumerate():
        if thread in kept or thread in busy or thread is threading.current_thread():
            continue
        thread.join(max(0.0, deadline - time.perf_counter()))
        if thread.is_alive():
            leaked.append(thread)
    return leaked


async def abandon_jobs(executor: LentThreadsExecutor) -> None:
    """The sync handlers of a killed process go no further: their threads' waits in virtual time end them.

    They end at once (the loop wakes them now), unless they compute: then as soon as they wait or return.
    """
    loop = asyncio.get_running_loop()
    if not isinstance(loop, VirtualTimeLoop):
        return
    executor.shutdown(wait=False, cancel_futures=True)  # the jobs not started yet never start
    loop.abandon_jobs_in(executor.running_threads())
    pending = executor.pending()
    if pending:
        await jobs_done(pending, timeout=ABANDONED_JOBS_TIMEOUT)


async def jobs_done(jobs: Sequence[concurrent.futures.Future[Any]], *, timeout: float) -> None:
    """Wait for the executor's jobs to end (in the loop's time); their outcomes are nobody's business here."""
    awaited = [asyncio.wrap_future(job) for job in jobs]
    for future in awaited:  # retrieved whenever they end: kopf has cancelled its own waits for them already
        future.add_done_callback(_retrieved)
    await asyncio.wait(awaited, timeout=timeout)


def _retrieved(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()


#: What a sync handler, daemon or timer left running after the operator's stop usually needs.
LEAKED_THREADS_HINT = (
    "A sync handler, daemon or timer still runs in these threads after the operator has stopped. A sync daemon "
    "or timer that sleeps with time.sleep() sees its stop-flag only when it wakes up: sleep with "
    "`stopped.wait(seconds)` instead (it wakes up at once when stopped), and return when `stopped` is set."
)


def describe_leaked_threads(threads: Sequence[threading.Thread]) -> str:
    """What the threads left behind run: the loop's jobs in them (what & where they wait), or their stacks."""
    loop = asyncio.get_running_loop()
    described = loop.describe_jobs_in(threads, "Their jobs") if isinstance(loop, VirtualTimeLoop) else None
    if described is None:
        frames = sys._current_frames()
        lines = ["Their stacks:"]
        for thread in threads:
            frame = frames.get(thread.ident) if thread.ident is not None else None
            lines.append(f"  - thread {thread.name!r}")
            if frame is not None:
                for entry in traceback.format_stack(frame):
                    lines.extend(f"      {line}" for line in entry.rstrip().splitlines())
        described = "\n".join(lines)
    return f"{described}\n{LEAKED_THREADS_HINT}"
