"""Correct, with a child whose fields the cluster allocates: a NodePort Service per gadget (its cluster IP and its
node port allocated by the cluster, at random: noise)."""

import kopf
from kopf._cogs.clients import api, errors

SETTINGS = kopf.OperatorSettings()


@kopf.on.create("gadgets")
@kopf.on.update("gadgets")
@kopf.on.resume("gadgets")
async def service(name, namespace, spec, body, **_):
    path = f"/api/v1/namespaces/{namespace}/services"
    port = 8000 + spec.get("size", 0)
    wanted = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name},
        "spec": {
            "type": "NodePort",
            "selector": {"app": name},
            "ports": [{"name": "http", "port": port, "targetPort": port}],
        },
    }
    kopf.append_owner_reference(wanted, owner=body)
    try:
        await api.post(path, payload=wanted, settings=SETTINGS)
    except errors.APIConflictError:  # there already: its ports brought to the spec (the allocated IP is kept)
        existing = await api.get(f"{path}/{name}", settings=SETTINGS)
        if not await still_there(body):
            return  # deleted meanwhile (and maybe made anew): this is not our Service to change any more
        # The write names the Service read: kopf's client retries it after an API error, and by then the one read
        # may have gone with its owner, and a new one made for a new namesake (not ours to take over).
        metadata = {"uid": existing["metadata"]["uid"], "ownerReferences": wanted["metadata"]["ownerReferences"]}
        payload = {"metadata": metadata, "spec": {"ports": wanted["spec"]["ports"]}}
        await api.patch(f"{path}/{name}", payload=payload, settings=SETTINGS)


async def still_there(body):
    """Whether the gadget being handled is still there (not deleted, nor replaced by a namesake)."""
    path = f"/apis/checks.example/v1/namespaces/{body.metadata.namespace}/gadgets/{body.metadata.name}"
    try:
        current = await api.get(path, settings=SETTINGS)
    except errors.APINotFoundError:
        return False
    return current["metadata"]["uid"] == body.metadata.uid and "deletionTimestamp" not in current["metadata"]
