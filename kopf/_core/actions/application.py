"""
After a handling cycle: how long to wait before the next one, and how to cause it.

The next cycle starts on the next watch-event of the object. If the cycle's patch
is not empty, applying it causes that event by itself. If the patch is empty but some
handlers are still due (e.g. after a delay), the framework "touches" the object:
it changes a dummy field of the progress storage, which causes a new event.
When the handling is done, the dummy field is removed (if it is there).
"""

import asyncio
from collections.abc import Iterable

from kopf._cogs.aiokits.clock import utcnow
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.structs import bodies, patches


def get_delay(delays: Iterable[float | None]) -> float | None:
    """The shortest of the delays (never negative), or ``None`` if there are none."""
    known = [max(0.0, delay) for delay in delays if delay is not None]
    return min(known) if known else None


def get_remaining_delay(
    delay: float | None,
    *,
    since: float,
    loop: asyncio.AbstractEventLoop | None = None,
) -> float | None:
    """
    The rest of a delay that was calculated at the loop's time ``since`` (e.g. before patching).

    The time spent since then (e.g. in the API calls) is subtracted; never negative.
    """
    if delay is None:
        return None
    loop = loop if loop is not None else asyncio.get_running_loop()
    return max(0.0, delay - (loop.time() - since))


def touch(*, body: bodies.Body, patch: patches.Patch, settings: OperatorSettings, done: bool = False) -> None:
    """
    Add the "touch" of the dummy field to the patch, to cause a new event of the object.

    With ``done=True``, the dummy field is removed instead (if present), as no more events are needed.
    The value is the current timestamp, so that every touch is a change.
    """
    value = None if done else utcnow().isoformat()
    settings.persistence.progress_storage.touch(body=body, patch=patch, value=value)


def build_touch_patch(*, body: bodies.Body, settings: OperatorSettings, done: bool = False) -> patches.Patch:
    """A new patch with only the touch of the dummy field (it can be empty if there is nothing to do)."""
    patch = patches.Patch(body=body)
    touch(body=body, patch=patch, settings=settings, done=done)
    return patch
