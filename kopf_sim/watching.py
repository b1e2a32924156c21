"""Watch subscriptions: one per open watch stream, fed synchronously as changes commit.

Feeding at commit time (not from a background task) keeps the order of events identical for
every watcher and every run, which the determinism guarantees rely on.
"""
from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
from collections.abc import Callable

from .objects import JsonDict, meta
from .resources import ResourceType, StorageKey
from .selectors import FieldSelector, LabelSelector


@dataclasses.dataclass(frozen=True)
class Change:
    """One committed change of one object, as kept in the history for watch resumption."""

    rv: int
    key: StorageKey
    type: str                # ADDED, MODIFIED, DELETED
    obj: JsonDict            # the state after the change (the last state for DELETED)
    old: JsonDict | None     # the state before the change (None for ADDED)


@dataclasses.dataclass(frozen=True)
class WatchEvent:
    type: str                # ADDED, MODIFIED, DELETED, BOOKMARK, ERROR
    obj: JsonDict
    rv: int


class Subscription:
    """The events pending for one watch stream, filtered by namespace and selectors."""

    def __init__(
        self,
        rtype: ResourceType,
        namespace: str | None,
        labels: LabelSelector,
        fields: FieldSelector,
        *,
        on_close: Callable[[Subscription], None],
        max_pending: int | None = None,
    ) -> None:
        self.rtype = rtype
        self.namespace = namespace
        self.labels = labels
        self.fields = fields
        self.pending: collections.deque[WatchEvent] = collections.deque()
        self.closed = False
        self._wakeup: asyncio.Event | None = None
        self._on_close = on_close
        # A watcher that falls this far behind is let go (its stream ends), as the apiserver drops slow
        # watchers: it resumes from its last version, or relists if that is compacted by then.
        self.max_pending = max_pending

    def matches(self, obj: JsonDict) -> bool:
        metadata = meta(obj)
        if self.namespace is not None and metadata.get("namespace") != self.namespace:
            return False
        return self.labels.matches(metadata.get("labels")) and self.fields.matches(obj)

    def offer(self, change: Change) -> None:
        """Queue the change as this watcher sees it: selector transitions become ADDED/DELETED."""
        if change.key != self.rtype.storage_key or self.closed:
            return
        if self.max_pending is not None and len(self.pending) >= self.max_pending:
            self.pending.clear()
            self.close()
            return
        now_matches = self.matches(change.obj)
        if change.type == "ADDED":
            if now_matches:
                self.push(WatchEvent("ADDED", change.obj, change.rv))
        elif change.type == "DELETED":
            if now_matches or (change.old is not None and self.matches(change.old)):
                self.push(WatchEvent("DELETED", change.obj, change.rv))
        else:
            was_matching = change.old is not None and self.matches(change.old)
            if now_matches and was_matching:
                self.push(WatchEvent("MODIFIED", change.obj, change.rv))
            elif now_matches:
                self.push(WatchEvent("ADDED", change.obj, change.rv))
            elif was_matching:
                self.push(WatchEvent("DELETED", change.obj, change.rv))

    def push(self, event: WatchEvent) -> None:
        self.pending.append(event)
        if self._wakeup is not None:
            self._wakeup.set()

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._on_close(self)
            if self._wakeup is not None:
                self._wakeup.set()

    async def wait(self, timeout: float | None) -> None:
        """Wait until there is an event or the subscription closes, at most ``timeout`` seconds."""
        if self.pending or self.closed:
            return
        if self._wakeup is None:
            self._wakeup = asyncio.Event()
        self._wakeup.clear()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):  # no task per wait, unlike wait_for() before Python 3.12
                await self._wakeup.wait()

    def pop(self) -> WatchEvent | None:
        return self.pending.popleft() if self.pending else None
