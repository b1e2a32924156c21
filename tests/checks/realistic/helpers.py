"""The copiers' clients, made at the import (as real operators do): the official client, from the kubeconfig."""

import kubernetes

import kopf

kubernetes.config.load_kube_config()
core = kubernetes.client.CoreV1Api()
apps = kubernetes.client.AppsV1Api()

COPIES = "copies"


def ensure(create, patch, namespace, body):
    """Create the object, or patch it if it is there already (409)."""
    try:
        create(namespace, body)
    except kubernetes.client.ApiException as exc:
        if exc.status != 409:
            raise
        patch(body["metadata"]["name"], namespace, body)


def forget(delete, name, namespace):
    """Delete the object if it is there (404 is fine)."""
    try:
        delete(name, namespace)
    except kubernetes.client.ApiException as exc:
        if exc.status != 404:
            raise


def deployment(name, spec, body):
    """The gadget's own Deployment (its pods run by the simulated controllers), owned by it."""
    labels = {"app": name}
    child = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": f"{name}-app"},
        "spec": {
            "replicas": min(int(spec.get("size", 0) or 0), 2),
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "app", "image": "nginx"}]}},
        },
    }
    kopf.adopt(child, owner=body)
    return child
