"""The correct twin of coalesced_field_bug.py: the creation writes the size it is created with, too."""

import kopf


@kopf.on.create("gadgets")
async def create_fn(spec, patch, **_):
    patch.status["created"] = True
    patch.status["size"] = spec.get("size")


@kopf.on.update("gadgets", field="spec.size")
async def size_fn(new, patch, **_):
    patch.status["size"] = new
