"""The blocking waits of the framework's sync code in threads (e.g. a sync daemon's ``stopped.wait(10)``).

By default, a wait is the thread event's own (real time). A harness that runs operators in
another notion of time (e.g. a test plugin with a virtual-time event loop, where a thread
blocked in a known wait must count as idle and wake at its virtual deadline) installs its
own waiter with :func:`set_event_waiter`; the framework knows nothing of such harnesses.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

__all__ = ["EventWaiter", "set_event_waiter", "wait_event"]

#: Waits until the event is set or the timeout (seconds; None: no limit) is over; returns whether it is set.
EventWaiter = Callable[[threading.Event, "float | None"], bool]

_waiter: EventWaiter | None = None


def wait_event(event: threading.Event, timeout: float | None = None) -> bool:
    """Block the thread until the event is set or the timeout is over; return whether it is set."""
    waiter = _waiter
    if waiter is None:
        return event.wait(timeout)
    return waiter(event, timeout)


def set_event_waiter(waiter: EventWaiter | None) -> EventWaiter | None:
    """Install a waiter for :func:`wait_event` (None: the real waiting); return the previous one."""
    global _waiter
    previous, _waiter = _waiter, waiter
    return previous
