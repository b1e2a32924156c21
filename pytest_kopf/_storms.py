"""A storm of retries: a handler of one object failing temporarily and retried at once, again and again.

Such a run never settles, but it moves on in virtual time (kopf waits its batching window between the
attempts), so the instant guard (:class:`~pytest_kopf.simcontrols.InstantGuard`) does not stop it: it would
go on until the settling time is over, at thousands of attempts. :func:`watch_storms` fails the run of a
simulated cluster as soon as one handler of one object has been retried :data:`STORM_RETRIES` times within
:data:`STORM_SECONDS` virtual seconds (kopf's shortest sensible retry delays are a second or more): the
checks' worlds and their reproductions watch for storms; other tests do not.
"""

from __future__ import annotations

import asyncio
import collections
import logging

from kopf_sim.http.faults import RequestInfo
from kopf_sim.timing.virtualtime import LivelockError

from .cluster import KopfCluster, SimKopfCluster
from .simcontrols import InstantGuard

__all__ = [
    "STORM_FAILURE",
    "STORM_REQUESTS",
    "STORM_RETRIES",
    "STORM_SECONDS",
    "RequestStorms",
    "RetryStorm",
    "RetryStorms",
    "watch_storms",
]

#: Retries of one handler of one object within :data:`STORM_SECONDS` that make a storm.
STORM_RETRIES = 20
#: The virtual seconds within which :data:`STORM_RETRIES` retries make a storm.
STORM_SECONDS = 5.0
#: Failures of one request (method and path) at one virtual instant that make a storm.
STORM_REQUESTS = 100
_RETRIED = (" failed temporarily: ", "Will retry.")
#: What the ``retries`` check says of a storm of retries.
STORM_FAILURE = "a handler is retried with no back-off"


class RetryStorm(LivelockError):
    """A handler retried again and again with (almost) no delay (the ``retries`` check reports it).

    Its message is the check's failure: a reproduction may meet the storm in a step (one that waits for the retry of
    a handler that a fault has failed, :func:`pytest_kopf.driving.caught_up`), not only in its verdict.
    """

    def __init__(self, details: str, *, loop_time: float) -> None:
        super().__init__(f"The check 'retries' has failed: {STORM_FAILURE}: {details}", loop_time=loop_time)
        self.details = details


class RetryStorms(logging.Handler):
    """Watches kopf's log records in one cluster's loop; a storm of retries fails the run through its guard."""

    def __init__(self, guard: InstantGuard, retries: int = STORM_RETRIES, seconds: float = STORM_SECONDS) -> None:
        super().__init__(logging.ERROR)
        self.guard = guard
        self.retries = retries
        self.seconds = seconds
        self._attempts: dict[tuple[str, str], collections.deque[float]] = {}

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        ref = getattr(record, "k8s_ref", None)
        if not message.startswith("Handler '") or not any(marker in message for marker in _RETRIED):
            return
        try:
            if asyncio.get_running_loop() is not self.guard.loop:  # another world's record (they alternate)
                return
        except RuntimeError:
            return
        where = f"{ref.get('namespace') or ''}/{ref.get('name')}" if isinstance(ref, dict) else "?"
        handler = message.split("'", 2)[1]
        now = self.guard.loop.time()
        attempts = self._attempts.setdefault((where, handler), collections.deque(maxlen=self.retries))
        attempts.append(now)
        if len(attempts) == self.retries and attempts[-1] - attempts[0] <= self.seconds:
            attempts.clear()
            self.guard.fail(
                RetryStorm(
                    f"{where}: handler {handler!r} was retried {self.retries} times within {self.seconds} virtual "
                    f"seconds: a storm of retries with (almost) no delay, never done. The last attempt: {message}",
                    loop_time=now,
                )
            )


class RequestStorms:
    """Counts the operator's failed requests at the current virtual instant; a storm fails the run through its guard."""

    def __init__(self, guard: InstantGuard, limit: int = STORM_REQUESTS) -> None:
        self.guard = guard
        self.limit = limit
        self._ticks = -1
        self._failures: collections.Counter[tuple[str, str]] = collections.Counter()

    def observe(self, info: RequestInfo, status: int) -> None:
        if 0 < status < 400:
            return
        ticks = self.guard.loop.ticks
        if ticks != self._ticks:
            self._ticks = ticks
            self._failures.clear()
        key = (info.method, info.path)
        self._failures[key] += 1
        if self._failures[key] % self.limit == 0:
            self.guard.fail(
                RetryStorm(
                    f"{info.method} {info.path} has failed {self._failures[key]} times at loop time "
                    f"{self.guard.loop.time()!r} (the last answer: {status or 'none'}): the operator repeats a "
                    f"failed request at once, with no back-off and no wait, so virtual time can never move on",
                    loop_time=self.guard.loop.time(),
                )
            )


def watch_storms(kopf_cluster: KopfCluster) -> None:
    """Fail the cluster's run (its settling, or its loop's run) at a storm of retries, until the cluster stops."""
    if not isinstance(kopf_cluster, SimKopfCluster) or kopf_cluster.sim.guard is None:
        return  # real time, or a real cluster: nothing to interrupt
    watcher = RetryStorms(kopf_cluster.sim.guard)
    logger = logging.getLogger("kopf")
    logger.addHandler(watcher)
    kopf_cluster.sim.cleanups.append(lambda: logger.removeHandler(watcher))
    kopf_cluster.sim.faults.observers.append(RequestStorms(kopf_cluster.sim.guard).observe)
