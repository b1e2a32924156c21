"""BUG (retries): a 409 is retried at once, for ever: one lost answer to a create starts a storm of retries.

When the child's create is done but its answer lost (a 504 after the write, or a crash right after it), the
handler runs again; the child is there already, so the create answers 409 "already exists", which the handler
retries with no delay (``TemporaryError(delay=0)``), again and again: the object is never done.
"""

import kopf
from kopf._cogs.clients import api, errors

SETTINGS = kopf.OperatorSettings()
# A failed write fails the handler, retried by kopf with the object read again (and not at all once it is gone):
# a write retried within the request could land on the child of a namesake made meanwhile.
SETTINGS.networking.error_backoffs = []


@kopf.on.create("gadgets")
async def create_fn(name, namespace, spec, body, **_):
    child = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"{name}-data"}}
    child["data"] = {"size": str(spec.get("size", 0))}
    kopf.append_owner_reference(child, owner=body)
    try:
        await api.post(f"/api/v1/namespaces/{namespace}/configmaps", payload=child, settings=SETTINGS)
    except errors.APIConflictError:
        raise kopf.TemporaryError("the child is in the way; trying again", delay=0) from None
    return "created"


@kopf.on.update("gadgets", field="spec.size")
async def size_fn(name, namespace, new, **_):
    payload = {"data": {"size": str(new or 0)}}
    await api.patch(f"/api/v1/namespaces/{namespace}/configmaps/{name}-data", payload=payload, settings=SETTINGS)
