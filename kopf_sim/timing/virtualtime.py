"""A virtual-time asyncio event loop: ``asyncio.sleep(3600)`` costs microseconds, deterministically.

The loop's clock is an integer number of microseconds (:data:`TICKS_PER_SECOND`); ``loop.time()``
is that integer divided by the tick rate, so 10,000 sleeps of 0.1 s end at exactly 1000.0.
The clock jumps to the next timer only when nothing else can run: no ready callbacks (the
in-memory HTTP transport of :mod:`kopf_sim.transports.inmemory` is made of ``call_soon`` callbacks, so
its pending I/O counts as ready), no executor jobs in flight, and only after a few zero-time
polls of I/O and thread-safe calls found nothing. As new tasks start with a ready callback,
they run at the current time, as many zero-time iterations as they need, before any jump: a
timeout never fires before the inner sleep is scheduled. A jump is never smaller than one
tick, so a sub-tick sleep (``1e-9``) is rounded up: it neither spins nor hangs.
Executor jobs (sync handlers in threads) hold the time still while they compute; meanwhile,
the loop keeps serving their thread-safe calls. A job that waits in a way the loop knows of
(:meth:`VirtualTimeLoop.wait_in_thread`: until a virtual deadline and/or until a condition
holds, e.g. a flag is set or the loop has answered a request) counts as idle: when every
job is idle, the clock may jump to the earliest of the timers and the threads' deadlines.
The loop itself wakes such a thread (deadline reached, condition met) and counts it as busy
again before its next decision, so it never jumps ahead of a thread that has not resumed.
The threads due at one moment run one after another, in a fixed order (deadline, then the start
of the wait), each woken by the one before it as it waits again, while the loop sleeps: a wake-up
is then one switch of threads, not two (see ``benchmarks/bench_threads.py``). A thread that keeps
its turn for ``LINE_PATIENCE`` lets the others due go on together (it may wait for one of them).
When nothing can ever happen (no ready callbacks, no timers, no executor jobs at work, no
I/O), the loop raises :class:`DeadlockError` naming the stuck tasks and where they wait
(and the waiting threads with their stacks), instead of hanging. Real sockets have no place
here: a quiescent loop with real file descriptors registered raises :class:`RealIOError`.

The clock is an object of its own (:class:`kopf_sim.timing.loopclock.VirtualClock`, the loop's
:attr:`VirtualTimeLoop.clock`), implementing the interface of a loop's clock
(:class:`kopf_sim.timing.loopclock.LoopClock`, after trio's ``Clock`` and ``MockClock``); the loop moves it.
The loop overrides asyncio's private ``_run_once`` to take its decision before each iteration, where
the ready queue, the timers and the executor jobs are all visible. Why this loop and not looptime:
the "Virtual time" section of ``docs/sim.md``.

Usage::

    from kopf_sim.timing import virtualtime

    async def main() -> None:
        await asyncio.sleep(3600)                  # instant
        assert asyncio.get_running_loop().time() == 3600.0

    virtualtime.run(main())                        # like asyncio.run(), a fresh loop each call

    cluster = Cluster(clock=virtualtime.loop_clock(None, EPOCH))   # timestamps follow the loop

With pytest-asyncio 1.5, in a conftest or a plugin (all async tests & fixtures under it; the
scope of ``asyncio_default_fixture_loop_scope`` -- "function" -- gives each test a fresh loop)::

    def pytest_asyncio_loop_factories(config, item):
        return {"virtual": virtualtime.new_virtual_loop}

or, per test module (pytest-asyncio 1.5 warns that this override is deprecated)::

    @pytest.fixture(scope="module")
    def event_loop_policy() -> asyncio.AbstractEventLoopPolicy:
        return virtualtime.VirtualTimePolicy()

The installed looptime pytest plugin re-classes every pytest-asyncio loop (ours too) with its
mixin, disabled: harmless, but do not mark tests in these loops with ``@pytest.mark.looptime``.
Pytest-asyncio runs all examples of an async hypothesis test in one loop, so their time adds
up: decorate such tests with :func:`isolated` (below ``@given``) to give each example its loop.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import datetime
import functools
import heapq
import selectors
import threading
import time
import types
import weakref
from collections.abc import Callable, Coroutine, Iterable, Mapping
from typing import Any, ParamSpec, TypeVar, TypeVarTuple

from kopf_sim.timing import affinity
from kopf_sim.timing.loopclock import TICKS_PER_SECOND, VirtualClock
from kopf_sim.timing.threadjobs import (
    Job,
    JobAbandoned,
    RecordingExecutor,
    ThreadJobs,
    describe_call,
    describe_threads,
    marked_job,
    run_job,
)

__all__ = [
    "DEFAULT_EPOCH",
    "TICKS_PER_SECOND",
    "DeadlockError",
    "JobAbandoned",
    "LivelockError",
    "RealIOError",
    "TimeLimitError",
    "VirtualTimeError",
    "VirtualTimeLoop",
    "VirtualTimePolicy",
    "default_executor_threads",
    "describe_tasks",
    "describe_threads",
    "isolated",
    "job_loop",
    "job_serial",
    "loop_clock",
    "new_virtual_loop",
    "run",
]

_T = TypeVar("_T")
_P = ParamSpec("_P")
_Ts = TypeVarTuple("_Ts")

DEFAULT_EPOCH = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
"""The wall-clock moment of loop time 0, unless another epoch is given."""

_UNIX_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)

DEFAULT_NOOP_CYCLES = 3

DEFAULT_EXECUTOR_TIMEOUT = 60.0

LINE_PATIENCE = 0.02
"""Real seconds that the threads due at one moment wait for the turn of the one before them (one at a time, in
a fixed order, is cheapest & deterministic); then they all go on at once, in case it waits for one of them
(e.g. a queue between threads, which the loop does not know of) or for something slow (e.g. a real service)."""


class VirtualTimeError(RuntimeError):
    """Base class of the errors by which a virtual-time loop refuses to hang."""


class DeadlockError(VirtualTimeError):
    """Nothing can ever happen in the loop (or an executor job never returns), yet it is not done."""

    def __init__(self, message: str, *, loop_time: float, tasks: Iterable[asyncio.Task[Any]] = ()) -> None:
        super().__init__(message)
        self.loop_time = loop_time
        self.tasks = list(tasks)


class TimeLimitError(DeadlockError):
    """The loop's time would pass its limit: a livelock of timers while the awaited never comes."""


