"""An operator whose objects have children: a Deployment and a Service, made with the official kubernetes client.

The handler configures the client from the kubeconfig (``KUBECONFIG`` or ``~/.kube/config``), as when the
operator runs on a developer's machine, and adopts the children (owner references, namespace, labels), so that
they are garbage-collected with their parent. A retry finds the children that an earlier attempt has made (its
response lost, or the operator restarted before the result was stored): a 409 Conflict is no failure.
"""

from typing import Any

import kubernetes

import kopf

PORT = 8080


def children(name: str, image: str) -> tuple[dict[str, Any], dict[str, Any]]:
    labels = {"app.kubernetes.io/name": name}
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "app", "image": image, "ports": [{"containerPort": PORT}]}]},
            },
        },
    }
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "labels": labels},
        "spec": {"selector": labels, "ports": [{"port": 80, "targetPort": PORT}]},
    }
    return deployment, service


@kopf.on.create("kopfexamples")
def create_children(name: str, namespace: str, spec: kopf.Spec, **_: Any) -> dict[str, str]:
    kubernetes.config.load_kube_config()
    deployment, service = children(name, spec.get("image", "nginx:1.27"))
    kopf.adopt([deployment, service])
    apps, core = kubernetes.client.AppsV1Api(), kubernetes.client.CoreV1Api()
    for create, child in ((apps.create_namespaced_deployment, deployment), (core.create_namespaced_service, service)):
        try:
            create(namespace, child)
        except kubernetes.client.ApiException as exc:
            if exc.status != 409:  # 409: made by an earlier attempt whose response was lost, or before a crash
                raise
    return {"deployment": deployment["metadata"]["name"], "service": service["metadata"]["name"]}
