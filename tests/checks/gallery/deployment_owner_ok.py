"""Correct, with children the cluster acts upon: a Deployment per gadget (its replicas from the spec), owned by it.

The simulator's controllers make ReplicaSets and Pods of it and stamp their times (``lastTransitionTime``,
``startTime``, ``startedAt``) when they act; those are noise.
"""

import kopf
from kopf._cogs.clients import api, errors

SETTINGS = kopf.OperatorSettings()


@kopf.on.create("gadgets")
@kopf.on.update("gadgets")
@kopf.on.resume("gadgets")
async def deployment(name, namespace, spec, body, **_):
    path = f"/apis/apps/v1/namespaces/{namespace}/deployments"
    labels = {"app": name}
    wanted = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "replicas": spec.get("size", 0),
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "main", "image": f"gadget:{spec.get('mode', 'slow')}"}]},
            },
        },
    }
    kopf.append_owner_reference(wanted, owner=body)
    try:
        await api.post(path, payload=wanted, settings=SETTINGS)
    except errors.APIConflictError:  # there already: brought to the spec
        await api.patch(
            f"{path}/{name}",
            payload={"metadata": {"ownerReferences": wanted["metadata"]["ownerReferences"]}, "spec": wanted["spec"]},
            settings=SETTINGS,
        )
