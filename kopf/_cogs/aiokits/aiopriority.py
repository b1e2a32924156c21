"""A semaphore whose waiters get the free slots by their priority (the lowest number first), not by arrival.

For the operator's API requests: when thousands of objects are in flight at once, a first-come slot makes
every object's second request wait behind every other object's first, so that none finishes until nearly
all have started (and all of them are held in memory meanwhile). Served by the order in which their objects'
processing began, the requests let the objects finish one after another, as they came.

The new work that would make such requests (e.g. a new object's processing) takes a turn first: see
:meth:`PrioritySemaphore.turn`.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
from collections.abc import AsyncIterator


class Turn:
    """A piece of new work in progress (see :meth:`PrioritySemaphore.turn`): it counts until ended or lapsed."""

    __slots__ = ("_lapse", "_semaphore")

    def __init__(self, semaphore: PrioritySemaphore, lapse: float) -> None:
        self._semaphore: PrioritySemaphore | None = semaphore
        self._lapse = asyncio.get_running_loop().call_later(lapse, self.end)

    def end(self) -> None:
        """Stop counting this work (idempotent): the next turn may go."""
        semaphore, self._semaphore = self._semaphore, None
        if semaphore is not None:
            self._lapse.cancel()
            semaphore._end_turn()


class PrioritySemaphore:
    """At most ``value`` holders at once; the waiters are served by (priority, arrival)."""

    __slots__ = (
        "_arrivals",
        "_free",
        "_ongoing",
        "_pending",
        "_turning",
        "_turns",
        "_value",
        "_waiters",
        "max_ongoing",
    )

    def __init__(self, value: int, *, max_ongoing: int | None = None) -> None:
        if value < 1:
            raise ValueError(f"A semaphore needs at least one slot, got {value!r}.")
        self._free = self._value = value
        #: How many turns may be ongoing at once (see turn()): by default, twice the slots.
        self.max_ongoing = 2 * value if max_ongoing is None else max_ongoing
        self._ongoing = 0
        self._pending = 0  # the waiters not served yet (the heap also keeps the cancelled ones until popped)
        self._waiters: list[tuple[int, int, asyncio.Future[None]]] = []
        self._arrivals = itertools.count()
        self._turns: list[tuple[int, int, asyncio.Future[None]]] = []  # see turn()
        self._turning = 0  # those waiting for their turn (the heap also keeps the cancelled ones until popped)

    @property
    def free(self) -> int:
        return self._free

    @property
    def waiting(self) -> int:
        return self._pending

    def try_acquire(self) -> bool:
        """Take a free slot if nobody waits for one; without waiting (``False`` if it would have to wait)."""
        if self._free > 0 and not self._pending:
            self._free -= 1
            return True
        return False

    async def acquire(self, priority: int) -> None:
        if self.try_acquire():
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiters, (priority, next(self._arrivals), future))
        self._pending += 1
        try:
            await future
        except asyncio.CancelledError:
            if future.cancelled():  # withdrawn while waiting
                self._pending -= 1
                self._let_in()
            else:  # served, but cancelled before it could resume: the slot goes on to the next one
                self.release()
            raise

    def release(self) -> None:
        """Hand the slot to the first waiter by priority, or free it."""
        while self._waiters:
            _, _, future = heapq.heappop(self._waiters)
            if not future.done():
                future.set_result(None)
                self._pending -= 1
                self._let_in()
                return
        self._free += 1

    async def turn(self, priority: int, *, lapse: float) -> Turn:
        """
        Wait while more requests queue than there are slots, or too many turns are ongoing; then go on.

        For the work that would only add to the queue (e.g. an object's processing, which makes requests):
        those waiting here go on one per request served (by their priority, as the requests do), and all
        at once when nothing queues any more; without a queue, nobody waits. The turn holds no slot, but
        counts as ongoing until the caller ends it, or for ``lapse`` seconds at most: with ``max_ongoing``
        turns ongoing, new ones wait too. So a burst of new work (e.g. a thousand objects listed at once)
        goes on a few hundred at a time, not all in lockstep with all of it in memory; while work that
        waits for long (e.g. a handler sleeping for an hour) holds up the others for ``lapse`` at most.
        """
        if self._pending <= self._value and not self._turning and self._ongoing < self.max_ongoing:
            self._ongoing += 1
            return Turn(self, lapse)
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._turns, (priority, next(self._arrivals), future))
        self._turning += 1
        try:
            await future
        except asyncio.CancelledError:
            if future.cancelled():  # withdrawn while waiting
                self._turning -= 1
            else:  # let in, but cancelled before it could go on: the next one goes
                self._end_turn()
            raise
        return Turn(self, lapse)

    @property
    def ongoing(self) -> int:
        return self._ongoing

    def _end_turn(self) -> None:
        self._ongoing -= 1
        self._let_in()

    def _let_in(self) -> None:
        """
        The waiting turns go on while the queue is within the slots and the ongoing turns are few:
        one per call while requests queue (i.e. one per request served), else as many as fit.
        """
        while self._turns and self._pending <= self._value and self._ongoing < self.max_ongoing:
            _, _, future = heapq.heappop(self._turns)
            if not future.done():
                future.set_result(None)
                self._turning -= 1
                self._ongoing += 1
                if self._pending:
                    return

    @contextlib.asynccontextmanager
    async def slot(self, priority: int) -> AsyncIterator[None]:
        """Hold a slot for the block, waiting for it by ``priority`` (the lower, the sooner)."""
        await self.acquire(priority)
        try:
            yield
        finally:
            self.release()
