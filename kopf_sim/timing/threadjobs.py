"""The executor jobs of a virtual-time loop, and the turns their threads take in virtual time.

A job is one ``run_in_executor`` call. While its thread computes, it holds the loop's time still; while it
waits in a way the loop knows of (:meth:`ThreadJobs.wait`: until a virtual deadline and/or a condition), it
is idle, and the loop's clock may jump. The threads due at one moment run one after another, in a fixed order
(deadline, then the start of the wait), each woken by the one before it as it waits again, while the loop
sleeps: a wake-up is then one switch of threads, not two (see ``benchmarks/bench_threads.py``).

:class:`ThreadJobs` keeps the jobs of one loop and the turns of their threads; the loop
(:class:`kopf_sim.timing.virtualtime.VirtualTimeLoop`) asks it what its jobs do before each decision,
sleeps while they are at work, and is woken through its :class:`JobsOwner` side when they are idle.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextvars
import dataclasses
import functools
import itertools
import os
import sys
import threading
import time
import traceback
from collections.abc import Callable, Collection, Iterable
from typing import Any, Protocol, TypeVar

from kopf_sim.timing import affinity
from kopf_sim.timing.loopclock import TICKS_PER_SECOND, VirtualClock

__all__ = [
    "ASLEEP",
    "AWAKE",
    "DROWSY",
    "Bell",
    "Job",
    "JobAbandoned",
    "JobsOwner",
    "RecordingExecutor",
    "ThreadJobs",
    "ThreadWait",
    "describe_call",
    "describe_threads",
    "marked_job",
    "run_job",
    "wait_in_real_time",
    "wake",
]

_T = TypeVar("_T")

# The loop's sleep while it waits for its busy threads: awake (deciding, running callbacks), drowsy (it has
# decided to sleep: a wake-up needs no write into the self-pipe), asleep (polling: a wake-up writes into it).
AWAKE, DROWSY, ASLEEP = 0, 1, 2


class JobAbandoned(BaseException):
    """Raised in an abandoned executor job's thread at its waits in virtual time: its process is gone.

    A :class:`BaseException`, as :class:`SystemExit`: the job's code does not catch it by ``except Exception``.
    """


class JobsOwner(Protocol):
    """What the jobs need of their loop: whether it is closed, and its part in the threads' turns."""

    def is_closed(self) -> bool: ...

    def threads_alone(self) -> bool:
        """Whether nothing but the threads' waits can happen now (no callbacks, no I/O, no shutdowns)."""
        ...

    def jump_for_threads(self, deadline: int) -> bool:
        """Jump to the threads' earliest deadline if no timer comes first and no limit forbids it; whether done."""
        ...

    def wake_for_threads(self) -> None:
        """Wake the sleeping loop (a write into its self-pipe): its turn has come."""
        ...


class Bell:
    """What a job's thread blocks on while it waits in a known way; rung once to wake it.

    A pipe, where one can be had: a write into it lets go of the GIL before the kernel wakes the
    reader, so the woken thread runs at once, where a lock released by a thread holding the GIL
    wakes a thread that blocks again on the GIL (twice the thread switches: a wake-up costs twice
    the CPU, see ``benchmarks/bench_threads.py``). A lock, if the process has no file descriptors left.
    """

    __slots__ = ("lock", "reader", "writer")

    def __init__(self) -> None:
        self.lock: threading.Lock | None = None
        try:
            self.reader, self.writer = os.pipe()
        except OSError:
            self.reader = self.writer = -1
            self.lock = threading.Lock()
            self.lock.acquire()

    def wait(self) -> None:
        if self.lock is not None:
            self.lock.acquire()
        else:
            os.read(self.reader, 1)

    def ring(self) -> None:
        if self.lock is not None:
            self.lock.release()
        else:
            os.write(self.writer, b"\0")

    def close(self) -> None:
        if self.lock is None:
            os.close(self.reader)
            os.close(self.writer)


class ThreadWait:
    """A job's thread waiting in a way the loop knows of: until a deadline (ticks) and/or a condition.

    The thread blocks on its job's bell; the loop (or the thread before it in the line of the threads
    due at the same moment) rings it to wake the thread.
    """

    __slots__ = ("deadline", "orphaned", "seq", "until")

    def __init__(self, deadline: int | None, until: Callable[[], bool] | None, seq: int) -> None:
        self.deadline = deadline
        self.until = until
        self.seq = seq  # the order of the waits' starts: the order of the wake-ups due at the same moment
        self.orphaned = False  # the loop is closed: the thread goes on waiting in real time


