"""BUG (crash-restart): as ``copier.py``, but the copy gets a generated name: a re-run after a crash makes two."""

from helpers import COPIES, apps, core, deployment, ensure, forget

import kopf


@kopf.on.create("gadgets")
async def create(name, namespace, spec, body, **_):
    copy = {"metadata": {"generateName": f"{name}-copy-", "labels": {"copy-of": name}}, "stringData": {"size": "1"}}
    core.create_namespaced_secret(COPIES, copy)
    ensure(apps.create_namespaced_deployment, apps.patch_namespaced_deployment, namespace, deployment(name, spec, body))
    return "copied"


@kopf.on.update("gadgets")
async def update(name, namespace, spec, body, **_):
    ensure(apps.create_namespaced_deployment, apps.patch_namespaced_deployment, namespace, deployment(name, spec, body))
    return "updated"


@kopf.on.delete("gadgets")
def cleanup(name, **_):
    for copy in core.list_namespaced_secret(COPIES, label_selector=f"copy-of={name}").items:
        forget(core.delete_namespaced_secret, copy.metadata.name, COPIES)
