"""The event loop of a test: one fresh loop per test, virtual time in sim mode.

The loop is created before the kopf fixtures are set up, kept (not running) between the
phases, and closed after they are torn down: the fixtures' async setup, the test itself,
and the fixtures' async teardown all run in it (``run()`` each time), in one
``contextvars`` context, so whatever they start (sessions, servers, operators) belongs
to the same loop and sees the same time. This is the only place that chooses the loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import datetime
from collections.abc import Coroutine
from typing import Any, TypeVar

from kopf_sim.timing import virtualtime
from pytest_kopf import _operator_tasks as operator_tasks

__all__ = ["TestLoop", "is_virtual", "new_loop"]

_T = TypeVar("_T")


def new_loop(
    *,
    virtual: bool,
    time_limit: float | None = None,
    thread_timeout: float | None = virtualtime.DEFAULT_EXECUTOR_TIMEOUT,
    epoch: datetime.datetime = virtualtime.DEFAULT_EPOCH,
) -> asyncio.AbstractEventLoop:
    """A new loop: virtual-time (sim mode, unless the test wants real time), or a regular one.

    ``epoch``: the wall-clock moment of the virtual loop's time 0.
    """
    if virtual:
        return virtualtime.new_virtual_loop(time_limit=time_limit, executor_timeout=thread_timeout, epoch=epoch)
    return asyncio.SelectorEventLoop()


def is_virtual(loop: asyncio.AbstractEventLoop) -> bool:
    return isinstance(loop, virtualtime.VirtualTimeLoop)


class TestLoop:
    """The loop of one test, with ``run()`` for its phases and ``close()`` at the very end."""

    __test__ = False  # not a test class, despite the name

    def __init__(
        self,
        *,
        virtual: bool,
        time_limit: float | None = None,
        thread_timeout: float | None = virtualtime.DEFAULT_EXECUTOR_TIMEOUT,
        epoch: datetime.datetime = virtualtime.DEFAULT_EPOCH,
    ) -> None:
        self.loop = new_loop(virtual=virtual, time_limit=time_limit, thread_timeout=thread_timeout, epoch=epoch)
        self.context = contextvars.copy_context()
        self.closed = False

    @property
    def virtual(self) -> bool:
        return is_virtual(self.loop)

    def run(self, coro: Coroutine[Any, Any, _T]) -> _T:
        """Run a coroutine to its end; if the loop fails under it (a deadlock), cancel it and re-raise."""
        if self.closed:
            coro.close()
            raise RuntimeError("The test's event loop is already closed.")
        task = self.loop.create_task(coro, context=self.context)
        try:
            result = self.loop.run_until_complete(task)
        except BaseException:
            if not task.done():
                task.cancel()
                with contextlib.suppress(BaseException):
                    self.loop.run_until_complete(task)
            self._raise_escaped()
            raise
        self._raise_escaped()
        return result

    def _raise_escaped(self) -> None:
        """Raise what ended an operator's task that is no error of its own (a test's timeout, an interrupt)."""
        exception = operator_tasks.escaped.pop(self.loop, None)
        if exception is not None:
            raise exception

    def close(self) -> None:
        """Cancel what is left, shut down async generators and the executor, close the loop."""
        if self.closed:
            return
        self.closed = True
        loop = self.loop
        try:
            tasks = [task for task in asyncio.all_tasks(loop) if not task.done()]
            for task in tasks:
                task.cancel()
            if tasks:
                with contextlib.suppress(BaseException):
                    loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
            with contextlib.suppress(BaseException):
                loop.run_until_complete(loop.shutdown_asyncgens())
            with contextlib.suppress(BaseException):
                loop.run_until_complete(loop.shutdown_default_executor())
        finally:
            loop.close()
