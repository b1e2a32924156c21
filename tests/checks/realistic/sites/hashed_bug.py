"""BUG (transition): the pods' configuration digest is taken from the ConfigMap as it is in the cluster before
this handler updates it: after a change of the settings, the pods carry the old settings' digest and are never
rolled (and a new site's pods carry the digest of no settings at all)."""

import kubernetes
from sitekit import apps, core, deployment, digest, ensure, service, settings

import kopf


def current_settings(name, namespace):
    try:
        return core.read_namespaced_config_map(f"{name}-settings", namespace).data
    except kubernetes.client.ApiException as exc:
        if exc.status != 404:
            raise
        return {}


@kopf.on.create("sites")
@kopf.on.update("sites", field="spec")
@kopf.on.resume("sites")
def reconcile(name, namespace, spec, body, **_):
    config_hash = digest(current_settings(name, namespace))
    children = [
        (apps.create_namespaced_deployment, apps.patch_namespaced_deployment, deployment(name, spec, config_hash)),
        (core.create_namespaced_service, core.patch_namespaced_service, service(name, name)),
        (core.create_namespaced_config_map, core.patch_namespaced_config_map, settings(name, spec)),
    ]
    for create, patch, child in children:
        kopf.adopt(child, owner=body)
        ensure(create, patch, namespace, child)
