"""Watch subscriptions: one per open watch stream, fed synchronously as changes commit.

Feeding at commit time (not from a background task) keeps the order of events identical for
every watcher and every run, which the determinism guarantees rely on.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
from collections.abc import Callable, Iterator
from typing import NamedTuple, Protocol

from kopf_sim.kube import errors
from kopf_sim.kube.objects import JsonDict, meta
from kopf_sim.kube.resources import ResourceType, StorageKey
from kopf_sim.kube.selectors import FieldSelector, LabelSelector
from kopf_sim.store.buckets import ObjectKey
from kopf_sim.store.lagging import Holding, Withholding
from kopf_sim.store.stored import Stored


class Change(NamedTuple):
    """One committed change of one object, as kept in the history for watch resumption."""

    rv: int
    key: StorageKey
    type: str  # ADDED, MODIFIED, DELETED
    stored: Stored  # the state after the change (the last state for DELETED)
    previous: Stored | None  # the state before the change (None for ADDED)
    object_key: ObjectKey  # (namespace or "", name)

    @property
    def obj(self) -> JsonDict:
        """The state after the change (never mutate it)."""
        return self.stored.obj

    @property
    def old(self) -> JsonDict | None:
        """The state before the change (never mutate it), None for ADDED."""
        return None if self.previous is None else self.previous.obj


class WatchEvent(NamedTuple):
    type: str  # ADDED, MODIFIED, DELETED, BOOKMARK, ERROR
    payload: JsonDict | Stored  # a stored state for the objects' events: sent as its bytes
    rv: int

    @property
    def obj(self) -> JsonDict:
        return self.payload.obj if isinstance(self.payload, Stored) else self.payload


class EventSource(Protocol):
    """Events made as they are read (e.g. a watch's objects at its start); ``close`` when no more are wanted."""

    def __next__(self) -> WatchEvent: ...

    def __iter__(self) -> Iterator[WatchEvent]: ...

    def close(self) -> None: ...


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
        self._held: Withholding | None = None
        self._arrivals: collections.deque[float] = collections.deque()  # loop times of the pending events
        self._released: collections.deque[WatchEvent] = collections.deque()  # coalesced, ready to go
        self._hold: _Hold | None = None  # one object's event held back until its next one (an injected fault)
        self._initial: EventSource | None = None  # the objects at the start, read as they are sent
        self._selective = not (labels.empty and fields.empty)

    def start_with(self, initial: EventSource) -> None:
        """The events that go before all others (the objects at the watch's start), made as the stream reads them."""
        self._initial = initial

    def withhold(self, how: Withholding) -> None:
        """Hold the events back from now on: each ``delay`` seconds late, or coalesced per window."""
        self._held = how
        if self._initial is not None:  # the delays count from now for the objects of the start too
            initial = [WatchEvent(e.type, e.payload, int(meta(e.obj)["resourceVersion"])) for e in self._initial]
            self._initial.close()
            self.pending.extendleft(reversed(initial))
            self._initial = None
        now = _loop_time()
        self._arrivals = collections.deque(now for _ in self.pending)

    @property
    def withheld(self) -> int:
        """How many changes this watcher is kept from now (none if its events are not held back; bookmarks aside)."""
        return len(self.withheld_revisions())

    def withheld_revisions(self) -> list[int]:
        """The resource versions of the changes this watcher is kept from now (bookmarks aside)."""
        if self._held is None and self._hold is None:
            return []
        return [event.rv for queue in (self.pending, self._released) for event in queue if event.type != "BOOKMARK"]

    def matches(self, obj: JsonDict) -> bool:
        metadata = meta(obj)
        if self.namespace is not None and metadata.get("namespace") != self.namespace:
            return False
        return self.labels.matches(metadata.get("labels")) and self.fields.matches(obj)

    def _selects(self, object_key: ObjectKey, stored: Stored | None) -> bool:
        """Whether a state of the object is watched (decoded only when selectors need its content)."""
        if stored is None or (self.namespace is not None and object_key[0] != self.namespace):
            return False
        return not self._selective or self.matches(stored.obj)

    def offer(self, change: Change, holding: Holding | None = None) -> None:
        """Queue the change as this watcher sees it: selector transitions become ADDED/DELETED.

        ``holding``: its event is held back until the object's next event (see :class:`Holding`).
        """
        if change.key != self.rtype.storage_key or self.closed:
            return
        if self.max_pending is not None and len(self.pending) >= self.max_pending:
            self.pending.clear()
            self.close()
            return
        queued = len(self.pending)
        self._queue(change)
        if holding is not None and holding.expire and len(self.pending) > queued:
            self._expire(holding)
        elif holding is not None and len(self.pending) > queued and self._hold is None:
            event = self.pending[-1]
            self._hold = _Hold(event, _object_key(event), holding, _loop_time() + holding.window)

    def _queue(self, change: Change) -> None:
        now_matches = self._selects(change.object_key, change.stored)
        if change.type == "ADDED":
            if now_matches:
                self.push(WatchEvent("ADDED", change.stored, change.rv))
        elif change.type == "DELETED":
            if now_matches or self._selects(change.object_key, change.previous):
                self.push(WatchEvent("DELETED", change.stored, change.rv))
        else:
            was_matching = self._selects(change.object_key, change.previous)
            if now_matches and was_matching:
                self.push(WatchEvent("MODIFIED", change.stored, change.rv))
            elif now_matches:
                self.push(WatchEvent("ADDED", change.stored, change.rv))
            elif was_matching:
                self.push(WatchEvent("DELETED", change.stored, change.rv))

    def push(self, event: WatchEvent) -> None:
        hold = self._hold
        if hold is not None and hold.stall_from is None and _object_key(event) == hold.key and event is not hold.event:
            event = self._let_go(hold, event)
        self.pending.append(event)
        if self._held is not None:
            self._arrivals.append(_loop_time())
        if self._wakeup is not None:
            self._wakeup.set()

    def close(self) -> None:
        if self._initial is not None:
            self._initial.close()  # lets its snapshot go
            self._initial = None
        if not self.closed:
            self.closed = True
            self._on_close(self)
            if self._wakeup is not None:
                self._wakeup.set()

    def _expire(self, how: Holding) -> None:
        """The stream ends before its latest event, with a 410 Expired: the watcher must list again."""
        event = self.pending.pop()
        if self._held is not None and self._arrivals:
            self._arrivals.pop()
        if how.note is not None:
            namespace, name, _ = _object_key(event)
            how.note(f"watch expired (410) instead of: {event.type} {namespace}/{name} rv={event.rv}")
        status = errors.expired(f"too old resource version: {event.rv - 1} ({event.rv})").to_status()
        self.push(WatchEvent("ERROR", status, event.rv))
        self.close()

    def _let_go(self, hold: _Hold, following: WatchEvent) -> WatchEvent:
        """The held object's next event has come: drop the held one (coalesced), or let it out and stall the rest."""
        note = hold.how.note
        if hold.how.coalesce:
            self._hold = None
            if hold.event in self.pending:
                index = self.pending.index(hold.event)
                del self.pending[index]
                if self._held is not None and len(self._arrivals) > index:
                    del self._arrivals[index]
                if note is not None:
                    namespace, name, _ = hold.key
                    note(f"coalesced away: {hold.event.type} {namespace}/{name} rv={hold.event.rv}")
                if hold.event.type == "ADDED" and following.type == "MODIFIED":
                    following = WatchEvent("ADDED", following.payload, following.rv)  # the watcher never saw it added
        else:
            hold.stall_from = following.rv
            hold.until = _loop_time() + hold.how.spacing
        return following

    def _blocked_until(self) -> float | None:
        """When the first pending event may go out, if a hold keeps it back now (None: it is not kept back)."""
        hold = self._hold
        if hold is None:
            return None
        if _loop_time() >= hold.until:
            self._hold = None  # its window is over: everything goes out as it is
            return None
        first = self.pending[0].rv if self.pending else None
        since = hold.event.rv if hold.stall_from is None else hold.stall_from
        return hold.until if first is not None and first >= since else None

    async def wait(self, timeout: float | None) -> None:
        """Wait until there is an event or the subscription closes, at most ``timeout`` seconds."""
        if self.closed or self._released or self._initial is not None:
            return
        blocked = self._blocked_until() if self.pending else None
        if blocked is not None:
            remaining = blocked - _loop_time()
            timeout = remaining if timeout is None else min(timeout, remaining)
        elif self.pending:
            release = self._release_time()
            if release is None:
                return
            remaining = release - _loop_time()
            if remaining <= 0:
                return
            timeout = remaining if timeout is None else min(timeout, remaining)
        if self._wakeup is None:
            self._wakeup = asyncio.Event()
        self._wakeup.clear()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):  # no task per wait, unlike wait_for() before Python 3.12
                await self._wakeup.wait()

    def pop(self) -> WatchEvent | None:
        if self._initial is not None:
            event = next(self._initial, None)
            if event is not None:
                return event
            self._initial.close()
            self._initial = None
        if self._hold is not None and self.pending and self._blocked_until() is not None:
            return None
        if self._held is None:
            return self.pending.popleft() if self.pending else None
        if self._released:
            return self._released.popleft()
        release = self._release_time()
        if release is None or release > _loop_time():
            return None
        if not self._held.coalesce:
            self._arrivals.popleft()
            return self.pending.popleft()
        self._coalesce()
        return self._released.popleft() if self._released else None

    def _release_time(self) -> float | None:
        """When the first pending event may go out (None: at once; withheld ones: their delay later)."""
        if self._held is None or not self._arrivals:
            return None
        return self._arrivals[0] + self._held.delay

    def _coalesce(self) -> None:
        """Release the latest pending event of each object (as a relist shows it), in resource-version order."""
        latest: dict[tuple[str, str, str], WatchEvent] = {}
        others: list[WatchEvent] = []
        dropped: list[WatchEvent] = []
        while self.pending:
            event = self.pending.popleft()
            self._arrivals.popleft()
            if event.type not in ("ADDED", "MODIFIED", "DELETED"):
                others.append(event)
                continue
            key = _object_key(event)
            previous = latest.get(key)
            if previous is not None:
                dropped.append(previous)
                if previous.type == "ADDED" and event.type == "MODIFIED":
                    event = WatchEvent("ADDED", event.payload, event.rv)  # the watcher never saw it added
            latest[key] = event
        self._released.extend(sorted([*latest.values(), *others], key=lambda event: event.rv))
        note = self._held.note if self._held is not None else None
        if note is not None:
            for event in dropped:
                metadata = meta(event.obj)
                note(
                    f"coalesced away: {event.type} {metadata.get('namespace') or ''}/{metadata.get('name')} "
                    f"rv={event.rv}"
                )


@dataclasses.dataclass
class _Hold:
    """One object's event held back in a stream (and the stream's later events with it), until its next one."""

    event: WatchEvent
    key: tuple[str, str, str]
    how: Holding
    until: float  # when it goes out anyway (or, once the next event has come, when the rest goes out)
    stall_from: int | None = None  # delivered late: the next event's version, from which the stream waits


def _object_key(event: WatchEvent) -> tuple[str, str, str]:
    """Which object an event is of: its namespace, name and uid. An object deleted and made anew under its name is
    another object: a relist shows the new one, and a watcher that tracks objects by uid (kopf does) learns that
    the old one is gone, so the old one's events are never coalesced into the new one's."""
    metadata = meta(event.obj)
    return str(metadata.get("namespace") or ""), str(metadata.get("name") or ""), str(metadata.get("uid") or "")


def _loop_time() -> float:
    try:
        return asyncio.get_running_loop().time()
    except RuntimeError:  # changes made outside of a loop (e.g. loading manifests): no delay to count from
        return 0.0
