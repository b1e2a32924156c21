"""The executor of an operator under test: its own limit and jobs, on threads kept for the whole session.

A fresh thread pool per test starts a thread for the first sync handler and joins it at the end: on the
virtual machines of this project, that costs more than the rest of a short test's handling (the new
thread takes the GIL from the loop as it starts). :class:`LentThreadsExecutor` is a thread pool as far
as the operator and its settings can tell (``settings.execution.max_workers`` reads and sets its limit),
but runs its jobs on the threads of one pool shared by the tests of the session (:func:`shared_pool`).
After the operator stops, :meth:`LentThreadsExecutor.finish` cancels its jobs that have not started,
waits a little for those that have, and names the threads still busy with them (the test's leaks).
Such threads are not lent again: the shared pool is replaced.

The shared pool's threads are daemon threads of the plugin's own pool (:class:`DaemonThreadPool`), not those
of :class:`concurrent.futures.ThreadPoolExecutor`: that one joins its threads at the interpreter's exit, so a
user's sync daemon that never ends (``while True: time.sleep(10)``), already reported as leaked, would hang
the pytest process after the session. A daemon thread is left running at the exit instead.
"""

from __future__ import annotations

import collections
import concurrent.futures
import itertools
import queue
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["DaemonThreadPool", "LentThreadsExecutor", "shared_pool"]

_T = TypeVar("_T")

#: The shared pool's own limit: the executors lent its threads keep to their own limits.
_SHARED_MAX_WORKERS = 1024


