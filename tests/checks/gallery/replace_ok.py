"""Correct, with optimistic concurrency: the child ConfigMap is read, changed and replaced with the version read
(a PUT naming its ``resourceVersion``). A 409 means that someone else wrote it meanwhile: the handler is retried
a few seconds later and reads it again. A child left by a deleted namesake is made this gadget's own.
"""

import kopf
from kopf._cogs.clients import api, errors

SETTINGS = kopf.OperatorSettings()
# A failed request fails the handler, which kopf retries with the gadget as it is then. Not the request retried by
# the client: a read retried after its gadget is deleted (and made anew) finds the new one's child, and the write
# after it would hand that child to the deleted gadget (the garbage collector then removes it).
SETTINGS.networking.error_backoffs = []


@kopf.on.create("gadgets")
@kopf.on.update("gadgets")
async def reconcile(name, namespace, spec, body, **_):
    url = f"/api/v1/namespaces/{namespace}/configmaps"
    data = {"copies": str(spec.get("size", 0))}
    try:
        child = await api.get(f"{url}/{name}-copies", settings=SETTINGS)
    except errors.APINotFoundError:
        child = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"{name}-copies"}, "data": data}
        kopf.append_owner_reference(child, owner=body)
        try:
            await api.post(url, payload=child, settings=SETTINGS)
        except errors.APIConflictError:
            raise kopf.TemporaryError("The child has appeared meanwhile.", delay=5) from None
        return
    child["data"] = data
    child["metadata"]["ownerReferences"] = []
    kopf.append_owner_reference(child, owner=body)
    try:
        await api.request("PUT", f"{url}/{name}-copies", payload=child, settings=SETTINGS)
    except errors.APIConflictError:
        raise kopf.TemporaryError("The child has changed meanwhile.", delay=5) from None
