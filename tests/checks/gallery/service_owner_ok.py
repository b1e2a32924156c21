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
        await api.patch(
            f"{path}/{name}",
            payload={
                "metadata": {"ownerReferences": wanted["metadata"]["ownerReferences"]},
                "spec": {"ports": wanted["spec"]["ports"]},
            },
            settings=SETTINGS,
        )
