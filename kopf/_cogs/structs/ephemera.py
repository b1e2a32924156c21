"""
In-memory containers of arbitrary values for operator developers.

A :class:`Memo` lives only as long as the operator process: one per operator,
and one per individual resource object, the latter being a shallow copy of the
former (so that the operator-level values are seen by all objects, while the
per-object values are not shared between objects).
"""

import copy
from typing import Any, TypeVar

AnyMemo = Any  # any class can be used as a memo in embedded operators, if it supports copy.copy().

_MemoT = TypeVar("_MemoT", bound="Memo")


class Memo(dict[Any, Any]):
    """
    A dict whose keys are also accessible as attributes.

    Only the keys are exposed as attributes: the methods of dict take precedence
    when reading (``memo.keys`` is the method), but can be shadowed by keys.
    """

    def __repr__(self) -> str:
        return f"{type(self).__name__}({dict.__repr__(self)})"

    def __getattr__(self, key: str) -> Any:
        try:
            return self[key]
        except KeyError:
            raise AttributeError(f"{type(self).__name__} has no attribute {key!r}.") from None

    def __setattr__(self, key: str, value: Any) -> None:
        self[key] = value

    def __delattr__(self, key: str) -> None:
        try:
            del self[key]
        except KeyError:
            raise AttributeError(f"{type(self).__name__} has no attribute {key!r}.") from None

    def __copy__(self: _MemoT) -> _MemoT:
        return type(self)(self)

    def copy(self: _MemoT) -> _MemoT:
        return self.__copy__()


def fork_memo(memo: AnyMemo) -> AnyMemo:
    """
    Make a per-object memo from the operator's memo: a shallow copy, as documented.

    Custom memo classes decide on their own what a copy is: e.g., returning
    ``self`` from ``__copy__`` makes one memo shared by all objects.
    """
    return copy.copy(memo)
