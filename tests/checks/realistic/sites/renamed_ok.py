"""Correct: a Service named after the site's ``hostname`` (the site's others deleted when it is renamed), and a
debug ConfigMap while ``debug`` is on; sites labelled ``hosting.example/unmanaged=true`` are left alone.

One handler does it all from the spec as it is, registered for the creation, each field (``kopf.on.field``;
on a rename, the old Service is deleted by its name: a list may lag behind) and the resuming. Kopf records each
finished handler of a cycle on the object, and the spec it has handled only when all are done: an operator
restarted in the middle of a cycle, with the spec changed meanwhile, runs the handlers left (the last one at
least) with the new spec, and the resuming ones with it for an update; each of them brings all the children to
the spec.
"""

from sitekit import core, ensure, forget, service

import kopf


def managed(meta, **_):
    return meta.get("labels", {}).get("hosting.example/unmanaged") != "true"


@kopf.on.create("sites", when=managed)
@kopf.on.resume("sites", when=managed)
@kopf.on.field("sites", field="spec.hostname", when=managed, param="renamed")
@kopf.on.field("sites", field="spec.debug", when=managed)
def reconcile(name, namespace, body, spec, old, param, **_):
    publish(name, namespace, body, spec["hostname"], {old} if param == "renamed" and old else set())
    dump = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"{name}-debug"}, "data": {"level": "debug"}}
    if spec.get("debug"):
        kopf.adopt(dump, owner=body)
        ensure(core.create_namespaced_config_map, core.patch_namespaced_config_map, namespace, dump)
    else:
        forget(core.delete_namespaced_config_map, f"{name}-debug", namespace)


def publish(name, namespace, body, hostname, renamed):
    """The Service of the hostname; the ones of the old names removed, and any other the site has."""
    wanted = f"{name}-{hostname}"
    child = service(name, wanted)
    kopf.adopt(child, owner=body)
    ensure(core.create_namespaced_service, core.patch_namespaced_service, namespace, child)
    listed = {
        found.metadata.name for found in core.list_namespaced_service(namespace, label_selector=f"site={name}").items
    }
    for other in sorted((listed | {f"{name}-{old}" for old in renamed}) - {wanted}):
        forget(core.delete_namespaced_service, other, namespace)
