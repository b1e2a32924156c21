"""An operator whose RBAC comes from its tests: it keeps a ConfigMap of settings for every KopfExample.

Its permissions are whatever kopf needs to serve the resource, plus what the handler does with the official
kubernetes client (create ConfigMaps): ``pytest --kopf-rbac-report`` finds them all, see README.md.
"""

from typing import Any

import kubernetes

import kopf


@kopf.on.create("kopfexamples")
def create_settings(name: str, namespace: str, spec: kopf.Spec, **_: Any) -> dict[str, str]:
    kubernetes.config.load_kube_config()
    configmap = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": f"{name}-settings"},
        "data": {"field": str(spec.get("field", ""))},
    }
    kopf.adopt(configmap)
    kubernetes.client.CoreV1Api().create_namespaced_config_map(namespace, configmap)
    kopf.info(configmap, reason="Settings", message=f"The settings of {name} are kept here.")
    return {"configmap": configmap["metadata"]["name"]}
