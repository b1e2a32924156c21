"""The correct twin of stale_read_bug.py: the handlers use the state they were given (the event's)."""

import kopf


@kopf.on.create("gadgets")
async def create_fn(spec, patch, **_):
    patch.status["mirror"] = {"size": spec.get("size", 0)}


@kopf.on.update("gadgets")
@kopf.on.resume("gadgets")  # what a crash may have left from a change not marked as handled
async def update_fn(spec, patch, **_):
    patch.status["mirror"] = {"size": spec.get("size", 0)}