class DaemonThreadPool(concurrent.futures.Executor):
    """A thread pool of daemon threads that the interpreter's exit does not wait for.

    As :class:`concurrent.futures.ThreadPoolExecutor` (a thread per job up to ``max_workers``, idle threads
    reused), but its threads are daemons and are not registered for the join at exit: a job that never ends
    cannot keep the process from exiting. ``shutdown(wait=False)`` lets the idle threads exit at once and the
    busy ones when their jobs end.
    """

    def __init__(self, max_workers: int, thread_name_prefix: str = "daemon-pool") -> None:
        self._max_workers = max_workers
        self._prefix = thread_name_prefix
        self._queue: queue.SimpleQueue[tuple[concurrent.futures.Future[Any], Callable[[], Any]] | None] = (
            queue.SimpleQueue()
        )
        self._idle = threading.Semaphore(0)  # released by each thread that waits for a job
        self._lock = threading.Lock()
        self._threads: set[threading.Thread] = set()
        self._counter = itertools.count()
        self._shutdown = False

    def submit(self, fn: Callable[..., _T], /, *args: Any, **kwargs: Any) -> concurrent.futures.Future[_T]:
        future: concurrent.futures.Future[_T] = concurrent.futures.Future()
        with self._lock:
            if self._shutdown:
                raise RuntimeError("cannot schedule new futures after shutdown")
            self._queue.put((future, lambda: fn(*args, **kwargs)))
            if not self._idle.acquire(blocking=False) and len(self._threads) < self._max_workers:
                thread = threading.Thread(target=self._work, name=f"{self._prefix}_{next(self._counter)}", daemon=True)
                self._threads.add(thread)
                thread.start()
        return future

    def _work(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:  # shut down: the next thread gets the word too
                self._queue.put(None)
                return
            future, call = item
            del item
            if future.set_running_or_notify_cancel():
                try:
                    result = call()
                except BaseException as exc:
                    future.set_exception(exc)
                else:
                    future.set_result(result)
            del future, call
            self._idle.release()

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._lock:
            self._shutdown = True
            if cancel_futures:
                while True:
                    try:
                        item = self._queue.get_nowait()
                    except queue.Empty:
                        break
                    if item is not None:
                        item[0].cancel()
            self._queue.put(None)
            threads = list(self._threads)
        if wait:
            for thread in threads:
                thread.join()


_shared: DaemonThreadPool | None = None
_shared_lock = threading.Lock()


def shared_pool() -> DaemonThreadPool:
    """The session's pool of worker threads (made on first use)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = DaemonThreadPool(_SHARED_MAX_WORKERS, thread_name_prefix="kopf-handlers")
        return _shared


def _retire(pool: DaemonThreadPool) -> None:
    """Lend no more threads of a pool with a busy one; its idle threads exit, the busy ones when done."""
    global _shared
    with _shared_lock:
        if _shared is pool:
            _shared = None
    pool.shutdown(wait=False)


def shared_threads() -> frozenset[threading.Thread]:
    """The threads of the shared pool now (they stay alive between tests, so they are no leaks)."""
    with _shared_lock:
        pool = _shared
    return frozenset(getattr(pool, "_threads", ())) if pool is not None else frozenset()


class _Job:
    __slots__ = ("args", "fn", "future", "kwargs", "thread")

    def __init__(
        self,
        future: concurrent.futures.Future[Any],
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> None:
        self.future, self.fn, self.args, self.kwargs = future, fn, args, kwargs
        self.thread: threading.Thread | None = None


class LentThreadsExecutor(concurrent.futures.ThreadPoolExecutor):
    """A thread pool of one operator run: at most ``max_workers`` jobs at once, on the shared threads."""

    def __init__(self, max_workers: int | None = None) -> None:
        super().__init__(max_workers)  # only for its limit (``_max_workers``): it starts no threads of its own
        self._pool = shared_pool()
        self._lock = threading.Condition()
        self._waiting: collections.deque[_Job] = collections.deque()
        self._running: set[_Job] = set()
        self._closed = False

    def submit(self, fn: Callable[..., _T], /, *args: Any, **kwargs: Any) -> concurrent.futures.Future[_T]:
        future: concurrent.futures.Future[_T] = concurrent.futures.Future()
        job = _Job(future, fn, args, kwargs)
        with self._lock:
            if self._closed:
                raise RuntimeError("cannot schedule new futures after shutdown")
            if len(self._running) < self._max_workers:
                self._running.add(job)
            else:
                self._waiting.append(job)
                return future
        try:
            self._pool.submit(self._run, job)
        except RuntimeError:  # that pool was retired (another executor's thread got stuck): use the new one
            self._pool = shared_pool()
            self._pool.submit(self._run, job)
        return future

    def _run(self, job: _Job) -> None:
        while True:
            job.thread = threading.current_thread()
            if job.future.set_running_or_notify_cancel():
                try:
                    result = job.fn(*job.args, **job.kwargs)
                except BaseException as exc:
                    job.future.set_exception(exc)
                else:
                    job.future.set_result(result)
            with self._lock:
                self._running.discard(job)
                if not self._waiting or len(self._running) >= self._max_workers:
                    self._lock.notify_all()
                    return
                job = self._waiting.popleft()  # the next job goes on this thread at once
                self._running.add(job)

    def running_threads(self) -> list[threading.Thread]:
        """The threads that run this executor's jobs now."""
        with self._lock:
            return [job.thread for job in self._running if job.thread is not None]

    def pending(self) -> list[concurrent.futures.Future[Any]]:
        """The futures of the jobs that are running or waiting for a thread."""
        with self._lock:
            return [job.future for job in (*self._running, *self._waiting)]

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._lock:
            self._closed = True
            if cancel_futures:
                while self._waiting:
                    self._waiting.popleft().future.cancel()
            if wait:
                self._lock.wait_for(lambda: not self._running and not self._waiting)

    def finish(self, grace: float) -> list[threading.Thread]:
        """Shut down (cancelling the jobs not started), wait up to ``grace`` real seconds; the threads still busy.

        Those threads are not lent to anyone again (the shared pool is replaced), and they are not joined.
        """
        deadline = time.perf_counter() + grace
        self.shutdown(wait=False, cancel_futures=True)
        with self._lock:
            self._lock.wait_for(lambda: not self._running, timeout=max(0.0, deadline - time.perf_counter()))
            busy = [job.thread for job in self._running if job.thread is not None]
        if busy:
            _retire(self._pool)
        return busy
