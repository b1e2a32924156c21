"""BUG (cleanup): the settings' ConfigMap is not owned by the app and nothing removes it: it outlives the app."""

from kube import config, core, ensure

import kopf


@kopf.on.create("webapps")
@kopf.on.update("webapps", field="spec")
@kopf.on.resume("webapps")
def configure(name, namespace, spec, **_):
    ensure(core.create_namespaced_config_map, core.patch_namespaced_config_map, namespace, config(name, spec))
