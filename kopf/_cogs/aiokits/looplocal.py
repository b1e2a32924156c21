"""One value per event loop: made on the loop's first use, and gone with the loop (never keeping it alive)."""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable
from typing import Generic, TypeVar

_T = TypeVar("_T")


class LoopLocal(Generic[_T]):
    """A value for each event loop, e.g. the loop's shared timers or its clock's anchor."""

    __slots__ = ("_factory", "_values")

    def __init__(self, factory: Callable[[asyncio.AbstractEventLoop], _T]) -> None:
        self._factory = factory
        self._values: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _T] = weakref.WeakKeyDictionary()

    def __contains__(self, loop: asyncio.AbstractEventLoop) -> bool:
        return loop in self._values

    def __len__(self) -> int:
        return len(self._values)

    def get(self, loop: asyncio.AbstractEventLoop) -> _T:
        """The loop's value: made now if the loop has none yet."""
        value = self._values.get(loop)
        if value is None:
            value = self._values[loop] = self._factory(loop)
        return value

    def set(self, loop: asyncio.AbstractEventLoop, value: _T) -> None:
        self._values[loop] = value
