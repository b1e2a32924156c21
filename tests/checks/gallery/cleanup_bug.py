"""BUG (cleanup): the child has no owner reference and nothing deletes it: it outlives its gadget."""

import kopf
from kopf._cogs.clients import api, errors

SETTINGS = kopf.OperatorSettings()


@kopf.on.create("gadgets")
@kopf.on.update("gadgets")
async def reconcile(name, namespace, spec, **_):
    child = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"{name}-data"}}
    child["data"] = {"size": str(spec.get("size", 0))}
    try:
        await api.post(f"/api/v1/namespaces/{namespace}/configmaps", payload=child, settings=SETTINGS)
    except errors.APIConflictError:
        await api.patch(
            f"/api/v1/namespaces/{namespace}/configmaps/{name}-data",
            payload={"metadata": {"ownerReferences": child["metadata"]["ownerReferences"]}, "data": child["data"]},
            settings=SETTINGS,
        )
