"""The web apps' operators' shared helpers: the official client's APIs, and create-or-update of children."""

import kubernetes

kubernetes.config.load_kube_config()
core = kubernetes.client.CoreV1Api()
apps = kubernetes.client.AppsV1Api()
custom = kubernetes.client.CustomObjectsApi()

#: Lists (containers, ports) replaced whole: a strategic merge patch would add new ports to the old ones.
MERGE_PATCH = "application/merge-patch+json"


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


def deployment(name, spec):
    """The web app's Deployment: its image, replicas and port from the spec."""
    labels = {"app": name}
    container = {
        "name": "web",
        "image": spec["image"],
        "ports": [{"name": "http", "containerPort": spec.get("port", 8080)}],
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "replicas": spec.get("replicas", 1),
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": [container]}},
        },
    }


def service(name, spec):
    """The web app's Service: its port from the spec."""
    port = spec.get("port", 8080)
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name},
        "spec": {"selector": {"app": name}, "ports": [{"name": f"http-{port}", "port": port, "targetPort": port}]},
    }


def config(name, spec):
    """The web app's settings as a ConfigMap."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": f"{name}-config"},
        "data": {"greeting": spec.get("greeting", "hello"), "port": str(spec.get("port", 8080))},
    }
