"""BUG (convergence): the update handler breaks when the optional field ``size`` is removed."""

import kopf


@kopf.on.create("gadgets")
async def create_fn(spec, patch, **_):
    patch.status["double"] = spec.get("size", 0) * 2


@kopf.on.update("gadgets")
async def update_fn(spec, patch, **_):
    patch.status["double"] = spec["size"] * 2
