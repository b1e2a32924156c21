"""One CPU for the threads that take turns in virtual time: the loop's and its executor jobs' that wait in it.

Those threads never run at the same time: the loop sleeps while a thread runs, and the threads due at one
moment run one after another. Yet each turn is a switch of threads, and a switch between threads on two
CPUs costs two wake-ups (the kernel's, then the GIL's, since the woken thread finds the GIL still held
by the one that woke it) where on one CPU it costs one (the woken thread runs only once the other blocks,
and the GIL is free by then): a ring of Python threads passing a pipe's byte on costs ~12 µs of CPU per
switch across the CPUs of these machines and ~5 µs on one (``benchmarks/bench_threads.py`` runs the day
of sync daemons 2.4x faster). The loop's thread is pinned only while it sleeps for the threads (so that the
threads and processes it starts meanwhile, which would inherit its affinity, are left free), a job's thread
from its first wait in virtual time until its job ends; other threads and processes are left alone.

Linux only (``os.sched_setaffinity`` with a thread's native id); elsewhere, or if the affinity cannot be
set (e.g. a container's CPU set), nothing is pinned and everything works as before, only slower.
"""

from __future__ import annotations

import contextlib
import os
import threading

_CPU_FIELD = 36  # the "processor" field of /proc/<pid>/task/<tid>/stat (the 39th) after the command's ")"


def available() -> bool:
    """Whether threads can be pinned here at all, and whether it would change anything (more than one CPU)."""
    if not hasattr(os, "sched_setaffinity") or not hasattr(os, "sched_getaffinity"):
        return False
    try:
        return len(os.sched_getaffinity(0)) > 1
    except OSError:
        return False


def current_cpu() -> int | None:
    """The CPU the calling thread runs on now: where the scheduler has put it, so we keep its choice."""
    try:
        with open("/proc/thread-self/stat", encoding="ascii") as file:
            stat = file.read()
        return int(stat[stat.rindex(")") + 2 :].split()[_CPU_FIELD])
    except (OSError, ValueError, IndexError):
        return None


def pin_current_thread(cpu: int) -> set[int] | None:
    """Run the calling thread on ``cpu`` only; its affinity before (to put back), or None if it could not be set."""
    native_id = threading.get_native_id()
    try:
        previous = os.sched_getaffinity(native_id)
        if previous != {cpu}:
            os.sched_setaffinity(native_id, {cpu})
    except OSError:
        return None
    return previous


def unpin_current_thread(previous: set[int]) -> None:
    """Put the calling thread's affinity back as it was before :func:`pin_current_thread`."""
    unpin_thread(threading.get_native_id(), previous)


def unpin_thread(native_id: int, previous: set[int]) -> None:
    """Put a thread's affinity back (the loop's may be closed from another thread than its own).

    If that fails (the thread is gone, or the CPU set shrank meanwhile), it stays where it is: that harms nothing.
    """
    with contextlib.suppress(OSError):
        os.sched_setaffinity(native_id, previous)
