"""The correct twin of optional_field_bug.py: a missing optional field has its default."""

import kopf


@kopf.on.create("gadgets")
async def create_fn(spec, patch, **_):
    patch.status["double"] = spec.get("size", 0) * 2


@kopf.on.update("gadgets")
async def update_fn(spec, patch, **_):
    patch.status["double"] = spec.get("size", 0) * 2
