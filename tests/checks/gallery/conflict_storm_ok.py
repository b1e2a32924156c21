"""The correct twin of conflict_storm_bug.py: a child there already (made by an earlier run) is updated."""

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
    url = f"/api/v1/namespaces/{namespace}/configmaps"
    try:
        await api.post(url, payload=child, settings=SETTINGS)
    except errors.APIConflictError:  # made by an earlier run of this handler, whose success was not stored
        await api.patch(
            f"{url}/{name}-data",
            payload={"metadata": {"ownerReferences": child["metadata"]["ownerReferences"]}, "data": child["data"]},
            settings=SETTINGS,
        )
    return "created"


@kopf.on.update("gadgets", field="spec.size")
async def size_fn(name, namespace, new, **_):
    payload = {"data": {"size": str(new or 0)}}
    await api.patch(f"/api/v1/namespaces/{namespace}/configmaps/{name}-data", payload=payload, settings=SETTINGS)
