"""BUG (crash-restart): as ``copier.py``, but each copy gets a generated name: a re-run after a crash makes two."""

from helpers import COPIES, apps, core, deployment, ensure, forget

import kopf


@kopf.on.create("gadgets")
@kopf.on.update("gadgets")
async def reconcile(name, namespace, spec, body, **_):
    copy = {"metadata": {"generateName": f"{name}-copy-", "labels": {"copy-of": name}}, "stringData": {"size": "1"}}
    if not core.list_namespaced_secret(COPIES, label_selector=f"copy-of={name}").items:
        core.create_namespaced_secret(COPIES, copy)
    ensure(apps.create_namespaced_deployment, apps.patch_namespaced_deployment, namespace, deployment(name, spec, body))
    return "copied"


@kopf.on.delete("gadgets")
def cleanup(name, **_):
    for copy in core.list_namespaced_secret(COPIES, label_selector=f"copy-of={name}").items:
        forget(core.delete_namespaced_secret, copy.metadata.name, COPIES)
