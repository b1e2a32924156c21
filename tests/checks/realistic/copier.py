"""A copier as real operators write them: the official client from async and sync handlers, children elsewhere.

Each gadget gets a Secret copied into the namespace ``copies`` and a Deployment of its own (whose pods the
simulated controllers run); the copy is removed with the gadget. The async handler calls the sync client (it
blocks the loop, as in production); the sibling module builds its clients at its import.
"""

from helpers import COPIES, apps, core, deployment, ensure, forget

import kopf


@kopf.on.create("gadgets")
@kopf.on.update("gadgets")
@kopf.on.resume("gadgets")  # after a restart: what a crash has left half-done is redone as the object is now
async def reconcile(name, namespace, spec, body, **_):
    copy = {
        "metadata": {"name": f"{name}-copy", "labels": {"copy-of": name}},
        "stringData": {"size": str(spec.get("size", 0))},
    }
    ensure(core.create_namespaced_secret, core.patch_namespaced_secret, COPIES, copy)
    ensure(apps.create_namespaced_deployment, apps.patch_namespaced_deployment, namespace, deployment(name, spec, body))
    return "copied"


@kopf.on.delete("gadgets")
def cleanup(name, **_):
    forget(core.delete_namespaced_secret, f"{name}-copy", COPIES)
