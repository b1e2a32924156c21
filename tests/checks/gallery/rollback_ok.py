"""The correct twin of rollback_bug.py: a good spec clears the error of a refused one."""

import kopf
from kopf._cogs.clients import api, errors

SETTINGS = kopf.OperatorSettings()
# A failed request fails the handler, which kopf retries with the gadget as it is then. Not the request retried by
# the client: a write retried after its gadget is deleted (and made anew) would take over the new one's child.
SETTINGS.networking.error_backoffs = []


async def ensure_child(name, namespace, spec, body):
    child = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"{name}-data"}}
    child["data"] = {"size": str(spec.get("size", 1))}
    kopf.append_owner_reference(child, owner=body)
    try:
        await api.post(f"/api/v1/namespaces/{namespace}/configmaps", payload=child, settings=SETTINGS)
    except errors.APIConflictError:
        await api.patch(
            f"/api/v1/namespaces/{namespace}/configmaps/{name}-data",
            payload={"metadata": {"ownerReferences": child["metadata"]["ownerReferences"]}, "data": child["data"]},
            settings=SETTINGS,
        )


@kopf.on.create("gadgets")
@kopf.on.update("gadgets")
async def reconcile(name, namespace, spec, body, patch, **_):
    if spec.get("size") == 0:  # refused: the object keeps its last good child
        patch.status["error"] = "a gadget of size 0 makes no sense"
        raise kopf.PermanentError("a gadget of size 0 makes no sense")
    await ensure_child(name, namespace, spec, body)
    patch.status["error"] = None
