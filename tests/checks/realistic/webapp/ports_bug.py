"""BUG (transition, rollback): the Service's port is changed with the client's default patch, a strategic merge
patch, which merges the ports by their number: the old port stays next to the new one."""

import kubernetes
from kube import core, service

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
        core.patch_namespaced_service(name, namespace, {"spec": {"ports": child["spec"]["ports"]}})
