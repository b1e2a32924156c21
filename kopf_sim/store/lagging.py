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

__all__ = ["Withholding", "read_lag", "withholding"]


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


#: How many revisions behind the latest one the current request's reads are served (0: the latest).
read_lag: contextvars.ContextVar[int] = contextvars.ContextVar("kopf_sim_read_lag", default=0)

#: How the current request's watch stream holds its events back (None: not at all).
withholding: contextvars.ContextVar[Withholding | None] = contextvars.ContextVar("kopf_sim_withholding", default=None)
