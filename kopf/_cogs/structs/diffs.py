"""
Diffs between two states of an object or of a field.

A diff is a sequence of ``(operation, field, old, new)`` items, where the field
is a tuple of keys relative to the compared values. ``None`` means absence:
a key with a ``None`` value is the same as no key at all; an added field has
``old=None``, a removed field has ``new=None`` (exactly what a merge-patch needs).

The dicts are compared key by key, recursively; everything else (scalars, lists)
is compared as a whole value. A diff compares equal to plain tuples/lists of
plain tuples, so handlers and tests can write the expected diffs literally.
"""

import enum
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple, overload

from kopf._cogs.structs import dicts


class DiffOperation(enum.StrEnum):
    ADD = "add"
    CHANGE = "change"
    REMOVE = "remove"

    def __repr__(self) -> str:
        return repr(self.value)


class DiffItem(NamedTuple):
    operation: DiffOperation
    field: dicts.FieldPath
    old: Any
    new: Any

    def __repr__(self) -> str:
        return repr((self.operation.value, self.field, self.old, self.new))

    @property
    def op(self) -> DiffOperation:
        return self.operation


class Diff(Sequence[DiffItem]):
    """An immutable sequence of diff items, comparable to tuples and lists."""

    def __init__(self, __items: Iterable[DiffItem]) -> None:
        super().__init__()
        self._items = tuple(DiffItem(DiffOperation(op), tuple(field), old, new) for op, field, old, new in __items)

    def __repr__(self) -> str:
        return repr(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[DiffItem]:
        return iter(self._items)

    @overload
    def __getitem__(self, i: int) -> DiffItem: ...

    @overload
    def __getitem__(self, s: slice) -> Sequence[DiffItem]: ...

    def __getitem__(self, item: int | slice) -> DiffItem | Sequence[DiffItem]:
        return self._items[item]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, (str, bytes)):
            return tuple(self) == tuple(tuple(i) if isinstance(i, list) else i for i in other)
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    __hash__ = None  # type: ignore[assignment]  # the items can contain dicts.


def diff_iter(a: Any, b: Any, path: dicts.FieldPath = ()) -> Iterator[DiffItem]:
    """Yield the differences between two values, descending into dicts only."""
    if a == b:
        return
    elif a is None:
        yield DiffItem(DiffOperation.ADD, path, a, b)
    elif b is None:
        yield DiffItem(DiffOperation.REMOVE, path, a, b)
    elif isinstance(a, Mapping) and isinstance(b, Mapping):
        keys = list(a) + [key for key in b if key not in a]
        for key in keys:
            yield from diff_iter(a.get(key), b.get(key), (*path, key))
    else:
        yield DiffItem(DiffOperation.CHANGE, path, a, b)


def diff(a: Any, b: Any, path: dicts.FieldPath = ()) -> Diff:
    """Calculate the diff between two values (usually, the old & new bodies)."""
    return Diff(diff_iter(a, b, path))


def reduce_iter(d: Diff, path: dicts.FieldSpec) -> Iterator[DiffItem]:
    """
    Yield the diff items of a sub-field, relative to that sub-field.

    The items of the sub-field's descendants are re-rooted. The items of its
    ancestors (e.g. a whole ``spec`` added or removed) are expanded to the sub-field's
    own values, so the result is as if only the sub-field's values were compared.
    """
    prefix = dicts.parse_field(path)
    for op, field, old, new in d:
        if field[: len(prefix)] == prefix:
            yield DiffItem(op, field[len(prefix) :], old, new)
        elif prefix[: len(field)] == field:
            tail = prefix[len(field) :]
            yield from diff_iter(dicts.resolve(old, tail, None), dicts.resolve(new, tail, None))


def reduce(d: Diff, path: dicts.FieldSpec) -> Diff:
    """Reduce a diff to a sub-field (see :func:`reduce_iter`)."""
    return Diff(reduce_iter(d, path))
