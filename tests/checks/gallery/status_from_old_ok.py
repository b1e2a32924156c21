"""The correct twin of status_from_old_bug.py: the size in the status is written from ``new``."""

import kopf


@kopf.on.create("gadgets")
async def create_fn(spec, patch, **_):
    patch.status["size"] = spec.get("size")


@kopf.on.update("gadgets", field="spec.size")
async def size_fn(old, new, patch, **_):
    patch.status["size"] = new
