"""The correct twin of coalesced_field_bug.py: the creation applies the size it is created with."""

import kopf


@kopf.on.create("gadgets")
async def create_fn(spec, patch, **_):
    patch.status["size"] = spec.get("size") or 0


@kopf.on.update("gadgets", field="spec.size")
async def size_fn(new, patch, **_):
    patch.status["size"] = new or 0
