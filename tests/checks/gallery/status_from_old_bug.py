"""BUG (withheld-events): the size in the status is written from ``old``, the state before the change.

A size changed shows the size before the change; when the creation and the change come as one event
(coalesced), the creation's handler writes the latest size, and the status differs again.
"""

import kopf


@kopf.on.create("gadgets")
async def create_fn(spec, patch, **_):
    patch.status["size"] = spec.get("size")


@kopf.on.update("gadgets", field="spec.size")
async def size_fn(old, new, patch, **_):
    patch.status["size"] = old


@kopf.on.resume("gadgets")
async def resume_fn(spec, patch, **_):
    patch.status["size"] = spec.get("size")  # what a crash may have left from a change not marked as handled
