"""A Typesense operator as such operators are written: a namespace per cluster, its objects via the official client.

Each (cluster-scoped) TypesenseCluster gets a namespace of its own with the nodes' ConfigMap, a headless Service
for the peers, a Service for the clients and a StatefulSet, all made and kept up to date from sync handlers with
the official ``kubernetes`` client (its objects as templates rendered by a sibling module); the namespace goes
with the cluster. A crash halfway is redone by the resume handler (409s are patched over).
"""

import kubernetes
from resources import namespace_of, render

import kopf


@kopf.on.startup()
def configure(**_):
    kubernetes.config.load_kube_config()


def _apis():
    return kubernetes.client.CoreV1Api(), kubernetes.client.AppsV1Api()


#: Lists (ports, containers) replaced whole: a strategic merge patch would add the new ports to the old ones.
MERGE_PATCH = "application/merge-patch+json"


def _ensure(create, patch, name, *args, body):
    """Create the object, or bring it up to date if it is there already."""
    try:
        create(*args, body)
    except kubernetes.client.ApiException as exc:
        if exc.status != 409:
            raise
        patch(name, *args, body, _content_type=MERGE_PATCH)


@kopf.on.create("typesenseclusters")
@kopf.on.update("typesenseclusters", field="spec")
@kopf.on.resume("typesenseclusters")
def reconcile(name, spec, logger, **_):
    core, apps = _apis()
    objects = render(name, spec)
    namespace = namespace_of(name)
    _ensure(core.create_namespace, core.patch_namespace, namespace, body=objects["namespace"])
    _ensure(
        core.create_namespaced_config_map,
        core.patch_namespaced_config_map,
        f"{name}-nodes",
        namespace,
        body=objects["configmap"],
    )
    for service in (objects["peers"], objects["service"]):
        _ensure(
            core.create_namespaced_service,
            core.patch_namespaced_service,
            service["metadata"]["name"],
            namespace,
            body=service,
        )
    statefulset = objects["statefulset"]
    try:
        apps.create_namespaced_stateful_set(namespace, statefulset)
    except kubernetes.client.ApiException as exc:
        if exc.status != 409:
            raise
        # The claims' templates cannot change (the apiserver refuses it); the rest is brought up to date.
        updatable = {key: value for key, value in statefulset["spec"].items() if key != "volumeClaimTemplates"}
        apps.patch_namespaced_stateful_set(name, namespace, {"spec": updatable}, _content_type=MERGE_PATCH)
    logger.info(f"Typesense cluster {name} has {spec['replicas']} node(s) in {namespace}.")
    return {"namespace": namespace, "nodes": objects["configmap"]["data"]["nodes"]}


@kopf.on.delete("typesenseclusters")
def remove(name, logger, **_):
    core, apps = _apis()
    namespace = namespace_of(name)
    deletions = [
        (apps.delete_namespaced_stateful_set, name),
        (core.delete_namespaced_service, name),
        (core.delete_namespaced_service, f"{name}-peers"),
        (core.delete_namespaced_config_map, f"{name}-nodes"),
    ]
    for delete, child in deletions:
        try:
            delete(child, namespace)
        except kubernetes.client.ApiException as exc:
            if exc.status != 404:
                raise
    try:
        core.delete_namespace(namespace)
    except kubernetes.client.ApiException as exc:
        if exc.status != 404:
            raise
    logger.info(f"Typesense cluster {name} is gone with {namespace}.")
