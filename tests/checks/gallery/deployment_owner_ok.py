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
    except errors.APIConflictError:  # there already: brought to the spec, and made ours (a deleted namesake's)
        existing = await api.get(f"{path}/{name}", settings=SETTINGS)
        if not await still_there(body):
            return  # deleted meanwhile (and maybe made anew): this is not our Deployment to change any more
        # The write names the Deployment read: kopf's client retries it after an API error, and by then the one
        # read may have gone with its owner, and a new one made for a new namesake (not ours to take over).
        metadata = {"uid": existing["metadata"]["uid"], "ownerReferences": wanted["metadata"]["ownerReferences"]}
        await api.patch(f"{path}/{name}", payload={"metadata": metadata, "spec": wanted["spec"]}, settings=SETTINGS)


async def still_there(body):
    """Whether the gadget being handled is still there (not deleted, nor replaced by a namesake)."""
    path = f"/apis/checks.example/v1/namespaces/{body.metadata.namespace}/gadgets/{body.metadata.name}"
    try:
        current = await api.get(path, settings=SETTINGS)
    except errors.APINotFoundError:
        return False
    return current["metadata"]["uid"] == body.metadata.uid and "deletionTimestamp" not in current["metadata"]
