"""BUG (transition): only a new image is passed on to the Deployment; a change of ``replicas`` never reaches it."""

from kube import apps, deployment, ensure

import kopf


@kopf.on.create("webapps")
@kopf.on.resume("webapps")
def deploy(name, namespace, spec, body, **_):
    child = deployment(name, spec)
    kopf.adopt(child, owner=body)
    ensure(apps.create_namespaced_deployment, apps.patch_namespaced_deployment, namespace, child)


@kopf.on.field("webapps", field="spec.image")
def upgrade(name, namespace, new, **_):
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "web", "image": new}]}}}}
    apps.patch_namespaced_deployment(name, namespace, patch)
