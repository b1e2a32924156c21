"""The correct twin of stuck_finalizer_bug.py: the deletion removes the child itself."""

import contextlib

import kopf
from kopf._cogs.clients import api, errors

SETTINGS = kopf.OperatorSettings()


@kopf.on.create("gadgets")
async def create_fn(name, namespace, body, **_):
    child = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"{name}-data"}, "data": {"a": "b"}}
    kopf.append_owner_reference(child, owner=body)  # owned, without the owner's labels
    with contextlib.suppress(errors.APIConflictError):
        await api.post(f"/api/v1/namespaces/{namespace}/configmaps", payload=child, settings=SETTINGS)


@kopf.on.delete("gadgets")
async def delete_fn(name, namespace, **_):
    with contextlib.suppress(errors.APINotFoundError):
        await api.delete(f"/api/v1/namespaces/{namespace}/configmaps/{name}-data", settings=SETTINGS)
