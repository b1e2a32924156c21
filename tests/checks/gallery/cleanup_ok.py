"""The correct twin of cleanup_bug.py: the child is owned by its gadget, so the garbage collector removes it."""

import kopf
from kopf._cogs.clients import api, errors

SETTINGS = kopf.OperatorSettings()
# A failed request fails the handler, which kopf retries with the gadget as it is then. Not the request retried by
# the client: a write retried after its gadget is deleted (and made anew) would take over the new one's child.
SETTINGS.networking.error_backoffs = []


@kopf.on.create("gadgets")
@kopf.on.update("gadgets")
async def reconcile(name, namespace, spec, body, **_):
    child = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"{name}-data"}}
    child["data"] = {"size": str(spec.get("size", 0))}
    kopf.append_owner_reference(child, owner=body)
    try:
        await api.post(f"/api/v1/namespaces/{namespace}/configmaps", payload=child, settings=SETTINGS)
    except errors.APIConflictError:
        await api.patch(
            f"/api/v1/namespaces/{namespace}/configmaps/{name}-data",
            payload={"metadata": {"ownerReferences": child["metadata"]["ownerReferences"]}, "data": child["data"]},
            settings=SETTINGS,
        )
