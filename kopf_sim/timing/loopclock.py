"""The clock of an event loop as an interface, and the virtual clock that implements it.

Modelled on trio's ``Clock`` ABC and its ``MockClock``: the loop owns no notion of time of its own;
it asks its clock what time it is, how close a timer must be to count as due, on which tick a timer
falls due, and it moves the clock to that tick when nothing else can run. asyncio's own loops read
``time.monotonic()`` and pass the time by blocking in the selector; :class:`VirtualClock` is moved by
its loop (:class:`kopf_sim.timing.virtualtime.VirtualTimeLoop`) instead, so an hour of sleeping costs nothing.

Time is counted in integer ticks, so that moments compare exactly (10,000 sleeps of 0.1 s end at
exactly 1000.0 s); ``time()`` is the tick count in seconds.
"""

from __future__ import annotations

import abc
import math

__all__ = ["TICKS_PER_SECOND", "LoopClock", "VirtualClock"]

TICKS_PER_SECOND = 1_000_000
"""The virtual clock is an integer count of these ticks (microseconds)."""

# Float noise: a timer at ``loop.time() + delay`` lands a few ulps off the exact tick. Timers within
# this many ulps of a tick are taken as on it (so 10,000 sleeps of 0.1 s end at exactly 1000.0);
# anything further off, however tiny (a sleep of 1e-9 or 1e-12 s), is rounded up to the next tick.
NOISE_ULPS = 8


class LoopClock(abc.ABC):
    """What an event loop needs of its clock: to read it, to round timers to it, to move it forward."""

    @property
    @abc.abstractmethod
    def ticks(self) -> int:
        """The current moment as an integer count of ticks (what the loop compares deadlines with)."""

    @abc.abstractmethod
    def time(self) -> float:
        """The current moment in seconds: what ``loop.time()`` returns and timers are scheduled in."""

    @property
    @abc.abstractmethod
    def resolution(self) -> float:
        """Timers this close to :meth:`time` are due now (asyncio's ``loop._clock_resolution``)."""

    @abc.abstractmethod
    def tick_of(self, when: float) -> int:
        """The tick on which a timer scheduled at ``when`` (seconds) falls due; always a future one."""

    @abc.abstractmethod
    def ticks_of(self, seconds: float) -> int:
        """A duration in ticks (at least one): how far a wait of ``seconds`` reaches."""

    @abc.abstractmethod
    def jump(self, tick: int) -> None:
        """Move the clock forward to the tick: nothing can run before it (the loop has checked)."""


class VirtualClock(LoopClock):
    """A clock that stands still until its loop moves it: a jump to the next timer costs nothing."""

    def __init__(self, *, start: float = 0.0) -> None:
        self._ticks = round(start * TICKS_PER_SECOND)
        self._resolution = NOISE_ULPS * math.ulp(self.time())

    @property
    def ticks(self) -> int:
        return self._ticks

    def time(self) -> float:
        return self._ticks / TICKS_PER_SECOND

    @property
    def resolution(self) -> float:
        return self._resolution

    def tick_of(self, when: float) -> int:
        """The nearest tick if only float noise away, else the next one; never the current one."""
        nearest = round(when * TICKS_PER_SECOND)
        if abs(when - nearest / TICKS_PER_SECOND) <= NOISE_ULPS * math.ulp(when):
            target = nearest
        else:
            target = math.ceil(when * TICKS_PER_SECOND)
        return max(self._ticks + 1, target)

    def ticks_of(self, seconds: float) -> int:
        """The nearest tick count if only float noise away, else rounded up; at least one."""
        if type(seconds) is int:  # e.g. ``time.sleep(60)``: exact, and the common case of the threads' waits
            return max(1, seconds * TICKS_PER_SECOND)
        exact = seconds * TICKS_PER_SECOND
        nearest = round(exact)
        ticks = nearest if abs(exact - nearest) <= NOISE_ULPS * math.ulp(exact) else math.ceil(exact)
        return max(1, ticks)

    def jump(self, tick: int) -> None:
        if tick < self._ticks:
            raise ValueError(f"A clock moves only forward: from tick {self._ticks} to {tick}?")
        self._ticks = tick
        # asyncio runs the timers earlier than ``time() + resolution``: let it be the float noise.
        self._resolution = NOISE_ULPS * math.ulp(self.time())
