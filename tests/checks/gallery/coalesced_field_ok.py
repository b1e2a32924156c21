"""The correct twin of coalesced_field_bug.py: the creation writes the size it is created with, too.

Both write the size at the operator's start (``on.resume``): a crash right after a handler's write, before the
change was marked as handled, and the change reverted meanwhile, would leave a size that no spec has.
"""

import kopf


@kopf.on.create("gadgets")
async def create_fn(spec, patch, **_):
    patch.status["created"] = True
    patch.status["size"] = spec.get("size")


@kopf.on.update("gadgets", field="spec.size")
async def size_fn(new, patch, **_):
    patch.status["size"] = new


@kopf.on.resume("gadgets")
async def resume_fn(spec, patch, **_):
    patch.status["size"] = spec.get("size")  # what a crash may have left from a change not marked as handled
