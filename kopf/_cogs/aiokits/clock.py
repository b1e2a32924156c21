"""The framework's one wall clock: a base moment plus the event loop's time.

Intervals everywhere come from ``loop.time()``. Timestamps that go into objects come from
:func:`utcnow`, which is anchored to the loop: the first call in a loop takes the real time
as the base (unless a base was pinned with :func:`pin_epoch`), later calls add the loop's
elapsed time. So a virtual-time loop moves the wall clock too, and nothing drifts apart.
"""

from __future__ import annotations

import asyncio
import datetime

from kopf._cogs.aiokits.looplocal import LoopLocal


def _real_now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


#: The base moment of each loop's clock, and the loop's time at it.
_anchors: LoopLocal[tuple[datetime.datetime, float]] = LoopLocal(lambda loop: (_real_now(), loop.time()))


def pin_epoch(moment: datetime.datetime, loop: asyncio.AbstractEventLoop | None = None) -> None:
    """Make ``utcnow()`` in this loop return ``moment`` now, and move on with the loop's time."""
    loop = loop or asyncio.get_running_loop()
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    _anchors.set(loop, (moment, loop.time()))


def utcnow() -> datetime.datetime:
    """The current UTC time (timezone-aware), as seen by the running loop, or the real time outside of loops."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return _real_now()
    base, base_time = _anchors.get(loop)
    return base + datetime.timedelta(seconds=loop.time() - base_time)
