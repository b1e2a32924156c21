"""A semaphore whose waiters get the free slots by their priority (the lowest number first), not by arrival.

For the operator's API requests: when thousands of objects are in flight at once, a first-come slot makes
every object's second request wait behind every other object's first, so that none finishes until nearly
all have started (and all of them are held in memory meanwhile). Served by the order in which their objects'
processing began, the requests let the objects finish one after another, as they came.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
from collections.abc import AsyncIterator


class PrioritySemaphore:
    """At most ``value`` holders at once; the waiters are served by (priority, arrival)."""

    __slots__ = ("_arrivals", "_free", "_pending", "_turning", "_turns", "_value", "_waiters")

    def __init__(self, value: int) -> None:
        if value < 1:
            raise ValueError(f"A semaphore needs at least one slot, got {value!r}.")
        self._free = self._value = value
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

    async def acquire(self, priority: int) -> None:
        if self._free > 0 and not self._pending:
            self._free -= 1
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

    async def turn(self, priority: int) -> None:
        """
        Wait while more requests queue than there are slots; then go on, holding no slot.

        For the work that would only add to the queue (e.g. an object's processing, which makes requests):
        those waiting here go on one per request served (by their priority, as the requests do), and all
        at once when nothing queues any more; without a queue, nobody waits.
        """
        if self._pending <= self._value and not self._turning:
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._turns, (priority, next(self._arrivals), future))
        self._turning += 1
        try:
            await future
        except asyncio.CancelledError:
            if future.cancelled():  # withdrawn while waiting
                self._turning -= 1
            else:  # let in, but cancelled before it could go on: the next one goes
                self._let_in()
            raise

    def _let_in(self) -> None:
        """One waiting turn goes on while the queue is within the slots; all of them when nothing queues."""
        while self._turns and (self._pending <= self._value):
            _, _, future = heapq.heappop(self._turns)
            if not future.done():
                future.set_result(None)
                self._turning -= 1
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
