"""Which tasks of the test's loop are an operator's: made in its context, told apart from the test's own.

An operator under test runs in the test's loop, beside the test's tasks and the fixtures'. The loop's task
factory marks the tasks made while an operator's context is current (:data:`owner_var`): they are the ones
that its stop cancels, its crash kills, and its leak check names; the rest are left alone (kopf's ``ignored``).
"""

from __future__ import annotations

import asyncio
import contextvars
import itertools
import weakref
from collections.abc import Callable, Collection, Iterator
from typing import Any

from kopf_sim.transports.inmemory import SERVING

__all__ = ["NotOurs", "OperatorTasks", "coro_name", "escaped", "owner_var"]

#: Which operator (if any) the current code runs for: inherited by every task that the operator spawns.
owner_var: contextvars.ContextVar[object | None] = contextvars.ContextVar("pytest_kopf_operator", default=None)

TaskFactory = Callable[..., "asyncio.Future[Any]"]

#: What ended an operator's task that is no error of the operator's: pytest-timeout's ``Failed`` (raised by its
#: signal handler in whatever code runs), a ``KeyboardInterrupt``... asyncio keeps such an exception in the task
#: and goes on, so the operator would go on without that task and the checks would judge what is left of it. The
#: loop is stopped instead, and the test's loop raises it (``pytest_kopf._running.TestLoop.run``).
escaped: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, BaseException] = weakref.WeakKeyDictionary()


def _escalate(task: asyncio.Future[Any]) -> None:
    exception = getattr(task, "_exception", None)  # read without marking it retrieved: asyncio logs the others
    if exception is None or isinstance(exception, (Exception, asyncio.CancelledError, GeneratorExit)):
        return
    loop = task.get_loop()
    escaped.setdefault(loop, exception)
    loop.stop()


_serials = itertools.count(1)


class OperatorTasks(Collection["asyncio.Task[Any]"]):
    """The tasks of one operator: made in its context (tracked by the loop's task factory), alive or not.

    The complement serves as kopf's ``ignored`` tasks: stopping the operator must not cancel
    the test's tasks (or the fixtures' teardown), which kopf would do to any newer task.
    """

    def __init__(self, owner: object) -> None:
        self.owner = owner
        self.tasks: weakref.WeakSet[asyncio.Task[Any]] = weakref.WeakSet()
        self.serials: weakref.WeakKeyDictionary[asyncio.Task[Any], int] = weakref.WeakKeyDictionary()
        # The simulator's side of the operator's in-memory connections: made in its context (so they are stopped
        # in a fixed order with it), but kopf's exit must not wait for them as for its own "hung" tasks.
        self.serving: weakref.WeakSet[asyncio.Task[Any]] = weakref.WeakSet()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.previous: TaskFactory | None = None

    def install(self, loop: asyncio.AbstractEventLoop) -> None:
        if self.loop is not None:
            return
        self.loop, self.previous = loop, loop.get_task_factory()
        loop.set_task_factory(self._factory)

    def uninstall(self) -> None:
        if self.loop is not None and self.loop.get_task_factory() == self._factory:
            self.loop.set_task_factory(self.previous)
        self.loop = self.previous = None

    def _factory(
        self, loop: asyncio.AbstractEventLoop, coro: Any, *, context: contextvars.Context | None = None
    ) -> asyncio.Future[Any]:
        task: asyncio.Future[Any]
        if self.previous is not None:
            task = self.previous(loop, coro) if context is None else self.previous(loop, coro, context=context)
        else:
            task = asyncio.Task(coro, loop=loop, context=context)
        owner = owner_var.get() if context is None else context.get(owner_var)
        if owner is self.owner and isinstance(task, asyncio.Task):
            task.add_done_callback(_escalate)
            self.tasks.add(task)
            self.serials[task] = next(_serials)
            if SERVING.get() if context is None else context.get(SERVING, False):
                self.serving.add(task)
        return task

    def __contains__(self, task: object) -> bool:
        return task in self.tasks

    def __iter__(self) -> Iterator[asyncio.Task[Any]]:
        return iter(list(self.tasks))

    def __len__(self) -> int:
        return len(self.tasks)

    def pending(self) -> list[asyncio.Task[Any]]:
        return sorted((task for task in self.tasks if not task.done()), key=lambda task: task.get_name())

    def pending_in_order(self) -> list[asyncio.Task[Any]]:
        """The pending tasks in the order they were made (the same in every run of the same actions)."""
        return sorted((task for task in self.tasks if not task.done()), key=lambda task: self.serials.get(task, 0))


class NotOurs(Collection["asyncio.Task[Any]"]):
    """All the tasks of the loop except the operator's own: kopf leaves them alone when it stops."""

    def __init__(self, ours: OperatorTasks) -> None:
        self.ours = ours

    def __contains__(self, task: object) -> bool:
        return task not in self.ours or task in self.ours.serving

    def __iter__(self) -> Iterator[asyncio.Task[Any]]:
        return iter([task for task in asyncio.all_tasks() if task in self])

    def __len__(self) -> int:
        return sum(1 for _ in self)


def coro_name(task: asyncio.Task[Any]) -> str:
    coro = task.get_coro()
    return str(getattr(coro, "__qualname__", None) or coro) + "()"
