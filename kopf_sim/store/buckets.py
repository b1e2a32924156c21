"""The objects of one resource in etcd's order (namespace, then name), as an etcd range read sees them.

Keys stay sorted as objects come and go, so a page of a list is a read from a key (no sort of the
whole resource per request), a namespace is a range, and the count of what follows a key is two
bisections. New keys are sorted in when the order is next needed: a load of many objects sorts them in
once, not one by one. Labels are indexed by key and value, so a list selected by a label reads its matches only:
the index of a resource is made when it grows large (while its objects are still decoded), or by its first
selected list, then kept up to date; a test's small resources, which are seldom selected, never pay for one.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

from sortedcontainers import SortedList

from kopf_sim.kube.selectors import LabelSelector, Requirement
from kopf_sim.store.stored import Stored

ObjectKey = tuple[str, str]  # (namespace or "", name)

#: The label operators that the index answers (the others are checked on each candidate).
INDEXED_OPERATORS = frozenset({"=", "in", "exists"})
#: The size at which a resource's labels are indexed even before a selected list asks for them.
INDEXED_SIZE = 1_000


def namespace_range(namespace: str | None) -> tuple[ObjectKey | None, ObjectKey | None]:
    """The bounds of a namespace's keys (None: the whole resource); the upper bound is excluded."""
    if namespace is None:
        return None, None
    return (namespace, ""), (namespace + "\x00", "")


class Bucket:
    """The current objects of one resource (one storage key), sorted by key, with a label index."""

    def __init__(self) -> None:
        self._items: dict[ObjectKey, Stored] = {}
        self._order: SortedList[ObjectKey] = SortedList()  # the keys in order, but for the new ones:
        self._unsorted: list[ObjectKey] = []  # the keys added since the order was last read
        self._labels: dict[str, dict[str, set[ObjectKey]]] | None = None  # label key -> value -> object keys

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: ObjectKey) -> bool:
        return key in self._items

    def get(self, key: ObjectKey) -> Stored | None:
        return self._items.get(key)

    def put(self, key: ObjectKey, stored: Stored, previous: Stored | None) -> None:
        """Store a new state of the object (``previous``: its current one, if any)."""
        items = self._items
        if key not in items:
            self._unsorted.append(key)
        items[key] = stored
        if self._labels is None:
            if len(items) >= INDEXED_SIZE:
                self._make_index()
            return
        new_labels = _labels_of(stored)
        if previous is None:
            self._index(key, new_labels)
            return
        old_labels = _labels_of(previous)
        if old_labels != new_labels:
            self._unindex(key, old_labels)
            self._index(key, new_labels)

    def pop(self, key: ObjectKey) -> Stored:
        stored = self._items.pop(key)
        self._sorted().remove(key)
        if self._labels is not None:
            self._unindex(key, _labels_of(stored))
        return stored

    def sort_in(self) -> None:
        """Sort the new keys in now (e.g. after a load: not at the first list that reads them)."""
        self._sorted()

    def _sorted(self) -> SortedList[ObjectKey]:
        """The keys in order, the new ones sorted in (all at once: cheaper than one at a time)."""
        if self._unsorted:
            self._order.update(self._unsorted)
            self._unsorted = []
        return self._order

    def items(
        self, namespace: str | None = None, *, after: ObjectKey | None = None
    ) -> Iterator[tuple[ObjectKey, Stored]]:
        """The objects in key order: of a namespace (or all), after a key (or from the first)."""
        items = self._items
        for key in self.keys(namespace, after=after):
            yield key, items[key]

    def keys(self, namespace: str | None = None, *, after: ObjectKey | None = None) -> Iterator[ObjectKey]:
        """The keys in order: of a namespace (or all), after a key (or from the first)."""
        low, high = namespace_range(namespace)
        if after is not None and (low is None or after >= low):
            return self._sorted().irange(after, high, inclusive=(False, False))
        return self._sorted().irange(low, high, inclusive=(True, False))

    def count(self, namespace: str | None = None, *, after: ObjectKey | None = None) -> int:
        """How many keys there are of a namespace (or all), after a key (or from the first)."""
        low, high = namespace_range(namespace)
        keys = self._sorted()
        start = 0 if low is None else keys.bisect_left(low)
        if after is not None:
            start = max(start, keys.bisect_right(after))
        end = len(keys) if high is None else keys.bisect_left(high)
        return max(0, end - start)

    def labelled(self, selector: LabelSelector) -> tuple[set[ObjectKey], bool] | None:
        """The keys that the selector's indexed requirements allow, and whether they match it exactly.

        None if no requirement can be answered from the index (every object is then a candidate).
        """
        indexed = [req for req in selector.requirements if req.operator in INDEXED_OPERATORS]
        if not indexed:
            return None
        if self._labels is None:
            self._make_index()
        found: set[ObjectKey] | None = None
        for req in sorted(indexed, key=self._estimate):
            keys = self._matching(req)
            found = keys if found is None else found & keys
            if not found:
                break
        assert found is not None
        return found, len(indexed) == len(selector.requirements)

    def _make_index(self) -> None:
        self._labels = {}
        for key, stored in self._items.items():
            self._index(key, _labels_of(stored))

    def _matching(self, req: Requirement) -> set[ObjectKey]:
        assert self._labels is not None
        values = self._labels.get(req.key, {})
        if req.operator == "exists":
            return set().union(*values.values())
        return set().union(*(values.get(value, ()) for value in req.values))

    def _estimate(self, req: Requirement) -> int:
        assert self._labels is not None
        values = self._labels.get(req.key, {})
        if req.operator == "exists":
            return sum(len(keys) for keys in values.values())
        return sum(len(values.get(value, ())) for value in req.values)

    def _index(self, key: ObjectKey, labels: Mapping[str, str]) -> None:
        index = self._labels
        assert index is not None
        for name, value in labels.items():  # (no empty dict and set made per label only to be dropped)
            values = index.get(name)
            if values is None:
                values = index[name] = {}
            keys = values.get(value)
            if keys is None:
                keys = values[value] = set()
            keys.add(key)

    def _unindex(self, key: ObjectKey, labels: Mapping[str, str]) -> None:
        assert self._labels is not None
        for name, value in labels.items():
            values = self._labels.get(name)
            keys = values.get(value) if values is not None else None
            if keys is None or values is None:
                continue
            keys.discard(key)
            if not keys:
                del values[value]
                if not values:
                    del self._labels[name]


def _labels_of(stored: Stored) -> Mapping[str, str]:
    labels = stored.obj["metadata"].get("labels")  # (a stored object has its metadata)
    return labels if isinstance(labels, dict) else _NO_LABELS


_NO_LABELS: Mapping[str, str] = {}  # (never changed)


def sorted_keys(keys: Iterable[ObjectKey], namespace: str | None, after: ObjectKey | None) -> list[ObjectKey]:
    """Some keys in order, of a namespace (or all), after a key (or from the first)."""
    low, high = namespace_range(namespace)
    return sorted(
        key
        for key in keys
        if (after is None or key > after) and (low is None or low <= key) and (high is None or key < high)
    )
