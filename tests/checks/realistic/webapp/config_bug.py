"""BUG (crash-restart): the settings' ConfigMap gets a generated name, remembered in the status only after it is
made: a crash in between makes a second one when the handler is retried."""

from kube import config, core

import kopf


@kopf.on.create("webapps")
def configure(name, namespace, spec, body, **_):
    child = config(name, spec)
    child["metadata"] = {"generateName": f"{name}-config-"}
    kopf.adopt(child, owner=body)
    made = core.create_namespaced_config_map(namespace, child)
    return {"config": made.metadata.name}


@kopf.on.update("webapps", field="spec")
def reconfigure(name, namespace, spec, status, **_):
    made = (status.get("configure") or {}).get("config")
    if made:
        core.patch_namespaced_config_map(made, namespace, {"data": config(name, spec)["data"]})
