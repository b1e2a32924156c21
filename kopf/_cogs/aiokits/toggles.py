"""On/off flags that tasks can wait for, and sets of them: e.g. "the operator is paused"."""

from __future__ import annotations

import abc
import asyncio
from collections.abc import Callable, Iterable, Iterator


class _Waitable(abc.ABC):
    """Waiting until an on/off state is reached; subclasses say what the state is."""

    _changed: asyncio.Condition | None = None

    @abc.abstractmethod
    def is_on(self) -> bool:
        """Whether the flag (or the set) is on now."""

    def is_off(self) -> bool:
        return not self.is_on()

    def __bool__(self) -> bool:
        return self.is_on()

    async def wait_for(self, state: bool) -> bool:
        condition = self._condition()
        async with condition:
            await condition.wait_for(lambda: self.is_on() == state)
        return state

    def _condition(self) -> asyncio.Condition:
        if self._changed is None:  # created lazily, inside the loop that uses it
            self._changed = asyncio.Condition()
        return self._changed

    async def _notify(self) -> None:
        condition = self._condition()
        async with condition:
            condition.notify_all()


class Toggle(_Waitable):
    """A flag that is on or off, with waiting for either state (unlike an Event, which waits for "set" only)."""

    def __init__(self, state: bool = False, *, name: str | None = None, parent: ToggleSet | None = None) -> None:
        self.name = name
        self._state = state
        self._parent = parent

    def __repr__(self) -> str:
        label = f" {self.name}" if self.name else ""
        return f"<Toggle{label} {'on' if self._state else 'off'}>"

    def is_on(self) -> bool:
        return self._state

    async def turn_to(self, state: bool) -> None:
        """Switch the state and wake up everyone waiting for a change (here and in the parent set)."""
        if self._state == state:
            return
        self._state = state
        await self._notify()
        if self._parent is not None:
            await self._parent._notify()


class ToggleSet(_Waitable):
    """A set of toggles, on when ``any`` (or ``all``, by the given function) of them is on."""

    def __init__(self, fn: Callable[[Iterable[bool]], bool] = any) -> None:
        self._fn = fn
        self._toggles: list[Toggle] = []

    def __len__(self) -> int:
        return len(self._toggles)

    def __iter__(self) -> Iterator[Toggle]:
        return iter(list(self._toggles))

    def is_on(self) -> bool:
        return bool(self._fn(toggle.is_on() for toggle in self._toggles))

    async def make_toggle(self, state: bool = False, *, name: str | None = None) -> Toggle:
        toggle = Toggle(state, name=name, parent=self)
        self._toggles.append(toggle)
        await self._notify()
        return toggle

    async def drop_toggle(self, toggle: Toggle) -> None:
        if toggle in self._toggles:
            self._toggles.remove(toggle)
            await self._notify()
