"""Correct, with generated names: a timer observes the names of a gadget's Pods into its status (``status.pods``).

Loaded beside ``deployment_owner_ok.py`` (whose Deployment's ReplicaSet makes the Pods, named by the cluster
with a random suffix): the names differ between two correct runs, so the checks learn them as noise.
"""

import kopf
from kopf._cogs.clients import api

SETTINGS = kopf.OperatorSettings()


@kopf.timer("gadgets", interval=60)
async def pods(name, namespace, status, patch, **_):
    found = await api.get(
        f"/api/v1/namespaces/{namespace}/pods", params={"labelSelector": f"app={name}"}, settings=SETTINGS
    )
    alive = [pod for pod in found.get("items", ()) if "deletionTimestamp" not in pod["metadata"]]
    names = sorted(pod["metadata"]["name"] for pod in alive)
    if status.get("pods") != names:
        patch.status["pods"] = names
