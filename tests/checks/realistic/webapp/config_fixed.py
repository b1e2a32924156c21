"""The fixed twin of ``config_bug.py``: the ConfigMap's name is fixed, and "already exists" is taken as done."""

from kube import config, core, ensure

import kopf


@kopf.on.create("webapps")
@kopf.on.update("webapps", field="spec")
@kopf.on.resume("webapps")
def configure(name, namespace, spec, body, **_):
    child = config(name, spec)
    kopf.adopt(child, owner=body)
    ensure(core.create_namespaced_config_map, core.patch_namespaced_config_map, namespace, child)
    return {"config": child["metadata"]["name"]}