@dataclasses.dataclass(eq=False)
class Job:
    """One ``run_in_executor`` call: pending until both its thread returned and its future resolved."""

    description: str
    executor: concurrent.futures.Executor
    busy_since: float  # real time (perf_counter) of its submission, or of its last wake-up
    concurrent_future: concurrent.futures.Future[Any] | None = None
    future: asyncio.Future[Any] | None = None
    thread_id: int | None = None  # set when its thread starts running it
    finished: bool = False  # its function has returned (the futures may still be resolving)
    waiting: ThreadWait | None = None  # set while its thread waits in a known way (it is idle then)
    reported: bool = False  # reported as stuck: it holds the time no more (until it waits & wakes again)
    bell: Bell | None = None  # made at its thread's first known wait, closed when its function returns
    pinned: bool = False  # its thread was put on the loop's CPU (at a known wait), or tried to be
    affinity: set[int] | None = None  # its thread's CPUs before it was pinned: put back when its function returns
    serial: int = 0  # its place among the loop's jobs, in the order of their submission (the same in every run)
    abandoned: bool = False  # its waits in virtual time raise JobAbandoned (see VirtualTimeLoop.abandon_jobs_in)

    @property
    def pending(self) -> bool:
        cancelled_before_start = (
            self.thread_id is None and self.concurrent_future is not None and self.concurrent_future.cancelled()
        )  # its function will never run
        if not self.finished and not cancelled_before_start:
            return True
        return (
            self.concurrent_future is None
            or not self.concurrent_future.done()
            or self.future is None
            or not self.future.done()
        )


class _JobMarker(threading.local):
    """Which loop's executor job the current thread runs (if any)."""

    loop: JobsOwner | None = None
    job: Job | None = None


_marker = _JobMarker()


def _started(jobs: Iterable[Job]) -> dict[int, int]:
    """How many jobs have started and not finished yet, per executor (by id)."""
    started: dict[int, int] = {}
    for job in jobs:
        if job.thread_id is not None and not job.finished:
            started[id(job.executor)] = started.get(id(job.executor), 0) + 1
    return started


def run_job(loop: JobsOwner, job: Job, func: Callable[..., _T], *args: Any) -> _T:
    """Run an executor job's function with its thread marked as the loop's (for :meth:`ThreadJobs.wait`)."""
    previous = _marker.loop, _marker.job
    _marker.loop, _marker.job = loop, job
    job.thread_id = threading.get_ident()
    try:
        return func(*args)
    finally:
        job.finished = True
        _marker.loop, _marker.job = previous
        if job.bell is not None:
            job.bell.close()
        if job.affinity is not None:
            affinity.unpin_current_thread(job.affinity)


class RecordingExecutor(concurrent.futures.Executor):
    """Passes the submission through to the real executor, keeping the concurrent future."""

    def __init__(self, executor: concurrent.futures.Executor) -> None:
        self.executor = executor
        self.submitted: concurrent.futures.Future[Any] | None = None

    def submit(self, fn: Callable[..., _T], /, *args: Any, **kwargs: Any) -> concurrent.futures.Future[_T]:
        future = self.executor.submit(fn, *args, **kwargs)
        self.submitted = future
        return future


def wake(job: Job) -> Bell:
    """End a job's wait: it is at work from now on (call with the loop's lock held); the bell to ring after it."""
    assert job.waiting is not None and job.bell is not None
    job.waiting = None
    job.reported = False
    job.busy_since = time.perf_counter()
    return job.bell


def describe_call(func: Callable[..., Any], args: tuple[Any, ...]) -> str:
    """Name the function that an executor job really runs (seeing through partials & contexts)."""
    target: Any = func
    while True:
        if isinstance(target, functools.partial):
            target, args = target.func, target.args + args
        elif isinstance(getattr(target, "__self__", None), contextvars.Context) and args and callable(args[0]):
            target, args = args[0], args[1:]
        else:
            break
    return getattr(target, "__qualname__", None) or repr(target)


def wait_in_real_time(timeout: float | None, until: Callable[[], bool] | None) -> bool:
    """A wait outside of virtual time (its loop is gone): the condition is polled every few milliseconds."""
    end = None if timeout is None else time.perf_counter() + timeout
    pause = threading.Event()  # never set: its wait() is a sleep that nobody patches
    while True:
        if until is not None and until():
            return True
        left = None if end is None else end - time.perf_counter()
        if left is not None and left <= 0:
            return False
        pause.wait(0.01 if until is not None and (left is None or left > 0.01) else left)


