"""BUG (retries): the handler retries its failed request at once, again and again: it hammers the API."""

import kopf
from kopf._cogs.clients import api, errors

NO_RETRIES = kopf.OperatorSettings()
NO_RETRIES.networking.error_backoffs = []


@kopf.on.create("gadgets")
async def create_fn(name, namespace, body, **_):
    child = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"{name}-data"}, "data": {"a": "b"}}
    kopf.append_owner_reference(child, owner=body)  # owned, without the owner's labels
    while True:
        try:
            await api.post(f"/api/v1/namespaces/{namespace}/configmaps", payload=child, settings=NO_RETRIES)
            return "created"
        except errors.APIConflictError:
            return "created"
        except errors.APIError:
            continue  # no back-off
