"""The fixed twin of ``scale_bug.py``: every change of the spec is passed on to the Deployment."""

from kube import apps, deployment, ensure

import kopf


@kopf.on.create("webapps")
@kopf.on.update("webapps", field="spec")
@kopf.on.resume("webapps")
def deploy(name, namespace, spec, body, **_):
    child = deployment(name, spec)
    kopf.adopt(child, owner=body)
    ensure(apps.create_namespaced_deployment, apps.patch_namespaced_deployment, namespace, child)
