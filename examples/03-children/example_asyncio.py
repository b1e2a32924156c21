"""The same operator with ``kubernetes_asyncio``: the children are made in the event loop, with no threads.

The children's manifests are YAML templates here (as the framework's documentation writes them).
"""

from typing import Any

import kubernetes_asyncio
import yaml

import kopf

TEMPLATES = """
apiVersion: apps/v1
kind: Deployment
metadata: {{name: "{name}", labels: {{app.kubernetes.io/name: "{name}"}}}}
spec:
  replicas: 1
  selector: {{matchLabels: {{app.kubernetes.io/name: "{name}"}}}}
  template:
    metadata: {{labels: {{app.kubernetes.io/name: "{name}"}}}}
    spec: {{containers: [{{name: app, image: "{image}", ports: [{{containerPort: 8080}}]}}]}}
---
apiVersion: v1
kind: Service
metadata: {{name: "{name}", labels: {{app.kubernetes.io/name: "{name}"}}}}
spec: {{selector: {{app.kubernetes.io/name: "{name}"}}, ports: [{{port: 80, targetPort: 8080}}]}}
"""


@kopf.on.create("kopfexamples")
async def create_children(name: str, namespace: str, spec: kopf.Spec, **_: Any) -> dict[str, str]:
    await kubernetes_asyncio.config.load_kube_config()
    deployment, service = yaml.safe_load_all(TEMPLATES.format(name=name, image=spec.get("image", "nginx:1.27")))
    kopf.adopt([deployment, service])
    async with kubernetes_asyncio.client.ApiClient() as api:
        apps, core = kubernetes_asyncio.client.AppsV1Api(api), kubernetes_asyncio.client.CoreV1Api(api)
        for create, child in (
            (apps.create_namespaced_deployment, deployment),
            (core.create_namespaced_service, service),
        ):
            try:
                await create(namespace, child)
            except kubernetes_asyncio.client.ApiException as exc:
                if exc.status != 409:  # 409: made by an earlier attempt whose response was lost, or before a crash
                    raise
    return {"deployment": deployment["metadata"]["name"], "service": service["metadata"]["name"]}
