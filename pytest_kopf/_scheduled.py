"""What a running operator has scheduled for later: calls that settling must wait for, not only a quiet period.

A timer whose call has failed is retried after its backoff (60 s by default), a daemon after its own;
a timer or daemon with an initial delay (or a timer waiting for its object to idle) is called later;
an object's handlers that asked for a delay (``kopf.TemporaryError(delay=...)``) run again after it;
an object's handlers that are running (e.g. a sync handler sleeping for 30 s) are not done yet, nor is a timer's
call under way (woken at the moment settling looks).
Meanwhile the cluster may be quiet for longer than the quiet period, and the run would be judged settled
before the operator has finished. A timer's regular call may change the state too (e.g. redo a patch that
a fault has lost): settling waits for one call of each timer after the last change (:meth:`Scheduled.awaited`).
kopf keeps these moments in its memory of the objects (``Daemon.due``, ``Daemon.called``,
``ResourceMemory.handling`` & ``delayed_until``); the operator under test passes its own memories to kopf
(:attr:`pytest_kopf.operator.KopfOperator.memories`), so they are read here.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .operator import KopfOperator

__all__ = ["Scheduled", "scheduled_calls"]


@dataclasses.dataclass(frozen=True, order=True)
class Scheduled:
    """A call that the operator has scheduled: when (loop time), and what.

    ``periodic``: a timer's regular call (not a delayed one: an initial delay, a retry, the idling);
    ``called``: when (loop time) the previous call of that timer or daemon has ended, if it has; ``started``:
    when that call began (it has seen the object as it was then); ``written``: the resource version that the
    patch of that call's results has made (its own change), if any.
    """

    due: float
    what: str
    periodic: bool = False
    called: float | None = None
    started: float | None = None
    written: str | None = None

    def awaited(self, changes: Sequence[tuple[float, str]]) -> bool:
        """Whether settling waits for this call: a delayed one, or a timer that has not seen the latest changes.

        ``changes``: the cluster's content changes (loop time, resource version), oldest first. A change since
        its previous call began, other than the one that call's own patch has made, is news to the timer (e.g.
        a spec changed while its call was patching its results, slowly, retried after a 5xx).
        """
        if not self.periodic or self.called is None:
            return True
        since = self.started if self.started is not None else self.called
        return any(time >= since and version != self.written for time, version in reversed(changes))

    def __str__(self) -> str:
        kind = "" if self.periodic else " (delayed)"
        return f"{self.what} at {self.due:.3f} s{kind}"


def scheduled_calls(kopf_operator: KopfOperator) -> list[Scheduled]:
    """The calls that the operator (if running) will make after a delay, soonest first."""
    from kopf._kits.testing import DaemonsMemory, TimerHandler

    memories = kopf_operator.memories
    if memories is None or not kopf_operator.running:
        return []
    now = asyncio.get_running_loop().time()
    found: list[Scheduled] = []
    for memory in memories.iter_all_memories():
        if memory.delayed_until is not None:
            found.append(Scheduled(memory.delayed_until, "the delayed handlers of an object"))
        elif memory.handling:
            found.append(Scheduled(now, "the handlers of an object, running"))
        daemons = memory.extras.get("daemons")
        if not isinstance(daemons, DaemonsMemory):
            continue
        metadata = daemons.live_body.metadata if daemons.live_body is not None else {}
        where = "/".join(part for part in (metadata.get("namespace"), metadata.get("name")) if part)
        for daemon in daemons.daemons:
            timer = isinstance(daemon.handler, TimerHandler)
            what = f"the {'timer' if timer else 'daemon'} {daemon.handler.id!r} of {where}"
            if daemon.done:
                continue
            if daemon.due is not None:
                periodic = not daemon.delayed
                found.append(Scheduled(daemon.due, what, periodic, daemon.called, daemon.started, daemon.written))
            elif timer:  # its call is under way (e.g. woken at this very moment)
                found.append(Scheduled(now, f"{what}, running"))
    return sorted(found)
