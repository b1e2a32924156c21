"""Kubeconfig files pointing kubectl or any Kubernetes client to a served simulator."""
from __future__ import annotations

import base64
import os
from typing import Any

import yaml

__all__ = ["kubeconfig_dict", "write_kubeconfig"]


def kubeconfig_dict(
    *,
    server: str,
    token: str | None = None,
    ca_pem: bytes | None = None,
    cluster_name: str = "kopf-sim",
    context_name: str = "kopf-sim",
    user_name: str = "kopf-sim",
    namespace: str | None = None,
) -> dict[str, Any]:
    """A kubeconfig with one cluster, one user, and one context, which is the current one."""
    cluster: dict[str, Any] = {"server": server}
    if ca_pem is not None:
        cluster["certificate-authority-data"] = base64.b64encode(ca_pem).decode("ascii")
    user: dict[str, Any] = {}
    if token is not None:
        user["token"] = token
    context: dict[str, Any] = {"cluster": cluster_name, "user": user_name}
    if namespace is not None:
        context["namespace"] = namespace
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "preferences": {},
        "clusters": [{"name": cluster_name, "cluster": cluster}],
        "users": [{"name": user_name, "user": user}],
        "contexts": [{"name": context_name, "context": context}],
        "current-context": context_name,
    }


def write_kubeconfig(
    path: str | os.PathLike[str],
    *,
    server: str,
    token: str | None = None,
    ca_pem: bytes | None = None,
    cluster_name: str = "kopf-sim",
    context_name: str = "kopf-sim",
    user_name: str = "kopf-sim",
    namespace: str | None = None,
) -> None:
    """Write the kubeconfig readable by the owner only, since it contains the token."""
    config = kubeconfig_dict(
        server=server,
        token=token,
        ca_pem=ca_pem,
        cluster_name=cluster_name,
        context_name=context_name,
        user_name=user_name,
        namespace=namespace,
    )
    text = yaml.safe_dump(config, sort_keys=False)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        os.fchmod(f.fileno(), 0o600)  # also for pre-existing files, which keep their mode on open
        f.write(text)
