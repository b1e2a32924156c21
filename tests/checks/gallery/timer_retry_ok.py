"""Correct, with retries: a timer copies the child ConfigMap's data into the status; while the ConfigMap is not
there yet (or the API fails), the timer is retried after kopf's default delay of 60 s.

Settling waits for that retry: a quiet period of 30 s is not the end of the operator's work.
"""

import kopf
from kopf._cogs.clients import api, errors

SETTINGS = kopf.OperatorSettings()


@kopf.on.create("gadgets")
async def create_fn(name, namespace, spec, body, **_):
    child = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"{name}-data"}, "data": {"ready": "yes"}}
    kopf.append_owner_reference(child, owner=body)
    url = f"/api/v1/namespaces/{namespace}/configmaps"
    try:
        await api.post(url, payload=child, settings=SETTINGS)
    except errors.APIConflictError:  # made by an earlier run (or by a deleted namesake, going away): made ours
        adopted = {"metadata": {"ownerReferences": child["metadata"]["ownerReferences"]}}
        await api.patch(f"{url}/{name}-data", payload=adopted, settings=SETTINGS)


@kopf.timer("gadgets", interval=600)
async def observe(name, namespace, patch, **_):
    try:
        child = await api.get(f"/api/v1/namespaces/{namespace}/configmaps/{name}-data", settings=SETTINGS)
    except errors.APINotFoundError:
        raise kopf.TemporaryError("The ConfigMap is not there yet.") from None  # retried in 60 s
    patch.status["observed"] = child.get("data", {})
