"""
Coarse deadlines shared by many tasks: one timer of the loop per second of deadlines, not one per task.

Every regular API request has a total timeout (``settings.networking.request_timeout``, 5 minutes by
default). Given to aiohttp, or as :func:`asyncio.timeout`, it is a timer of its own in the loop's heap,
made and cancelled for every request: ~8% of a request's CPU (``benchmarks/compare_peer.py`` makes two
requests per object handled). Long timeouts are rounded up to whole seconds anyway (aiohttp does so for 5
seconds and more), so here the tasks whose deadlines fall in the same second share one timer: joining and
leaving it is a set's add & discard.

The semantics are those of :func:`asyncio.timeout`: the task is cancelled at the deadline, and the
cancellation becomes :class:`TimeoutError` when it leaves the block (unless someone else has cancelled the
task too: then the cancellation goes on).
"""

from __future__ import annotations

import asyncio
import math
from types import TracebackType

from kopf._cogs.aiokits.looplocal import LoopLocal

#: From this many seconds on, the deadlines are rounded up to whole seconds (as aiohttp rounds its timeouts):
#: shorter ones are kept exact (each is then a timer of its own, as it would be anyway).
ROUNDING_THRESHOLD = 5.0


class _Entry:
    """One task's stay in a deadline's group: whether the deadline has cancelled it."""

    __slots__ = ("expired", "task")

    def __init__(self, task: asyncio.Task[object]) -> None:
        self.task = task
        self.expired = False


class _Deadlines:
    """The groups of one loop's tasks by their deadlines, each group with its timer."""

    __slots__ = ("_groups",)

    def __init__(self) -> None:
        self._groups: dict[float, set[_Entry]] = {}  # no reference to the loop: it is the key of these

    def join(self, entry: _Entry, when: float, loop: asyncio.AbstractEventLoop) -> set[_Entry]:
        group = self._groups.get(when)
        if group is None:
            group = self._groups[when] = set()
            loop.call_at(when, self._expire, when)
        group.add(entry)
        return group

    def _expire(self, when: float) -> None:
        for entry in self._groups.pop(when, ()):
            entry.expired = True
            entry.task.cancel()


_DEADLINES: LoopLocal[_Deadlines] = LoopLocal(lambda loop: _Deadlines())


class within:
    """
    Limit the block to so many seconds (``None``: no limit); raise :class:`TimeoutError` if it lasts longer.

    A plain (not async) context manager: it is entered & exited with no awaits of its own.
    It must be used inside a task, as :func:`asyncio.timeout`.
    """

    __slots__ = ("_cancelling", "_delay", "_entry", "_group")

    def __init__(self, delay: float | None) -> None:
        self._delay = delay
        self._entry: _Entry | None = None
        self._group: set[_Entry] | None = None
        self._cancelling = 0

    def __enter__(self) -> None:
        if self._delay is None:
            return
        try:
            task = asyncio.current_task()
        except RuntimeError:  # no running loop
            task = None
        if task is None:
            raise RuntimeError("A deadline can only be used inside a task.")
        loop = task.get_loop()
        when = loop.time() + max(0.0, self._delay)
        if self._delay >= ROUNDING_THRESHOLD:
            when = float(math.ceil(when))
        self._cancelling = task.cancelling()
        self._entry = _Entry(task)
        self._group = _DEADLINES.get(loop).join(self._entry, when, loop)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> None:
        entry, group = self._entry, self._group
        if entry is None or group is None:
            return
        group.discard(entry)  # a no-op if the deadline has come: the group is gone from the loop's groups
        if entry.expired and entry.task.uncancel() <= self._cancelling and exc_type is asyncio.CancelledError:
            raise TimeoutError from exc_val
