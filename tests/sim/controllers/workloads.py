"""Manifests of workloads for the controllers' tests."""

from __future__ import annotations

from typing import Any

JsonDict = dict[str, Any]


def container(name: str = "main", image: str = "nginx:1.27", **extra: Any) -> JsonDict:
    return {"name": name, "image": image, **extra}


def pod_template(labels: dict[str, str], *, restart_policy: str | None = None, **spec: Any) -> JsonDict:
    pod_spec: JsonDict = {"containers": [container()], **spec}
    if restart_policy:
        pod_spec["restartPolicy"] = restart_policy
    return {"metadata": {"labels": labels}, "spec": pod_spec}


def pod(name: str, labels: dict[str, str] | None = None, **spec: Any) -> JsonDict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels or {"app": name}},
        "spec": {"containers": [container()], **spec},
    }


def deployment(name: str, replicas: int = 3, image: str = "nginx:1.27", **spec: Any) -> JsonDict:
    template = pod_template({"app": name})
    template["spec"]["containers"][0]["image"] = image
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}}, "template": template, **spec},
    }


def job(name: str, **spec: Any) -> JsonDict:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {"template": pod_template({"job": name}, restart_policy="Never"), **spec},
    }


def ready(obj: JsonDict | None) -> bool:
    """Whether a pod is Ready."""
    conditions = ((obj or {}).get("status") or {}).get("conditions") or []
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def condition(obj: JsonDict | None, type_: str) -> str | None:
    for cond in ((obj or {}).get("status") or {}).get("conditions") or []:
        if cond["type"] == type_:
            return str(cond["status"])
    return None
