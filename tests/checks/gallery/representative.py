"""A representative operator: create/update/delete handlers, a daemon, a timer, an index; sync & async handlers."""

import contextlib

import kopf
from kopf._cogs.clients import api, errors

SETTINGS = kopf.OperatorSettings()


@kopf.index("gadgets")
def by_mode(name, spec, **_):
    return {spec.get("mode", "none"): name}


async def ensure_child(name, namespace, spec, body):
    child = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": f"{name}-data"},
        "data": {"size": str(spec.get("size", 0)), "mode": str(spec.get("mode", "none"))},
    }
    kopf.append_owner_reference(child, owner=body)  # owned, without the owner's labels
    try:
        await api.post(f"/api/v1/namespaces/{namespace}/configmaps", payload=child, settings=SETTINGS)
    except errors.APIConflictError:
        await api.patch(
            f"/api/v1/namespaces/{namespace}/configmaps/{name}-data", payload={"data": child["data"]}, settings=SETTINGS
        )


@kopf.on.create("gadgets")
async def create_fn(name, namespace, spec, body, patch, **_):
    await ensure_child(name, namespace, spec, body)
    patch.status["size"] = spec.get("size", 0)


@kopf.on.update("gadgets")
async def update_fn(name, namespace, spec, body, **_):
    await ensure_child(name, namespace, spec, body)


@kopf.on.field("gadgets", field="spec.size")
async def size_fn(name, namespace, spec, body, new, patch, **_):
    # The child too: a crash between the creation's handlers and a change of the size before the restart leave
    # only this handler to see the new size (the creation's finished handlers are not called again, and the
    # change is no update: the creation finishes with it). The crash-restart plans found that window.
    await ensure_child(name, namespace, spec, body)
    patch.status["size"] = new or 0


@kopf.on.delete("gadgets")
async def delete_fn(name, namespace, **_):
    with contextlib.suppress(errors.APINotFoundError):
        await api.delete(f"/api/v1/namespaces/{namespace}/configmaps/{name}-data", settings=SETTINGS)


@kopf.daemon("gadgets", cancellation_timeout=5)
async def monitor(stopped, **_):
    while not stopped:
        await stopped.wait(30)


@kopf.timer("gadgets", interval=20)
def peers(spec, by_mode, **_):
    return sorted(by_mode.get(spec.get("mode", "none"), []))
