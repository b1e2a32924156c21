"""BUG (stale-reads): the handlers read the object again and trust that read over the event they were given."""

import kopf
from kopf._cogs.clients import api

SETTINGS = kopf.OperatorSettings()


async def mirror(name, namespace, patch):
    obj = await api.get(f"/apis/checks.example/v1/namespaces/{namespace}/gadgets/{name}", settings=SETTINGS)
    patch.status["mirror"] = {"size": obj["spec"].get("size", 0)}


@kopf.on.create("gadgets")
async def create_fn(name, namespace, patch, **_):
    await mirror(name, namespace, patch)


@kopf.on.update("gadgets")
@kopf.on.resume("gadgets")  # what a crash may have left from a change not marked as handled
async def update_fn(name, namespace, patch, **_):
    await mirror(name, namespace, patch)