def describe_threads(jobs: Iterable[Job], title: str, *, now: float | None = None) -> str:
    """The executor jobs of a loop: what each runs, for how long, and the current stack of its thread."""
    frames = sys._current_frames()
    now = time.perf_counter() if now is None else now
    lines = [f"{title}:"]
    for job in jobs:
        wait = job.waiting
        if wait is not None:
            state = "waiting" + (
                f" until loop time {wait.deadline / TICKS_PER_SECOND!r}"
                if wait.deadline is not None
                else " for a condition"
            )
        elif job.thread_id is None:
            state = "queued (not started)"
        else:
            state = f"at work for {now - job.busy_since:.1f} s"
        lines.append(f"  - {job.description}, {state}")
        frame = frames.get(job.thread_id) if job.thread_id is not None else None
        if frame is not None:
            for entry in traceback.format_stack(frame):
                lines.extend(f"      {line}" for line in entry.rstrip().splitlines())
    return "\n".join(lines)


def _ends_at_once(job: Job, timeout: float | None, until: Callable[[], bool] | None) -> bool | None:
    """The result of a wait that ends before it starts (its condition holds, no time to wait), or None."""
    if job.abandoned:
        raise JobAbandoned(f"The job {job.description} is abandoned: it waits no more.")
    if timeout is None and until is None:
        raise ValueError("wait_in_thread() needs a timeout, a condition, or both (or it would never end).")
    if until is not None and until():
        return True
    if timeout is not None and timeout <= 0:
        return False
    return None


def marked_job() -> tuple[JobsOwner | None, Job | None]:
    """The loop and the executor job that the current thread runs (None, None in other threads)."""
    return _marker.loop, _marker.job


