"""The correct twin of transition_bug.py: every change of the spec reaches the child."""

import kopf
from kopf._cogs.clients import api, errors

SETTINGS = kopf.OperatorSettings()


def child_data(spec):
    return {"size": str(spec.get("size", 0)), "mode": spec.get("mode", "fast")}


@kopf.on.create("gadgets")
async def create_fn(name, namespace, spec, body, **_):
    child = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"{name}-data"}, "data": child_data(spec)}
    kopf.append_owner_reference(child, owner=body)
    try:
        await api.post(f"/api/v1/namespaces/{namespace}/configmaps", payload=child, settings=SETTINGS)
    except errors.APIConflictError:
        await api.patch(
            f"/api/v1/namespaces/{namespace}/configmaps/{name}-data",
            payload={"metadata": {"ownerReferences": child["metadata"]["ownerReferences"]}, "data": child["data"]},
            settings=SETTINGS,
        )


@kopf.on.update("gadgets")
async def update_fn(name, namespace, spec, **_):
    payload = {"data": child_data(spec)}
    await api.patch(f"/api/v1/namespaces/{namespace}/configmaps/{name}-data", payload=payload, settings=SETTINGS)
