"""BUG (withheld-events): edge-triggered: the child is made on ADDED and removed on DELETED events only.

When the events come late and coalesced (as after a relist), a deletion followed by a re-creation is
never seen as such: the old object's child stays, with the old object's data.
"""

import contextlib

import kopf
from kopf._cogs.clients import api, errors

SETTINGS = kopf.OperatorSettings()


@kopf.on.event("gadgets")
async def watch_fn(type, name, namespace, spec, **_):
    url = f"/api/v1/namespaces/{namespace}/configmaps"
    if type in ("ADDED", None):
        child = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": f"{name}-data"},
            "data": {"size": str(spec.get("size", 0))},
        }
        with contextlib.suppress(errors.APIConflictError):  # it is there already
            await api.post(url, payload=child, settings=SETTINGS)
    elif type == "DELETED":
        with contextlib.suppress(errors.APINotFoundError):
            await api.delete(f"{url}/{name}-data", settings=SETTINGS)
