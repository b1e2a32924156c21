"""The correct twin of relisted_event_bug.py: the objects of a listing (the type ``None``) are mirrored too."""

import kopf
from kopf._cogs.clients import api, errors

SETTINGS = kopf.OperatorSettings()


async def mirror(name, namespace, spec, body):
    child = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": f"{name}-data"},
        "data": {"size": str(spec.get("size", 0))},
    }
    kopf.append_owner_reference(child, owner=body)
    try:
        await api.post(f"/api/v1/namespaces/{namespace}/configmaps", payload=child, settings=SETTINGS)
    except errors.APIConflictError:
        await api.patch(
            f"/api/v1/namespaces/{namespace}/configmaps/{name}-data",
            payload={"metadata": {"ownerReferences": child["metadata"]["ownerReferences"]}, "data": child["data"]},
            settings=SETTINGS,
        )


@kopf.on.event("gadgets")
async def watch_fn(type, name, namespace, spec, body, **_):
    if type != "DELETED" and not body["metadata"].get("deletionTimestamp"):
        await mirror(name, namespace, spec, body)
