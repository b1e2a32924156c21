"""The sites' operators' shared helpers: the official client's APIs, children's bodies, create-or-update."""

import datetime
import hashlib
import json

import kubernetes

kubernetes.config.load_kube_config()
core = kubernetes.client.CoreV1Api()
apps = kubernetes.client.AppsV1Api()
custom = kubernetes.client.CustomObjectsApi()

#: Lists (containers, ports) replaced whole: a strategic merge patch would keep the old items next to the new.
MERGE_PATCH = "application/merge-patch+json"
HASH_ANNOTATION = "hosting.example/config-hash"


def ensure(create, patch, namespace, body):
    """Create the child, or bring it to ``body`` if it is there already (409)."""
    try:
        create(namespace, body)
    except kubernetes.client.ApiException as exc:
        if exc.status != 409:
            raise
        patch(body["metadata"]["name"], namespace, body, _content_type=MERGE_PATCH)


def forget(delete, name, namespace):
    """Delete the child if it is there (404: gone already)."""
    try:
        delete(name, namespace)
    except kubernetes.client.ApiException as exc:
        if exc.status != 404:
            raise


def settings(name, spec):
    """The site's settings as a ConfigMap, as the web server reads them."""
    given = spec.get("settings") or {}
    data = {"mode": given.get("mode", "safe"), "workers": str(given.get("workers", 1))}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"{name}-settings"}, "data": data}


def digest(data):
    """A short digest of a ConfigMap's data: put into the pods' template, a change of it rolls the pods."""
    return hashlib.sha256(json.dumps(data or {}, sort_keys=True).encode()).hexdigest()[:16]


def deployment(name, spec, config_hash):
    """The site's Deployment, its pods annotated with their configuration's digest."""
    labels = {"site": name}
    container = {"name": "web", "image": spec["image"], "ports": [{"name": "http", "containerPort": 8080}]}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "replicas": spec.get("replicas", 1),
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels, "annotations": {HASH_ANNOTATION: config_hash}},
                "spec": {"containers": [container]},
            },
        },
    }


def service(name, service_name):
    """A Service in front of the site's pods."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": service_name, "labels": {"site": name}},
        "spec": {"selector": {"site": name}, "ports": [{"name": "http", "port": 80, "targetPort": 8080}]},
    }


def condition(kind, state, reason, previous):
    """A status condition; its ``lastTransitionTime`` is kept while its status stays what it was."""
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    kept = previous.get("status") == state and previous.get("lastTransitionTime")
    return {"type": kind, "status": state, "reason": reason, "lastTransitionTime": kept or now}


def read_deployment(name, namespace):
    """The site's Deployment, or None if there is none (yet)."""
    try:
        return apps.read_namespaced_deployment(name, namespace)
    except kubernetes.client.ApiException as exc:
        if exc.status != 404:
            raise
        return None


def report_conditions(name, namespace, conditions):
    custom.patch_namespaced_custom_object_status(
        "hosting.example", "v1", namespace, "sites", name, {"status": {"conditions": conditions}}
    )
