"""A storm of retries: a handler of one object failing temporarily and retried at once, again and again.

Such a run never settles, but it moves on in virtual time (kopf waits its batching window between the
attempts), so the instant guard (:class:`~pytest_kopf.simcontrols.InstantGuard`) does not stop it: it would
go on until the settling time is over, at thousands of attempts. :class:`RetryStorms` watches a run's trace
and fails it as soon as one handler of one object has been retried :data:`STORM_RETRIES` times within
:data:`STORM_SECONDS` virtual seconds (kopf's shortest sensible retry delays are a second or more).
"""

from __future__ import annotations

import collections

from kopf_sim.timing.virtualtime import LivelockError

from .simcontrols import InstantGuard
from .tracing import Entry, Log

__all__ = ["STORM_RETRIES", "STORM_SECONDS", "RetryStorm", "RetryStorms"]

#: Retries of one handler of one object within :data:`STORM_SECONDS` that make a storm.
STORM_RETRIES = 20
#: The virtual seconds within which :data:`STORM_RETRIES` retries make a storm.
STORM_SECONDS = 5.0
_RETRIED = (" failed temporarily: ", "Will retry.")


class RetryStorm(LivelockError):
    """A handler retried again and again with (almost) no delay (the ``retries`` check reports it)."""


class RetryStorms:
    """Watches the log entries of a run's trace; a storm of retries fails the run through its guard."""

    def __init__(self, guard: InstantGuard, retries: int = STORM_RETRIES, seconds: float = STORM_SECONDS) -> None:
        self.guard = guard
        self.retries = retries
        self.seconds = seconds
        self._attempts: dict[tuple[str, str], collections.deque[float]] = {}

    def observe(self, entry: Entry) -> None:
        if not isinstance(entry, Log) or entry.where is None or not entry.message.startswith("Handler '"):
            return
        if not any(marker in entry.message for marker in _RETRIED):
            return
        handler = entry.message.split("'", 2)[1]
        attempts = self._attempts.setdefault((entry.where, handler), collections.deque(maxlen=self.retries))
        attempts.append(entry.time)
        if len(attempts) == self.retries and attempts[-1] - attempts[0] <= self.seconds:
            self.guard.fail(
                RetryStorm(
                    f"{entry.where}: handler {handler!r} was retried {self.retries} times within "
                    f"{attempts[-1] - attempts[0]:.1f} virtual seconds: a storm of retries with (almost) no delay, "
                    f"never done. The last attempt: {entry.message}",
                    loop_time=entry.time,
                )
            )
            attempts.clear()
