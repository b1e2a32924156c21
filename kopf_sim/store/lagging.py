"""What a lagging apiserver cache shows: reads of older revisions, and watch events held back or coalesced.

A real apiserver serves most reads from its watch cache, which can lag behind etcd; and a
watcher that falls behind, or relists, sees the latest state of objects without the states in
between. The fault injection (:mod:`kopf_sim.http.faults`) decides which requests get such a view and
sets it here, for the request being handled (context variables: one request, one task); the
server's logic (:mod:`kopf_sim.http.app`) reads it when it serves a get, a list or a watch.
"""

from __future__ import annotations

import contextvars
import dataclasses
from collections.abc import Callable

__all__ = ["Holding", "Withholding", "read_lag", "read_lag_per_object", "withholding"]


@dataclasses.dataclass(frozen=True)
class Withholding:
    """How a watch stream holds its events back: each ``delay`` seconds late, or coalesced per window.

    With ``coalesce``, the events of each window of ``delay`` seconds are sent at its end, and only the
    latest event of each object among them (as a watcher that relists sees the objects); the events go
    out in the order of their resource versions either way. ``note`` is told of every event dropped.
    """

    delay: float
    coalesce: bool = False
    note: Callable[[str], None] | None = None


@dataclasses.dataclass(frozen=True)
class Holding:
    """How a watch stream holds one object's event back: until the object's next event, at most ``window`` s.

    Then, with ``coalesce``, the held event is dropped and the next one goes out instead (the watcher never
    sees the held state); else the held one goes out at once and the next one (with what follows it)
    ``spacing`` seconds later. Events after the held one wait with it (a stream keeps its order).

    With ``expire``, nothing is held: the event is never sent, the stream ends there with a ``410 Expired``
    (as when a broken stream's version is compacted before the watcher resumes): the watcher lists again,
    and finds the object as it is then.
    """

    coalesce: bool
    window: float
    spacing: float = 1.0
    note: Callable[[str], None] | None = None
    expire: bool = False


#: How many revisions behind the latest one the current request's reads are served (0: the latest).
read_lag: contextvars.ContextVar[int] = contextvars.ContextVar("kopf_sim_read_lag", default=0)

#: Whether the lag of the current request's reads counts the changes of what is read, not the cluster's revisions.
read_lag_per_object: contextvars.ContextVar[bool] = contextvars.ContextVar("kopf_sim_read_lag_per_obj", default=False)

#: How the current request's watch stream holds its events back (None: not at all).
withholding: contextvars.ContextVar[Withholding | None] = contextvars.ContextVar("kopf_sim_withholding", default=None)
