"""A resource's objects as they were at a resourceVersion: the current ones, under the states changed since.

A paginated list reads every page at its first page's version (as etcd serves a continue token at its
revision), a stale read at an older version, and a watch from "now" sends the objects of its start.
None of them copies the resource: a snapshot keeps, for each object changed after its version, the
state it had then (taken from the history once, then from each change as it commits), and reads the
rest from the current objects. Its cost is its page plus the objects changed since, not the resource.
"""

from __future__ import annotations

import collections
import heapq
import itertools
from collections.abc import Iterable, Iterator

from sortedcontainers import SortedList

from kopf_sim.kube.resources import StorageKey
from kopf_sim.store.buckets import Bucket, ObjectKey, namespace_range, sorted_keys
from kopf_sim.store.stored import Stored
from kopf_sim.store.watching import Change

#: How many snapshots the store keeps up to date for continue tokens (the paginated lists in progress).
KEPT_SNAPSHOTS = 16


class Snapshot:
    """The objects of one resource at version ``rv``; kept up to date by :meth:`note` of every later change."""

    def __init__(self, key: StorageKey, bucket: Bucket, rv: int) -> None:
        self.key = key
        self.bucket = bucket
        self.rv = rv
        self._then: dict[ObjectKey, Stored | None] = {}  # the state at rv of each object changed since
        self._changed: SortedList[ObjectKey] = SortedList()

    def note(self, change: Change) -> None:
        """A change after the snapshot's version: the object's state at the version is its state before."""
        if change.rv > self.rv and change.key == self.key and change.object_key not in self._then:
            self._then[change.object_key] = change.previous
            self._changed.add(change.object_key)

    @property
    def changed(self) -> set[ObjectKey]:
        """The keys whose state at the snapshot differs from their current one (or that came or went since)."""
        return set(self._then)

    def get(self, key: ObjectKey) -> Stored | None:
        if key in self._then:
            return self._then[key]
        return self.bucket.get(key)

    def items(
        self, namespace: str | None = None, *, after: ObjectKey | None = None
    ) -> Iterator[tuple[ObjectKey, Stored]]:
        """The objects at the snapshot, in key order: of a namespace (or all), after a key (or from the first).

        Read it to its end before the store changes (or read again from the last key).
        """
        if not self._then:  # nothing changed since: the current objects as they are
            yield from self.bucket.items(namespace, after=after)
            return
        current = self.bucket.keys(namespace, after=after)
        low, high = namespace_range(namespace)
        start = low if after is None or (low is not None and after < low) else after
        changed = self._changed.irange(start, high, inclusive=(start is low, False))
        keys = (key for key, _ in itertools.groupby(heapq.merge(current, changed)))
        for key in keys:
            stored = self.get(key)
            if stored is not None:
                yield key, stored

    def count(self, namespace: str | None = None, *, after: ObjectKey | None = None) -> int:
        """How many objects there were of a namespace (or all), after a key (or from the first)."""
        total = self.bucket.count(namespace, after=after)
        for key in sorted_keys(self._then, namespace, after):
            total += (self._then[key] is not None) - (key in self.bucket)
        return total

    def ordered(self, keys: Iterable[ObjectKey], namespace: str | None, after: ObjectKey | None) -> list[ObjectKey]:
        """Some keys of the snapshot in order (e.g. a label index's), of a namespace, after a key."""
        return sorted_keys(keys, namespace, after)


class Snapshots:
    """The snapshots kept up to date: those of paginated lists in progress (a few), and of watches starting."""

    def __init__(self, capacity: int = KEPT_SNAPSHOTS) -> None:
        self.capacity = capacity
        self._recent: collections.OrderedDict[tuple[StorageKey, int], Snapshot] = collections.OrderedDict()
        self._held: list[Snapshot] = []

    def at(self, key: StorageKey, bucket: Bucket, rv: int, history: Iterable[Change], *, latest: int) -> Snapshot:
        """The resource at ``rv`` (no older than the history): kept from an earlier page, or made from the history."""
        if rv >= latest:
            return Snapshot(key, bucket, latest)  # nothing changed since: the current objects as they are
        found = self._recent.get((key, rv))
        if found is not None:
            self._recent.move_to_end((key, rv))
            return found
        snapshot = Snapshot(key, bucket, rv)
        for change in history:
            snapshot.note(change)
        self._recent[key, rv] = snapshot
        while len(self._recent) > self.capacity:
            self._recent.popitem(last=False)
        return snapshot

    def hold(self, snapshot: Snapshot) -> None:
        """Keep a snapshot up to date until released (a watch sending the objects of its start)."""
        self._held.append(snapshot)

    def release(self, snapshot: Snapshot) -> None:
        if snapshot in self._held:
            self._held.remove(snapshot)

    def note(self, change: Change) -> None:
        if not self._recent and not self._held:
            return
        for snapshot in itertools.chain(self._recent.values(), self._held):
            if snapshot.key == change.key:
                snapshot.note(change)

    def forget_before(self, rv: int) -> None:
        """Let go of the kept snapshots older than ``rv`` (compacted away: their tokens are expired)."""
        if not self._recent:
            return
        for cache_key in [cache_key for cache_key in self._recent if cache_key[1] < rv]:
            del self._recent[cache_key]
