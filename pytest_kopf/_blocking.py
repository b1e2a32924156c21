"""A sync client called in the thread of the loop that serves its simulated cluster: served, with the loop blocked.

An async handler that calls a sync client (the official ``kubernetes`` client, ``requests``, ``pykube-ng``)
blocks the operator's event loop until the answer comes: a bad habit, but a common one, and it works
against a real apiserver. In sim mode, the simulated apiserver is served by that very loop, which cannot
answer while it is blocked. So such a request is served right there, in the same thread, by a loop of
its own (:class:`BlockedLoopServer`: the same app and store, its handlers run in that loop), while the
operator's loop stays blocked in the call: none of its tasks run meanwhile and its clock stands still (a
blocked loop is a busy one), as in production. The changes that the request makes reach the operator's
watches when its loop runs again. A :class:`SyncClientInLoopWarning` names the handler (once per handler).

The serving loop is a virtual-time loop on the same clock (its time starts from the blocked loop's), so
the simulator's timestamps and faults (a latency, a crash after a write) behave as in any request. A
request that needs the blocked loop itself to be answered (e.g. an admission webhook served in-process
by the operator, or a watch with no end) cannot be served: that is an error naming it, not a hang.
"""

from __future__ import annotations

import asyncio
import asyncio.events
import contextlib
import os
import sys
import types
import warnings
import weakref
from collections.abc import Callable
from typing import Any

from kopf._kits.testing import current_handler_id
from kopf_sim.timing.virtualtime import DeadlockError, VirtualTimeLoop

from .errors import SyncClientInLoopWarning

__all__ = ["BlockedLoopServer", "server_for", "warn_once"]


_servers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, BlockedLoopServer] = weakref.WeakKeyDictionary()
_warned: set[str] = set()
_OWN_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "")


class BlockedLoopServer:
    """A loop that serves requests in the thread of a blocked loop, on its clock (see the module's docs)."""

    def __init__(self, blocked: asyncio.AbstractEventLoop) -> None:
        self.blocked = blocked
        self.loop: asyncio.AbstractEventLoop
        if isinstance(blocked, VirtualTimeLoop):
            self.loop = VirtualTimeLoop(
                start=blocked.time(), epoch=blocked.epoch, executor_timeout=blocked.executor_timeout, one_cpu=False
            )
        else:
            self.loop = asyncio.new_event_loop()

    def call_soon(self, callback: Callable[..., Any], *args: Any) -> None:
        self.loop.call_soon(callback, *args)

    def run_until(
        self, until: Callable[[], bool], notify: Callable[[Callable[[], None] | None], None], timeout: float | None
    ) -> bool:
        """Serve until the condition holds (``notify`` gets the callback that the socket calls on each change).

        Runs in the blocked loop's thread, in the middle of one of its callbacks: the blocked loop is set
        aside as the running one meanwhile, and back after. Returns False if ``timeout`` seconds pass.
        If the blocked task is cancelled meanwhile (its operator has crashed, e.g. right after this request's
        write), it gets :class:`asyncio.CancelledError` at once: a killed process does nothing more, not even
        report the connection it has lost.
        """
        if until():
            return True
        if isinstance(self.loop, VirtualTimeLoop) and isinstance(self.blocked, VirtualTimeLoop):
            self.loop.clock.jump(max(self.loop.clock.ticks, self.blocked.ticks))  # the same clock, never back

        async def waiting() -> bool:
            changed = asyncio.Event()
            notify(changed.set)
            try:
                async with asyncio.timeout(timeout):
                    while not until():
                        changed.clear()
                        await changed.wait()
                return True
            except TimeoutError:
                return False
            finally:
                notify(None)

        running = asyncio.events._get_running_loop()
        task = asyncio.current_task(self.blocked) if running is self.blocked else None
        asyncio.events._set_running_loop(None)
        try:
            done = self.loop.run_until_complete(waiting())
        except DeadlockError as exc:
            raise ConnectionAbortedError(
                "A sync client's request in the event loop's own thread (it blocks the loop) cannot be answered "
                "without that loop (e.g. an admission webhook served in-process by the operator, or a watch with "
                f"no timeout): {exc}"
            ) from None
        finally:
            asyncio.events._set_running_loop(running)
        if task is not None and task.cancelling():
            raise asyncio.CancelledError("cancelled while its loop was blocked by a sync client")
        return done

    def close(self) -> None:
        """Cancel what is left (kept-alive connections' handlers) and close the loop (its blocked loop is gone)."""
        loop = self.loop
        if loop.is_closed():
            return
        with contextlib.suppress(Exception):
            pending = asyncio.all_tasks(loop)
            for task in pending:
                task.cancel()
            if pending and asyncio.events._get_running_loop() is None:
                loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        loop.close()


def server_for(loop: asyncio.AbstractEventLoop) -> BlockedLoopServer:
    """The server of requests made while this loop is blocked (one per loop, made on first use)."""
    server = _servers.get(loop)
    if server is None or server.loop.is_closed():
        server = _servers[loop] = BlockedLoopServer(loop)
    return server


def close_server_for(loop: asyncio.AbstractEventLoop) -> None:
    server = _servers.pop(loop, None)
    if server is not None:
        server.close()


def warn_once(host: str) -> None:
    """Warn that a sync client blocks the loop, naming the handler (or the calling code); once for each."""
    who = _calling_handler() or _calling_code()
    if who in _warned:
        return
    _warned.add(who)
    warnings.warn(
        SyncClientInLoopWarning(
            f"{who} calls a sync client (e.g. the official kubernetes client) for the simulated cluster at {host} in "
            f"the event loop's own thread: it blocks the operator's loop until the answer comes (as it would in "
            f"production). Served in sim mode; better, call it in a sync handler, or as "
            f"`await asyncio.to_thread(...)`, or use an async client (e.g. kubernetes_asyncio)."
        ),
        stacklevel=2,
    )


def _calling_handler() -> str | None:
    handler_id = current_handler_id()
    return f"The handler {handler_id!r}" if handler_id is not None else None


def _calling_code() -> str:
    """Where the operator's (or the test's) code calls the client: the first frame not of a library or of ours."""
    frame: types.FrameType | None = sys._getframe(1)
    system = tuple(os.path.join(os.path.realpath(path), "") for path in {sys.prefix, sys.base_prefix})
    while frame is not None:
        file = os.path.realpath(frame.f_code.co_filename)
        if not file.startswith(system) and not file.startswith(_OWN_DIR) and not file.startswith("<"):
            return f"The code at {frame.f_code.co_filename}:{frame.f_lineno} ({frame.f_code.co_name})"
        frame = frame.f_back
    return "Some code"
