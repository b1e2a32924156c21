"""Correct, and slow to let go: the routes' ConfigMap (not owned: it outlives a restart of the app) is removed
by a sync delete handler that first drains the app's connections for 30 seconds."""

import time

from kube import config, core, ensure, forget

import kopf


@kopf.on.create("webapps")
@kopf.on.update("webapps", field="spec")
@kopf.on.resume("webapps")
def publish(name, namespace, spec, **_):
    ensure(core.create_namespaced_config_map, core.patch_namespaced_config_map, namespace, config(name, spec))


@kopf.on.delete("webapps")
def unpublish(name, namespace, logger, **_):
    time.sleep(30)  # let the clients drain
    forget(core.delete_namespaced_config_map, f"{name}-config", namespace)
    logger.info(f"Unpublished {name}.")
