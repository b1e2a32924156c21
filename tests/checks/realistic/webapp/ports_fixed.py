"""The fixed twin of ``ports_bug.py``: the ports are replaced whole (a JSON merge patch)."""

import kubernetes
from kube import MERGE_PATCH, core, service

import kopf


@kopf.on.create("webapps")
@kopf.on.update("webapps", field="spec.port")
@kopf.on.resume("webapps")
def expose(name, namespace, spec, body, **_):
    child = service(name, spec)
    kopf.adopt(child, owner=body)
    try:
        core.create_namespaced_service(namespace, child)
    except kubernetes.client.ApiException as exc:
        if exc.status != 409:
            raise
        ports = {"spec": {"ports": child["spec"]["ports"]}}
        core.patch_namespaced_service(name, namespace, ports, _content_type=MERGE_PATCH)
