"""The correct twin of missed_state_bug.py: level-triggered: the child follows the object's state, owned by it."""

import kopf
from kopf._cogs.clients import api, errors

SETTINGS = kopf.OperatorSettings()
# A failed request fails the handler, which kopf retries with the gadget as it is then. Not the request retried by
# the client: a write retried after its gadget is deleted (and made anew) would take over the new one's child.
SETTINGS.networking.error_backoffs = []


async def ensure_child(name, namespace, spec, body):
    child = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": f"{name}-data"},
        "data": {"size": str(spec.get("size", 0))},
    }
    kopf.append_owner_reference(child, owner=body)  # owned, without the owner's labels
    try:
        await api.post(f"/api/v1/namespaces/{namespace}/configmaps", payload=child, settings=SETTINGS)
    except errors.APIConflictError:
        await api.patch(
            f"/api/v1/namespaces/{namespace}/configmaps/{name}-data",
            payload={"metadata": {"ownerReferences": child["metadata"]["ownerReferences"]}, "data": child["data"]},
            settings=SETTINGS,
        )


@kopf.on.create("gadgets")
async def create_fn(name, namespace, spec, body, **_):
    await ensure_child(name, namespace, spec, body)


@kopf.on.update("gadgets")
async def update_fn(name, namespace, spec, body, **_):
    await ensure_child(name, namespace, spec, body)