class LivelockError(VirtualTimeError):
    """The loop keeps running with no time passing (e.g. an endless update loop), so its timers never come.

    Raised out of the loop's run by :meth:`VirtualTimeLoop.interrupt` (whoever sees the livelock knows what it
    is: the loop itself cannot tell an endless loop of callbacks from a long but finite burst of work).
    """

    def __init__(self, message: str, *, loop_time: float) -> None:
        super().__init__(message)
        self.loop_time = loop_time


class RealIOError(VirtualTimeError):
    """The loop would wait on real file descriptors (sockets, pipes), which virtual time cannot do."""


def job_loop() -> VirtualTimeLoop | None:
    """The virtual-time loop whose executor job the current thread runs (None in other threads)."""
    loop, _ = marked_job()
    return loop if isinstance(loop, VirtualTimeLoop) and not loop.is_closed() else None


def job_serial() -> int | None:
    """Which of its loop's executor jobs the current thread runs: its serial (1, 2, ... by submission), or None.

    The loop submits its jobs in the same order in every run of the same code, so the serial names a job
    the same way in every run, whatever the threads' interleaving (e.g. to give each job its own seed).
    """
    loop, job = marked_job()
    return job.serial if job is not None and loop is not None else None


class _GatedSelector(selectors.BaseSelector):
    """A selector that blocks for real only as long as the loop allows (by default: never)."""

    def __init__(self, selector: selectors.BaseSelector) -> None:
        self.selector = selector
        self.max_timeout: float | None = 0.0  # None means no limit
        self.nothing_to_poll = False  # the loop knows that a non-blocking poll would find nothing
        self.registered = 0  # how many file objects are registered (cheaper to read than the map's length)

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        limit = self.max_timeout
        if limit is not None and (timeout is None or timeout > limit):
            timeout = limit
        if timeout == 0 and self.nothing_to_poll:
            return []
        return self.selector.select(timeout)

    def register(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        key = self.selector.register(fileobj, events, data)
        self.registered += 1
        return key

    def unregister(self, fileobj: Any) -> selectors.SelectorKey:
        key = self.selector.unregister(fileobj)
        self.registered -= 1
        return key

    def modify(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        return self.selector.modify(fileobj, events, data)

    def get_key(self, fileobj: Any) -> selectors.SelectorKey:
        return self.selector.get_key(fileobj)

    def get_map(self) -> Mapping[Any, selectors.SelectorKey]:
        return self.selector.get_map()

    def close(self) -> None:
        self.selector.close()


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    """An event loop whose clock is virtual and jumps to the next timer when nothing else can run.

    :param start: the loop time (seconds) to start at.
    :param epoch: the wall-clock moment of loop time 0 (for :func:`loop_clock` and :meth:`now`).
    :param noop_cycles: zero-time polls (I/O, thread-safe calls) of an idle loop before its clock jumps.
    :param executor_timeout: real seconds an executor job may hold the time still before it is
        reported as stuck (e.g. a thread waiting for a timer of the loop); ``None``: wait forever.
    :param time_limit: the loop time (seconds) that the clock must not pass; a jump beyond it
        raises :class:`TimeLimitError` naming the pending tasks; ``None``: no limit.
    :param one_cpu: while the loop sleeps for its executor jobs, its thread and those of the jobs that wait
        in virtual time run on one CPU (Linux): they take turns anyway, and a turn costs a third there
        (:mod:`kopf_sim.timing.affinity`).
    """

    # Internals of asyncio.BaseEventLoop: read to know whether anything can run; only the
    # resolution is written (timers closer than it to the current time are due).
    _ready: collections.deque[asyncio.Handle]
    _scheduled: list[asyncio.TimerHandle]
    _stopping: bool
    _clock_resolution: float
    _timer_cancelled_count: int
    _signal_handlers: dict[int, asyncio.Handle]

    def __init__(
        self,
        *,
        start: float = 0.0,
        epoch: datetime.datetime = DEFAULT_EPOCH,
        noop_cycles: int = DEFAULT_NOOP_CYCLES,
        executor_timeout: float | None = DEFAULT_EXECUTOR_TIMEOUT,
        time_limit: float | None = None,
        one_cpu: bool = True,
    ) -> None:
        self._vt_clock = VirtualClock(start=start)
        self._vt_threads = ThreadJobs(self, self._vt_clock, one_cpu=one_cpu)
        self._vt_gate = _GatedSelector(selectors.DefaultSelector())
        super().__init__(selector=self._vt_gate)
        if epoch.tzinfo is None:
            self.close()
            raise ValueError(f"The epoch must be timezone-aware, got {epoch!r}.")
        self._clock_resolution = self._vt_clock.resolution
        self.epoch = epoch
        self._vt_epoch_ns = (epoch - _UNIX_EPOCH) // datetime.timedelta(microseconds=1) * 1000
        self.noop_cycles = noop_cycles
        self.executor_timeout = executor_timeout
        self.time_limit = time_limit
        self._vt_holds = 0  # activities other than executor jobs that hold the time (e.g. shutdowns)
        self._vt_default_executor: concurrent.futures.ThreadPoolExecutor | None = None
        self._vt_own_fds = {key.fd for key in self._vt_gate.get_map().values()}  # the self-pipe
        self._vt_woken = False  # a thread has written into the self-pipe since the last poll
        self._vt_interrupt: BaseException | None = None  # raised out of the loop's run before its next iteration

    # -- the clock ----------------------------------------------------------------------------

    @property
    def clock(self) -> VirtualClock:
        """The loop's clock (:class:`kopf_sim.timing.loopclock.LoopClock`): moved by the loop, never by real time."""
        return self._vt_clock

    def describe_jobs_in(self, threads: Iterable[threading.Thread], title: str) -> str | None:
        """What this loop's executor jobs do in these threads (what each runs, how it waits, its stack), if any."""
        return self._vt_threads.describe_in(threads, title)

    def time(self) -> float:
        return self._vt_clock.time()

    @property
    def ticks(self) -> int:
        """The loop time as an integer number of ticks (:data:`TICKS_PER_SECOND` per second)."""
        return self._vt_clock.ticks

    @property
    def _vt_ticks(self) -> int:
        return self._vt_clock.ticks

    @property
    def epoch_ns(self) -> int:
        """The epoch in nanoseconds since 1970-01-01 UTC (for wall clocks that read the loop often)."""
        return self._vt_epoch_ns

    def now(self) -> datetime.datetime:
        """The wall-clock time of this loop: the epoch plus the loop time, to the microsecond."""
        return self.epoch + datetime.timedelta(microseconds=self._vt_ticks * 1_000_000 // TICKS_PER_SECOND)

    @property
    def one_cpu(self) -> bool:
        """Whether the threads that take turns run on one CPU (see the parameter); settable, e.g. to compare."""
        return self._vt_threads.pinnable

    @one_cpu.setter
    def one_cpu(self, value: bool) -> None:
        self._vt_threads.pinnable = value and affinity.available()

    # -- the scheduling -----------------------------------------------------------------------

    def _run_once(self) -> None:
        if self._vt_interrupt is not None:
            error, self._vt_interrupt = self._vt_interrupt, None
            raise error
        self._prepare_iteration()
        super()._run_once()  # type: ignore[misc]

    def interrupt(self, error: BaseException) -> None:
        """Raise this error out of the loop's run (``run_until_complete()``) before its next iteration, once.

        For what the loop cannot see by itself, e.g. a :class:`LivelockError` (busy with no time passing): the
        loop would run on at the same moment forever, its timers (timeouts included) never due. As a
        :class:`DeadlockError`, the error ends the run; what was running stays pending (to be cancelled).
        """
        self._vt_interrupt = error

    def _prepare_iteration(self) -> None:
        """Decide, before an iteration, whether it polls, waits for threads, idles, jumps, or fails.

        While only threads are due (no callbacks, no timers), the decisions go on here, with no
        iterations in between: wake the due threads, sleep until they are idle again, jump, and so on.
        """
        self._vt_gate.max_timeout = 0.0  # never block for real, unless threads are at work
        self._vt_gate.nothing_to_poll = False
        if self._stopping:
            return
        while not self._ready:
            if self._decide():
                return
        self._vt_gate.nothing_to_poll = self._nothing_to_poll()

    def _decide(self) -> bool:
        """Decide with no ready callbacks: whether the iteration may go on (else, decide again)."""
        deadline: int | None = None
        waiting = False
        threads = self._vt_threads
        if threads.jobs or self._vt_holds:
            busy, waiting, deadline = threads.sort(threads.prune())
            if busy:
                return self._sleep_for_threads(busy)  # (the busy threads may have gone idle meanwhile)
            if self._vt_holds and not waiting:
                self._wait_for_threads([])
                return True

        # Zero-time cycles: poll I/O and thread-safe calls, with no timers due. An idle iteration does
        # nothing else, so polling here is the same, only cheaper; what arrives stays in the (level-
        # triggered) selector for this iteration to process. With nothing but the self-pipe to poll, a
        # look at the ready callbacks is the same as a poll (the thread-safe calls put theirs there first).
        if self._only_the_self_pipe():
            if self._ready:
                return True
        else:
            for _ in range(self.noop_cycles):
                if self._vt_gate.selector.select(0):
                    return True
            fds = self._real_fds()
            if fds:
                raise RealIOError(self._describe_real_io(fds))

        when = self._next_timer()
        if when is None and deadline is None:
            if self._vt_holds:  # e.g. the default executor's shutdown, joining threads that wait for a flag
                self._wait_for_threads([])
                return True
            idle = f"\n{describe_threads(threads.jobs, 'Threads waiting with no deadline')}" if waiting else ""
            raise DeadlockError(
                f"Deadlock at loop time {self.time()!r}: nothing can run (no ready callbacks, no timers,"
                f" no executor jobs at work, no I/O), yet the loop is waiting.{idle}\n{describe_tasks(self)}",
                loop_time=self.time(),
                tasks=asyncio.all_tasks(self),
            )
        timer = self._jump_target(when) if when is not None else None
        target = timer if deadline is None or (timer is not None and timer <= deadline) else deadline
        assert target is not None
        if self.time_limit is not None and target > round(self.time_limit * TICKS_PER_SECOND):
            raise TimeLimitError(
                f"The loop time would pass its limit of {self.time_limit!r} s (the next timer is at"
                f" {target / TICKS_PER_SECOND!r}); the awaited never came.\n{describe_tasks(self)}",
                loop_time=self.time(),
                tasks=asyncio.all_tasks(self),
            )
        self._set_ticks(target)
        if deadline is None or deadline > target:
            return True  # only timers are due: the iteration runs them
        timers_due = timer is not None and timer <= target  # if so, the iteration runs them while the threads run
        busy = threads.wake_the_soonest(sleep=not timers_due)
        return timers_due or not busy or self._sleep_for_threads(busy)

    def _only_the_self_pipe(self) -> bool:
        """Whether nothing but the self-pipe can wake the loop: no other file descriptors, no signal handlers."""
        return not self._signal_handlers and self._vt_gate.registered == len(self._vt_own_fds)

    def _sleep_for_threads(self, busy: list[Job]) -> bool:
        """Sleep until the busy threads are idle (see :meth:`_sleep_until_idle`), on the threads' CPU from now on.

        The loop's thread stays pinned until the loop stops running (``run_forever()`` returns): a pin at every
        sleep and a release after it would cost two system calls a time, ~17 µs with the thread's migrations.
        """
        threads = self._vt_threads
        if threads.pinnable and threads.free_cpus is None:
            threads.pin_loop_thread()
        return self._sleep_until_idle(busy)

    def _sleep_until_idle(self, busy: list[Job]) -> bool:
        """Block until the busy threads are idle, or a thread-safe call, I/O or a signal comes; whether to iterate.

        The loop polls its selector here, not in an iteration: while nothing but the threads' wake-ups
        come, it goes on deciding with no iterations in between. While it sleeps (or is about to), the
        threads due at the moment pass the turn on among themselves; whatever wakes it takes the turn back.
        If a thread keeps the turn for longer than ``LINE_PATIENCE``, the others due go on at once.
        Real I/O is left in the (level-triggered) selector for the iteration to process.
        """
        timeout = self._thread_timeout(busy)
        threads = self._vt_threads
        if not threads.fall_asleep(self._ready):
            return False
        while True:
            patient = timeout is None or timeout > LINE_PATIENCE
            try:
                events = self._vt_gate.selector.select(LINE_PATIENCE if patient else timeout)
            except BaseException:  # e.g. KeyboardInterrupt: the loop is awake, the threads stop passing the turn on
                threads.wake_up()
                raise
            awaited = threads.after_poll(patient=patient, events=bool(events))
            if not awaited:
                break
            timeout = self._thread_timeout(awaited, report=False)
            if timeout is not None and timeout <= 0:  # the next decision reports them
                threads.give_up_sleep()
                break
        real_io = False
        for key, _ in events:
            if key.fd in self._vt_own_fds:
                self._read_from_self()  # type: ignore[attr-defined]  # drained here; signals are handled
            else:
                real_io = True
        return real_io

    # -- the loop's part in the threads' turns (see ThreadJobs.next_line_by_thread) -------------

    def threads_alone(self) -> bool:
        """Whether nothing but the waits of the executor jobs' threads can happen now (call with their lock held)."""
        return not (self._ready or self._vt_holds or self._stopping or not self._only_the_self_pipe())

    def jump_for_threads(self, deadline: int) -> bool:
        """Jump to the threads' earliest deadline, unless a timer comes first (or at once) or the limit is passed."""
        scheduled = self._scheduled
        if scheduled and (scheduled[0].cancelled() or self._jump_target(scheduled[0].when()) <= deadline):
            return False  # a timer comes first (or at the same moment): the loop runs it
        if self.time_limit is not None and deadline > round(self.time_limit * TICKS_PER_SECOND):
            return False  # the loop reports it
        self._set_ticks(deadline)
        return True

    def wake_for_threads(self) -> None:
        super()._write_to_self()  # type: ignore[misc]

    def run_forever(self) -> None:
        """Run as usual; the loop's thread gets its CPUs back when the loop stops (e.g. between a test's steps)."""
        try:
            super().run_forever()
        finally:
            self._vt_threads.unpin_loop_thread()

    def _nothing_to_poll(self) -> bool:
        """A busy iteration skips the poll (a system call) if only the self-pipe is there and nobody wrote into it.

        Threads write into it through ``call_soon_threadsafe()``, which marks the loop as woken first;
        signals write into it directly, so the loops with signal handlers poll every time. An idle
        iteration polls anyway (before a jump), so nothing is missed for longer than the busy spell.
        """
        if self._vt_woken or not self._only_the_self_pipe():
            self._vt_woken = False  # cleared before the poll: a wake-up after it is seen next time
            return False
        return True

    def _write_to_self(self) -> None:
        """Wake the loop (e.g. for a thread-safe call); if it sleeps, the turn of the threads due goes back to it."""
        self._vt_threads.wake_up()
        self._vt_woken = True
        super()._write_to_self()  # type: ignore[misc]

    def _set_ticks(self, ticks: int) -> None:
        self._vt_clock.jump(ticks)
        self._clock_resolution = self._vt_clock.resolution  # asyncio's own name for it

    def _jump_target(self, when: float) -> int:
        """The tick of a timer: the nearest one if only float noise away, else the next one; never now."""
        return self._vt_clock.tick_of(when)

    def _next_timer(self) -> float | None:
        """The earliest timer's moment; the cancelled ones at the head are dropped (as asyncio's iteration does)."""
        scheduled = self._scheduled
        while scheduled and scheduled[0].cancelled():
            handle = heapq.heappop(scheduled)
            handle._scheduled = False  # type: ignore[attr-defined]
            self._timer_cancelled_count -= 1
        return scheduled[0].when() if scheduled else None

    def _wait_for_threads(self, jobs: list[Job]) -> None:
        """Let the selector block for real (the self-pipe wakes it), but not past the executor timeout."""
        self._vt_gate.max_timeout = self._thread_timeout(jobs)

    def _thread_timeout(self, jobs: list[Job], *, report: bool = True) -> float | None:
        """How long (real seconds) the loop may wait for its busy threads; None: no limit; raises if they are stuck."""
        if self.executor_timeout is None or not jobs:
            return None
        oldest = min(job.busy_since for job in jobs)
        remaining = oldest + self.executor_timeout - time.perf_counter()
        if remaining > 0 or not report:
            return remaining
        now = time.perf_counter()
        stuck = describe_threads(jobs, "Threads at work", now=now)
        for job in jobs:  # reported once: the clean-up (e.g. cancelling the tasks) goes on in virtual time
            job.reported = True
        raise DeadlockError(
            f"Executor jobs hold the loop time at {self.time()!r} for more than {self.executor_timeout} real"
            f" seconds (a thread that computes, or waits for something the loop does not know of, holds the"
            f" virtual time):\n{stuck}\n{describe_tasks(self)}",
            loop_time=self.time(),
            tasks=asyncio.all_tasks(self),
        )

    def _real_fds(self) -> list[selectors.SelectorKey]:
        return [key for key in self._vt_gate.get_map().values() if key.fd not in self._vt_own_fds]

    def _describe_real_io(self, keys: list[selectors.SelectorKey]) -> str:
        lines = []
        for key in keys:
            reader, writer = key.data if isinstance(key.data, tuple) else (key.data, None)
            lines.append(f"  - fd {key.fd} ({key.fileobj!r}): reader={reader!r}, writer={writer!r}")
        return (
            f"The loop at time {self.time()!r} has nothing to run but real I/O to wait for, which virtual"
            f" time cannot do (use the in-memory transport instead of sockets):\n"
            + "\n".join(lines)
            + f"\n{describe_tasks(self)}"
        )

    # -- the executors ------------------------------------------------------------------------

    def run_in_executor(
        self,
        executor: concurrent.futures.Executor | None,
        func: Callable[[*_Ts], _T],
        *args: *_Ts,
    ) -> asyncio.Future[_T]:
        if executor is None:
            executor = self._get_default_executor()
        recorder = RecordingExecutor(executor)
        job = Job(describe_call(func, args), executor, time.perf_counter(), serial=next(self._vt_threads.serials))
        call: Callable[[], _T] = functools.partial(run_job, self, job, func, *args)
        future = super().run_in_executor(recorder, call)
        if recorder.submitted is not None:
            job.concurrent_future, job.future = recorder.submitted, future
            self._vt_threads.add(job)
        return future

    def wait_in_thread(self, timeout: float | None = None, until: Callable[[], bool] | None = None) -> bool:
        """Block the current thread (one of this loop's executor jobs) as an idle one; whether ``until()`` holds.

        The wait ends when ``timeout`` virtual seconds have passed (the clock jumps there if nothing
        else is due earlier), or when ``until()`` is true (the loop checks it whenever it is idle:
        e.g. a flag set by the loop's callbacks, or an answer of the loop to the thread's request),
        whichever comes first. ``until`` must be cheap and thread-safe. After the loop is closed,
        the thread waits the rest of the time in real time.
        """
        loop, job = marked_job()
        if loop is not self or job is None:
            raise RuntimeError("wait_in_thread() is only for the threads that run this loop's executor jobs.")
        return self._vt_threads.wait(job, timeout, until)

    def abandon_jobs_in(self, threads: Iterable[threading.Thread]) -> None:
        """Abandon the jobs that these threads run (as when their process is killed): they wake up now.

        Each of them raises :class:`JobAbandoned` in its thread from its current (or next) wait in virtual time
        (``time.sleep()``, a sync wait for a flag), so its code goes no further than its ``finally`` clauses.
        A job that computes goes on until it waits (or returns).
        """
        self._vt_threads.abandon_in(threads)

    def block(self, seconds: float) -> None:
        """The loop's own thread is blocked for ``seconds`` (e.g. a blocking sleep in async code): the clock moves on.

        No real time passes; the timers due meanwhile run late, as they would after a real blocking call.
        """
        if seconds > 0:
            self._set_ticks(self._vt_ticks + self._ticks_of(seconds))

    def _ticks_of(self, seconds: float) -> int:
        """A duration in ticks, at least one: the nearest tick if only float noise away, else rounded up."""
        return self._vt_clock.ticks_of(seconds)

    def close(self) -> None:
        """Close the loop; the threads that still wait in it go on waiting in real time."""
        self._vt_threads.close()
        super().close()

    def set_default_executor(self, executor: concurrent.futures.ThreadPoolExecutor) -> None:  # type: ignore[override]
        super().set_default_executor(executor)
        self._vt_default_executor = executor
        _default_executors.add(executor)

    def _get_default_executor(self) -> concurrent.futures.ThreadPoolExecutor:
        if self._vt_default_executor is None:
            self.set_default_executor(concurrent.futures.ThreadPoolExecutor(thread_name_prefix="asyncio"))
        assert self._vt_default_executor is not None
        return self._vt_default_executor

    async def shutdown_default_executor(self, *args: Any) -> None:  # Python 3.12+ passes a timeout
        # The base class joins the executor in a thread of its own and awaits a thread-safe call.
        self._vt_holds += 1
        try:
            await super().shutdown_default_executor(*args)
        finally:
            self._vt_holds -= 1


#: The default executors of the virtual loops (``asyncio.to_thread()``'s), as long as they are alive.
_default_executors: weakref.WeakSet[concurrent.futures.ThreadPoolExecutor] = weakref.WeakSet()


def default_executor_threads() -> set[threading.Thread]:
    """The threads of every virtual loop's default executor: the loops' own, kept idle between their jobs.

    Several loops live in one process (a test's, the worlds of a check): the idle threads that one loop's
    ``asyncio.to_thread()`` has started are no leak of an operator running in another loop.
    """
    return {thread for executor in list(_default_executors) for thread in getattr(executor, "_threads", ())}


# -- diagnostics ------------------------------------------------------------------------------


def _await_chain(awaitable: Any) -> list[str]:
    """Where a coroutine (and what it awaits, and so on) is suspended: ``qualname (file:line)``."""
    chain: list[str] = []
    seen: set[int] = set()
    while awaitable is not None and id(awaitable) not in seen:
        seen.add(id(awaitable))
        frame: types.FrameType | None = None
        inner: Any = None
        for prefix, awaited in (("cr", "cr_await"), ("ag", "ag_await"), ("gi", "gi_yieldfrom")):
            if hasattr(awaitable, f"{prefix}_frame"):
                frame = getattr(awaitable, f"{prefix}_frame")
                inner = getattr(awaitable, awaited, None)
                break
        else:
            break
        if frame is None:
            break
        code = frame.f_code
        chain.append(f"{code.co_qualname} ({code.co_filename}:{frame.f_lineno})")
        awaitable = inner
    return chain


def describe_tasks(loop: asyncio.AbstractEventLoop) -> str:
    """A human-readable list of the loop's pending tasks: names, coroutines, and where they wait."""
    tasks = sorted(asyncio.all_tasks(loop), key=lambda task: task.get_name())
    if not tasks:
        return "No tasks are pending."
    lines = [f"Pending tasks ({len(tasks)}):"]
    for task in tasks:
        coro = task.get_coro()
        name = getattr(coro, "__qualname__", None) or repr(coro)
        lines.append(f"  - Task {task.get_name()!r} running {name}():")
        for place in _await_chain(coro):
            lines.append(f"      at {place}")
        waiter = getattr(task, "_fut_waiter", None)  # diagnostics only: what the task awaits
        if waiter is not None:
            lines.append(f"      awaiting {waiter!r}")
    return "\n".join(lines)


# -- construction & running -------------------------------------------------------------------


def new_virtual_loop(
    start: float = 0.0,
    *,
    epoch: datetime.datetime = DEFAULT_EPOCH,
    noop_cycles: int = DEFAULT_NOOP_CYCLES,
    executor_timeout: float | None = DEFAULT_EXECUTOR_TIMEOUT,
    time_limit: float | None = None,
) -> VirtualTimeLoop:
    """A new (not running, not set as current) virtual-time loop."""
    return VirtualTimeLoop(
        start=start,
        epoch=epoch,
        noop_cycles=noop_cycles,
        executor_timeout=executor_timeout,
        time_limit=time_limit,
    )


def run(
    main: Coroutine[Any, Any, _T],
    *,
    start: float = 0.0,
    epoch: datetime.datetime = DEFAULT_EPOCH,
    debug: bool | None = None,
    noop_cycles: int = DEFAULT_NOOP_CYCLES,
    executor_timeout: float | None = DEFAULT_EXECUTOR_TIMEOUT,
    time_limit: float | None = None,
) -> _T:
    """Like :func:`asyncio.run`, but in a fresh virtual-time loop (so every call starts at ``start``)."""
    factory = functools.partial(
        new_virtual_loop,
        start,
        epoch=epoch,
        noop_cycles=noop_cycles,
        executor_timeout=executor_timeout,
        time_limit=time_limit,
    )
    with asyncio.Runner(debug=debug, loop_factory=factory) as runner:
        return runner.run(main)


def isolated(fn: Callable[_P, Coroutine[Any, Any, _T]]) -> Callable[_P, _T]:
    """Turn an async function into a sync one that runs every call in a fresh virtual-time loop.

    For property-based tests, where each example must start at loop time 0::

        @hypothesis.given(st.integers())
        @virtualtime.isolated
        async def test_something(n: int) -> None: ...
    """

    @functools.wraps(fn)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _T:
        return run(fn(*args, **kwargs))

    return wrapper


def loop_clock(
    loop: asyncio.AbstractEventLoop | None,
    epoch: datetime.datetime | None = None,
) -> Callable[[], datetime.datetime]:
    """A clock (e.g. for ``Cluster(clock=...)``) that reads ``epoch`` plus the loop's time.

    With ``loop=None``, the loop running at each call is used. With ``epoch=None``, the virtual
    loop's own epoch is used (:data:`DEFAULT_EPOCH` for other loops). Virtual loops are read
    to the exact microsecond, with no float rounding.
    """
    if epoch is not None and epoch.tzinfo is None:
        raise ValueError(f"The epoch must be timezone-aware, got {epoch!r}.")

    def clock() -> datetime.datetime:
        current = loop if loop is not None else asyncio.get_running_loop()
        if isinstance(current, VirtualTimeLoop):
            base = epoch if epoch is not None else current.epoch
            return base + datetime.timedelta(microseconds=current.ticks * 1_000_000 // TICKS_PER_SECOND)
        base = epoch if epoch is not None else DEFAULT_EPOCH
        return base + datetime.timedelta(seconds=current.time())

    return clock


class VirtualTimePolicy(asyncio.DefaultEventLoopPolicy):
    """An event-loop policy whose new loops are virtual-time loops (for pytest-asyncio's runners)."""

    def __init__(
        self,
        *,
        start: float = 0.0,
        epoch: datetime.datetime = DEFAULT_EPOCH,
        noop_cycles: int = DEFAULT_NOOP_CYCLES,
        executor_timeout: float | None = DEFAULT_EXECUTOR_TIMEOUT,
        time_limit: float | None = None,
    ) -> None:
        super().__init__()
        self._factory = functools.partial(
            new_virtual_loop,
            start,
            epoch=epoch,
            noop_cycles=noop_cycles,
            executor_timeout=executor_timeout,
            time_limit=time_limit,
        )

    def new_event_loop(self) -> VirtualTimeLoop:
        return self._factory()
