"""BUG (withheld-events): only the field handler applies the size; the creation takes an empty gadget's.

When the creation and a change of the size come to the operator as one event (coalesced, as after a relist),
the object is handled as created with that size, the field handler is never called, and the size is never
applied: the status says 0 for a gadget of size 5.
"""

import kopf


@kopf.on.create("gadgets")
async def create_fn(patch, **_):
    patch.status["size"] = 0  # a new gadget starts empty; its resizing comes as updates


@kopf.on.update("gadgets", field="spec.size")
async def size_fn(new, patch, **_):
    patch.status["size"] = new or 0
