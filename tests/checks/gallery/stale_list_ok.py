"""The correct twin of stale_list_bug.py: the child has a fixed name; a create that finds it there updates it."""

import kopf
from kopf._cogs.clients import api, errors

SETTINGS = kopf.OperatorSettings()
# A failed request fails the handler, which kopf retries with the gadget as it is then. Not the request retried by
# the client: a write retried after its gadget is deleted (and made anew) would take over the new one's child.
SETTINGS.networking.error_backoffs = []


@kopf.on.create("gadgets")
@kopf.on.update("gadgets")
async def reconcile(name, namespace, spec, body, **_):
    url = f"/api/v1/namespaces/{namespace}/configmaps"
    data = {"size": str(spec.get("size", 0))}
    child = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"{name}-data"}, "data": data}
    kopf.append_owner_reference(child, owner=body)
    kopf.label(child, {"gadget": name})
    try:
        await api.post(url, payload=child, settings=SETTINGS)
    except errors.APIConflictError:  # there already (perhaps a deleted namesake's): owned by this one, updated
        adopted = {"metadata": {"ownerReferences": child["metadata"]["ownerReferences"]}, "data": data}
        await api.patch(f"{url}/{name}-data", payload=adopted, settings=SETTINGS)
