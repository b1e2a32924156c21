"""What these tests share."""

from typing import Any

from kopf_sim.writes.applying import (
    decode_fields,
    format_path,
    server_side_apply,
    track_update,
)

DEPLOY = "apps/v1/Deployment"


CM = "v1/ConfigMap"


def _deployment(**spec: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "ns"}}
    if spec:
        obj["spec"] = spec
    return obj


def _configmap(data: dict[str, Any] | None = None, **metadata: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "cm", "namespace": "ns", **metadata},
    }
    if data is not None:
        obj["data"] = data
    return obj


def _apply(
    live: dict[str, Any] | None,
    applied: dict[str, Any],
    manager: str = "kubectl",
    *,
    force: bool = False,
    kind_key: str | None = DEPLOY,
    api_version: str = "apps/v1",
    now: str = "2024-01-01T00:00:00Z",
) -> dict[str, Any]:
    return server_side_apply(
        live, applied, manager=manager, force=force, kind_key=kind_key, api_version=api_version, now=now
    )


def _update(
    old: dict[str, Any] | None,
    new: dict[str, Any],
    manager: str = "ctl",
    *,
    kind_key: str | None = DEPLOY,
    api_version: str = "apps/v1",
    now: str = "2024-01-02T00:00:00Z",
    subresource: str | None = None,
) -> dict[str, Any]:
    return track_update(
        old, new, manager=manager, kind_key=kind_key, api_version=api_version, now=now, subresource=subresource
    )


def _managers(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {entry["manager"]: entry for entry in obj["metadata"].get("managedFields", [])}


def _fields(obj: dict[str, Any], manager: str) -> set[str]:
    """The owned paths of a manager, each rendered as the apiserver prints them."""
    return {format_path(path) for path in decode_fields(_managers(obj)[manager]["fieldsV1"])}


def _containers(*containers: dict[str, Any]) -> dict[str, Any]:
    return _deployment(template={"spec": {"containers": list(containers)}})


def _live_containers(obj: dict[str, Any]) -> list[dict[str, Any]]:
    containers: list[dict[str, Any]] = obj["spec"]["template"]["spec"]["containers"]
    return containers