class ThreadJobs:
    """The executor jobs of one loop and the turns of their threads: which are at work, which wait until when.

    The loop's decisions ask :meth:`sort` (which jobs are at work, which wait, the earliest deadline) and start
    the line of the threads due; the threads wait in :meth:`wait`, each waking the next one due as it waits
    again while the loop sleeps (:meth:`fall_asleep`, :meth:`after_poll`), or the loop when none is left.
    """

    def __init__(self, owner: JobsOwner, clock: VirtualClock, *, one_cpu: bool) -> None:
        self.owner = owner
        self.clock = clock
        # Guards the jobs' waits (threads start them, the loop & the threads due end them) and the loop's sleep.
        # Reentrant: the waits' conditions run under it, and a thread-safe call from one would take it again.
        self.lock = threading.RLock()
        self.closed = False
        self.pinnable = one_cpu and affinity.available()  # may be pinned (until an attempt fails)
        self.cpu: int | None = None  # the CPU of the threads that take turns (chosen at the loop's first sleep)
        self.free_cpus: set[int] | None = None  # the loop thread's CPUs before it was pinned (while it is)
        self.jobs: list[Job] = []
        self.serials = itertools.count(1)  # the serials of the jobs, in the order of their submission
        self.awaited: set[Job] = set()  # the busy jobs that the loop waits for (it is woken when none is left)
        self.seq = 0  # counts the waits' starts (their order)
        # The threads due at one moment run one after another (in a fixed order), each woken by the one
        # before it while the loop sleeps: the line of those not woken yet, and the one woken last.
        self.line: collections.deque[Job] = collections.deque()
        self.baton: Job | None = None
        self.holder: Job | None = None  # whose turn it was at the sleeping loop's last look
        self.soonest: list[Job] = []  # the waits at the earliest deadline, as of the last look at all jobs
        self.sleep = AWAKE  # whether the loop sleeps (or is about to) until its busy threads are idle

    # -- what the jobs do ---------------------------------------------------------------------

    def add(self, job: Job) -> None:
        """A job submitted to its executor (its function may be running already)."""
        self.jobs.append(job)

    def prune(self) -> list[Job]:
        """Forget the jobs that are done (their futures resolved); the rest."""
        jobs = self.jobs = [
            job
            for job in self.jobs  # (a running job is pending: the cheap check first)
            if (job.thread_id is not None and not job.finished) or job.pending
        ]
        return jobs

    def describe_in(self, threads: Iterable[threading.Thread], title: str) -> str | None:
        """What the jobs do in these threads (what each runs, how it waits, its stack), if any."""
        idents = {thread.ident for thread in threads}
        with self.lock:
            jobs = [job for job in self.jobs if job.thread_id in idents and not job.finished]
        return describe_threads(jobs, title) if jobs else None

    def sort(self, jobs: list[Job], *, sleep: bool = False) -> tuple[list[Job], bool, int | None]:
        """The jobs at work; whether any wait; the earliest deadline of those that wait. Wakes the first due wait.

        A job counts as idle while its thread waits in a known way, or while it is queued behind its executor's
        limit of jobs that have started (it cannot start before one of them ends): the queued jobs that the free
        places will take count as at work, the others (later in the queue: executors start theirs in order) as
        idle, so the loop never waits for a job that cannot start. A woken thread is at work
        from this moment on, before it even resumes. The threads due run one after another, in the order of
        their deadlines, then of their waits' starts (the same order from run to run, as a rule), and only
        while no other thread is at work: the first is woken here, each of the others by the one before it as
        it waits again (or by the loop's next decision, if the loop had things to do meanwhile). The waits due
        next (at the earliest deadline) are kept for :meth:`wake_the_soonest`: a jump there needs no second look
        at all the jobs.
        """
        busy: list[Job] = []
        waiting = False
        earliest: int | None = None
        soonest: list[Job] = []  # the waits at the earliest deadline
        started: dict[int, int] | None = None  # the jobs started & not finished, per executor (if any is queued)
        now = self.clock.ticks
        due: list[tuple[int, int, Job]] = []  # (deadline or now, start of the wait, job): the order of wake-ups
        with self.lock:
            for job in jobs:  # (the hot loop of every decision: the common case first, few lookups)
                wait = job.waiting
                if wait is not None:
                    deadline = wait.deadline
                    if deadline is not None and deadline <= now:
                        due.append((deadline, wait.seq, job))
                        continue
                    until = wait.until
                    if until is not None and until():
                        due.append((now, wait.seq, job))
                        continue
                    waiting = True
                    if deadline is None:
                        pass
                    elif deadline == earliest:
                        soonest.append(job)
                    elif earliest is None or deadline < earliest:
                        earliest = deadline
                        soonest = [job]
                elif job.reported:
                    pass
                elif job.thread_id is None:
                    started = _started(jobs) if started is None else started
                    if self.takes_a_place(job.executor, started):
                        busy.append(job)
                    else:
                        waiting = True
                else:
                    busy.append(job)
            bell = self._line_up(due, busy, sleep=sleep)
            waiting = waiting or len(due) > (1 if bell is not None else 0)
            self.soonest = soonest
        if bell is not None:
            bell.ring()
        return busy, waiting, earliest

    def _line_up(self, due: list[tuple[int, int, Job]], busy: list[Job], *, sleep: bool) -> Bell | None:
        """The waits due go on one by one while no thread is at work (the first one is busy now), else later.

        Call with the lock held; the bell of the first one to ring after it is released.
        """
        if due and not busy:
            bell = self.start_line(due, sleep=sleep)
            busy.append(due[0][2])
            return bell
        self.awaited = set(busy)
        return None

    def wake_the_soonest(self, *, sleep: bool) -> list[Job]:
        """After a jump to the earliest deadline of the waits: start the line of those due (as :meth:`sort`)."""
        bell = None
        with self.lock:
            now = self.clock.ticks
            due = [
                (wait.deadline, wait.seq, job)
                for job in self.soonest
                if (wait := job.waiting) is not None and wait.deadline is not None and wait.deadline <= now
            ]
            self.soonest = []
            if due:
                bell = self.start_line(due, sleep=sleep)
            busy = list(self.awaited)
        if bell is not None:
            bell.ring()
        return busy

    def start_line(self, due: list[tuple[int, int, Job]], *, sleep: bool) -> Bell:
        """Wake the first of the waits due (with the lock held; ring the bell after it); the others queue up.

        With ``sleep``, the loop has nothing else to do: the threads due may pass the turn on from now on.
        """
        if len(due) > 1:
            due.sort()
        first = due[0][2]
        bell = wake(first)
        self.awaited = {first}
        self.baton = first
        line = self.line
        line.clear()
        line.extend([job for _, _, job in due[1:]])
        if sleep:
            self.sleep = DROWSY
        return bell

    @staticmethod
    def takes_a_place(executor: concurrent.futures.Executor, started: dict[int, int]) -> bool:
        """Whether a queued job gets one of its executor's free places (counted as taken from now on)."""
        limit = getattr(executor, "_max_workers", None)
        count = started.get(id(executor), 0)
        if isinstance(limit, int) and count >= limit:
            return False
        started[id(executor)] = count + 1
        return True

    # -- the loop's sleep ---------------------------------------------------------------------

    def fall_asleep(self, ready: Collection[object]) -> bool:
        """The loop is to sleep until its busy threads are idle: whether it still needs to (none rang meanwhile)."""
        with self.lock:
            if self.sleep == AWAKE and not ready and self.awaited:
                self.sleep = DROWSY
            if self.sleep != DROWSY or ready or not self.awaited:  # rung already, or no need
                self.sleep = AWAKE
                self.line.clear()
                return False
            self.sleep = ASLEEP
            self.holder = self.baton  # the thread whose turn it is (the threads may start lines of their own, too)
            return True

    def after_poll(self, *, patient: bool, events: bool) -> list[Job]:
        """The sleeping loop's poll has ended: the jobs it still waits for (none: it is awake).

        If a thread has kept the turn since the last poll (for ``patient`` seconds), the others due go on at once.
        """
        bells: list[Bell] = []
        awaited: list[Job] = []
        with self.lock:
            asleep = self.sleep == ASLEEP  # not rung: a timeout, a signal, or real I/O
            if asleep and patient and not events and self.awaited:
                if self.line and self.baton is self.holder:  # it keeps the turn: the others due go on
                    for job in self.line:
                        bells.append(wake(job))
                        self.awaited.add(job)
                    self.line.clear()
                self.holder = self.baton  # (if the turn has moved on: as patient with the next one)
                awaited = list(self.awaited)
            if asleep and not awaited:
                self.sleep = AWAKE
                self.line.clear()
        for bell in bells:
            bell.ring()
        return awaited

    def give_up_sleep(self) -> None:
        """The loop stops sleeping for its threads (they are reported as stuck next)."""
        with self.lock:
            if self.sleep == ASLEEP:
                self.sleep = AWAKE
                self.line.clear()

    def wake_up(self) -> bool:
        """The loop's sleep ends; the turn of the threads due goes back to it. Whether to write into the self-pipe.

        A loop that is only about to sleep sees it before it polls: no write needed.
        """
        with self.lock:
            return self._wake_up()

    def _wake_up(self) -> bool:
        asleep = self.sleep == ASLEEP
        self.sleep = AWAKE
        self.line.clear()
        return asleep

    def pin_loop_thread(self) -> None:
        """Pin the loop's thread to the threads' CPU: the one it ran on at its first sleep for threads."""
        if self.cpu is None:
            self.cpu = affinity.current_cpu()
        previous = None if self.cpu is None else affinity.pin_current_thread(self.cpu)
        if previous is None:
            self.pinnable = False  # no way here: never tried again, the jobs' threads stay free too
            self.cpu = None
        self.free_cpus = previous

    def unpin_loop_thread(self) -> None:
        if self.free_cpus is not None:
            affinity.unpin_current_thread(self.free_cpus)
            self.free_cpus = None

    # -- the threads' side --------------------------------------------------------------------

    def wait(self, job: Job, timeout: float | None, until: Callable[[], bool] | None) -> bool:
        """Block the job's thread (the current one) as an idle one; whether ``until()`` holds.

        The wait ends when ``timeout`` virtual seconds have passed (the clock jumps there if nothing
        else is due earlier), or when ``until()`` is true (the loop checks it whenever it is idle:
        e.g. a flag set by the loop's callbacks, or an answer of the loop to the thread's request),
        whichever comes first. ``until`` must be cheap and thread-safe. After the loop is closed,
        the thread waits the rest of the time in real time.
        """
        at_once = _ends_at_once(job, timeout, until)
        if at_once is not None:
            return at_once
        clock = self.clock
        deadline = None if timeout is None else clock.ticks + clock.ticks_of(timeout)
        bell = job.bell
        if bell is None:
            bell = job.bell = Bell()
        wait = ThreadWait(deadline, until, 0)
        with self.lock:
            closed = self.closed
            following, ring_loop = (None, False) if closed else self._pass_the_turn_on(job, wait)
        if closed:
            return wait_in_real_time(timeout, until)
        self._pin_job_thread(job)
        if following is not None:
            following.ring()
        elif ring_loop:
            self.owner.wake_for_threads()
        bell.wait()
        if job.abandoned:
            raise JobAbandoned(f"The job {job.description} is abandoned: it waits no more.")
        if wait.orphaned:
            remaining = None if wait.deadline is None else max(0, wait.deadline - self.clock.ticks) / TICKS_PER_SECOND
            return wait_in_real_time(remaining, until)
        return until() if until is not None else False

    def _pass_the_turn_on(self, job: Job, wait: ThreadWait) -> tuple[Bell | None, bool]:
        """The job waits from now on (call with the lock held): the next one due goes on, or the loop.

        The bell to ring (after the lock is released): the next thread's in the line, if the loop has nothing
        to do; if this was the last job the loop waited for, the thread decides in the loop's stead, or else
        whether to wake the loop (a write into its self-pipe).
        """
        self.seq += 1
        wait.seq = self.seq
        job.waiting = wait
        awaited = self.awaited
        if job not in awaited:
            return None, False
        following: Bell | None = None
        awaited.discard(job)
        if self.baton is job:
            self.baton = None
            if self.sleep != AWAKE and self.line:  # the loop has nothing to do: the next one goes
                successor = self.line.popleft()
                following = wake(successor)
                awaited.add(successor)
                self.baton = successor
        if not awaited:  # the last one the loop waits for: it decides in the loop's stead, or wakes it
            following = self.next_line_by_thread() if self.sleep == ASLEEP else None
            if following is None:
                return None, self._wake_up()
        return following, False

    def _pin_job_thread(self, job: Job) -> None:
        """Put a waiting job's thread on the loop's CPU, once (while the loop's thread is pinned there)."""
        free = self.free_cpus
        if not job.pinned and free is not None and self.cpu is not None:
            job.pinned = True  # back to the loop's free CPUs when its job ends (not to the inherited pin)
            job.affinity = free if affinity.pin_current_thread(self.cpu) is not None else None

    def next_line_by_thread(self) -> Bell | None:
        """The last thread that the sleeping loop waited for makes the loop's next decision, if it is a simple one.

        Call with the lock held, from that thread. If nothing but the waits of threads can happen before the
        earliest of their deadlines (no ready callbacks, no timer up to then, no I/O but the self-pipe, no
        condition of a wait that holds, no thread at work), the loop would only wake up, jump there and start the
        line of the threads due: the thread does the same (the same order, the same checks), and the loop sleeps
        on. That saves a switch of threads and a decision per moment of the threads (half of them with 10
        sync daemons that do not tick together). Anything else is left to the loop: None, and it is woken.
        """
        if not self.owner.threads_alone():
            return None
        found = self._earliest_waits()
        if found is None:
            return None
        earliest, soonest = found
        if not self.owner.jump_for_threads(earliest):
            return None  # a timer comes first (or at the same moment), or the time limit: the loop's part
        due = [(earliest, job.waiting.seq, job) for job in soonest if job.waiting is not None]
        return self.start_line(due, sleep=False)  # the loop stays asleep: the threads pass the turn on

    def _earliest_waits(self) -> tuple[int, list[Job]] | None:
        """The earliest deadline of the waits and the jobs that wait until then; None if anything else may happen.

        None if a job is at work (or queued, or its futures resolve), or a wait is due now: the loop's part.
        """
        now = self.clock.ticks
        earliest: int | None = None
        soonest: list[Job] = []
        for job in self.jobs:
            wait = job.waiting
            if wait is None:
                if job.reported or (job.finished and not job.pending):
                    continue
                return None  # at work, queued, or its futures still resolving: the loop's part
            deadline = wait.deadline
            if (deadline is not None and deadline <= now) or (wait.until is not None and wait.until()):
                return None  # due now (the loop starts those lines itself)
            if deadline is None:
                continue
            if earliest is None or deadline < earliest:
                earliest, soonest = deadline, [job]
            elif deadline == earliest:
                soonest.append(job)
        return None if earliest is None else (earliest, soonest)

    def abandon_in(self, threads: Iterable[threading.Thread]) -> None:
        """Abandon the jobs that these threads run: they wake up now (see ``VirtualTimeLoop.abandon_jobs_in``)."""
        idents = {thread.ident for thread in threads}
        with self.lock:
            for job in self.jobs:
                if job.thread_id in idents and not job.finished:
                    job.abandoned = True
                    if job.waiting is not None:
                        job.waiting.deadline = self.clock.ticks  # due now: woken as any wait that is due

    def close(self) -> None:
        """The loop is closed: the threads that still wait in it go on waiting in real time."""
        with self.lock:
            self.closed = True
            self.line.clear()
            for job in self.jobs:
                wait, job.waiting = job.waiting, None
                if wait is not None and job.bell is not None:
                    wait.orphaned = True
                    job.bell.ring()
