"""BUG (withheld-events): only the field handler writes the size into the status; the creation does not.

When the creation and a change of the size come to the operator as one event (coalesced, as after a relist),
the object is handled as created with that size, the field handler is never called, and the status never
gets the size.
"""

import kopf


@kopf.on.create("gadgets")
async def create_fn(patch, **_):
    patch.status["created"] = True  # the size comes with its updates


@kopf.on.update("gadgets", field="spec.size")
async def size_fn(new, patch, **_):
    patch.status["size"] = new


@kopf.on.resume("gadgets")
async def resume_fn(spec, patch, **_):
    patch.status["size"] = spec.get("size")  # what a crash may have left from a change not marked as handled
