"""BUG (transition): a change of ``mode`` never reaches the child: only a change of ``size`` is passed on."""

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


@kopf.on.field("gadgets", field="spec.size")
async def size_fn(name, namespace, spec, **_):
    payload = {"data": {"size": child_data(spec)["size"]}}
    await api.patch(f"/api/v1/namespaces/{namespace}/configmaps/{name}-data", payload=payload, settings=SETTINGS)
