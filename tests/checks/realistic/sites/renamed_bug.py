"""BUG (transition): as the correct twin, but a rename makes the new Service and leaves the old one serving the
site under its old name until the site is deleted (it is owned: only then collected)."""

from sitekit import core, ensure, forget, service

import kopf


def managed(meta, **_):
    return meta.get("labels", {}).get("hosting.example/unmanaged") != "true"


@kopf.on.create("sites", when=managed)
@kopf.on.resume("sites", when=managed)
@kopf.on.field("sites", field="spec.hostname", when=managed)
@kopf.on.field("sites", field="spec.debug", when=managed)
def reconcile(name, namespace, body, spec, **_):
    child = service(name, f"{name}-{spec['hostname']}")
    kopf.adopt(child, owner=body)
    ensure(core.create_namespaced_service, core.patch_namespaced_service, namespace, child)
    dump = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"{name}-debug"}, "data": {"level": "debug"}}
    if spec.get("debug"):
        kopf.adopt(dump, owner=body)
        ensure(core.create_namespaced_config_map, core.patch_namespaced_config_map, namespace, dump)
    else:
        forget(core.delete_namespaced_config_map, f"{name}-debug", namespace)
