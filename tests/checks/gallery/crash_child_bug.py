"""BUG (crash-restart): the child has a generated name: a handler re-run after a crash makes a second one."""

import kopf
from kopf._cogs.clients import api

SETTINGS = kopf.OperatorSettings()


@kopf.on.create("gadgets")
async def create_fn(name, namespace, spec, body, **_):
    child = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"generateName": f"{name}-"},
        "data": {"size": str(spec.get("size", 0))},
    }
    kopf.append_owner_reference(child, owner=body)  # owned, without the owner's labels
    await api.post(f"/api/v1/namespaces/{namespace}/configmaps", payload=child, settings=SETTINGS)
    return "created"
