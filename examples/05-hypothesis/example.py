"""An operator whose status follows the spec, written to survive crashes, retries and re-deliveries.

Every handler computes its result from the object's current state alone, so running it again (after a
crash between its work and kopf's record of it, or for a re-delivered event) changes nothing.
"""

import kopf


def summary(spec):
    items = list(spec.get("items") or [])
    return {"field": spec.get("field", ""), "items": len(items)}


@kopf.on.create("kopfexamples")
def create_fn(spec, **_):
    return summary(spec)


@kopf.on.update("kopfexamples")
async def update_fn(spec, patch, **_):
    patch.status["create_fn"] = summary(spec)


@kopf.on.delete("kopfexamples")
async def delete_fn(name, logger, **_):
    logger.info(f"{name} is gone, and so is its summary.")
