"""The correct twin of hammering_bug.py: the failed request is left to the retries with back-offs."""

import kopf
from kopf._cogs.clients import api, errors

NO_RETRIES = kopf.OperatorSettings()
NO_RETRIES.networking.error_backoffs = []


@kopf.on.create("gadgets")
async def create_fn(name, namespace, body, **_):
    child = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"{name}-data"}, "data": {"a": "b"}}
    kopf.append_owner_reference(child, owner=body)  # owned, without the owner's labels
    url = f"/api/v1/namespaces/{namespace}/configmaps"
    try:
        try:
            await api.post(url, payload=child, settings=NO_RETRIES)
        except errors.APIConflictError:  # there already (perhaps a deleted namesake's, going away): made ours
            adopted = {"metadata": {"ownerReferences": child["metadata"]["ownerReferences"]}}
            await api.patch(f"{url}/{name}-data", payload=adopted, settings=NO_RETRIES)
    except errors.APIError as exc:
        raise kopf.TemporaryError(f"cannot create the child yet: {exc}", delay=10) from exc
    return "created"
