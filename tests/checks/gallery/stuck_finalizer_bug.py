"""BUG (finalizers): the deletion waits for the children to go, but they go only after their owner is gone."""

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
    try:
        await api.get(f"/api/v1/namespaces/{namespace}/configmaps/{name}-data", settings=SETTINGS)
    except errors.APINotFoundError:
        return
    raise kopf.TemporaryError("the child is still there", delay=30)
