"""BUG (withheld-events): a raw-event handler that acts on ``ADDED`` and ``MODIFIED`` only, never on ``None``.

Kopf gives the objects of a listing with the type ``None``: at its start, and when it lists again after its watch
expired (a broken stream resumed too late: ``410 Gone``, routine on a real cluster). A gadget created or changed
meanwhile comes so, and its child is never made or updated.
"""

import kopf
from kopf._cogs.clients import api, errors

SETTINGS = kopf.OperatorSettings()


async def mirror(name, namespace, spec, body):
    child = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": f"{name}-data"},
        "data": {"size": str(spec.get("size", 0))},
    }
    kopf.append_owner_reference(child, owner=body)
    try:
        await api.post(f"/api/v1/namespaces/{namespace}/configmaps", payload=child, settings=SETTINGS)
    except errors.APIConflictError:
        await api.patch(
            f"/api/v1/namespaces/{namespace}/configmaps/{name}-data",
            payload={"metadata": {"ownerReferences": child["metadata"]["ownerReferences"]}, "data": child["data"]},
            settings=SETTINGS,
        )


@kopf.on.event("gadgets")
async def watch_fn(type, name, namespace, spec, body, **_):
    if type in ("ADDED", "MODIFIED") and not body["metadata"].get("deletionTimestamp"):
        await mirror(name, namespace, spec, body)
