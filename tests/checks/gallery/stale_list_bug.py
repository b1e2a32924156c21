"""BUG (stale-reads): the child is found by listing: a list served from a lagging cache misses the child just made.

Each reconciliation lists the gadget's children by label and makes one (with a generated name) when the list
is empty. A list that does not show the child made a moment ago yet makes a second one, with the new data
while the old one keeps the old data.
"""

import kopf
from kopf._cogs.clients import api

SETTINGS = kopf.OperatorSettings()


@kopf.on.create("gadgets")
@kopf.on.update("gadgets")
async def reconcile(name, namespace, spec, body, **_):
    url = f"/api/v1/namespaces/{namespace}/configmaps"
    data = {"size": str(spec.get("size", 0))}
    listing = await api.get(url, params={"labelSelector": f"gadget={name}"}, settings=SETTINGS)
    children = listing["items"]
    if not children:
        child = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": f"{name}-"}, "data": data}
        kopf.append_owner_reference(child, owner=body)
        kopf.label(child, {"gadget": name})
        await api.post(url, payload=child, settings=SETTINGS)
    else:
        await api.patch(f"{url}/{children[0]['metadata']['name']}", payload={"data": data}, settings=SETTINGS)
