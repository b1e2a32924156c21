"""Correct: a site's settings in a ConfigMap, its Deployment and Service, all owned by the site; the pods carry
the digest of the settings they run with, so that a change of the settings rolls them."""

from sitekit import apps, core, deployment, digest, ensure, service, settings

import kopf


@kopf.on.create("sites")
@kopf.on.update("sites", field="spec")
@kopf.on.resume("sites")
def reconcile(name, namespace, spec, body, **_):
    config = settings(name, spec)
    children = [
        (core.create_namespaced_config_map, core.patch_namespaced_config_map, config),
        (core.create_namespaced_service, core.patch_namespaced_service, service(name, name)),
        (
            apps.create_namespaced_deployment,
            apps.patch_namespaced_deployment,
            deployment(name, spec, digest(config["data"])),
        ),
    ]
    for create, patch, child in children:
        kopf.adopt(child, owner=body)
        ensure(create, patch, namespace, child)
