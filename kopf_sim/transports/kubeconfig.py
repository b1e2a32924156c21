"""Kubeconfig files pointing kubectl or any Kubernetes client to one cluster (a served simulator, or any other).

One writer for the project: ``kopf-sim serve`` writes its own (a token, its CA), and pytest_kopf writes
one for the subprocesses of a test (in real mode: the kubeconfig context's credentials, inline).
"""

from __future__ import annotations

import base64
import os
from typing import Any, Required, TypedDict, Unpack

import yaml

__all__ = ["KubeconfigFields", "kubeconfig_dict", "write_kubeconfig"]


class KubeconfigFields(TypedDict, total=False):
    """What a one-context kubeconfig says: the server and its TLS, the credentials, the names."""

    server: Required[str]
    ca_pem: bytes | None
    insecure: bool
    token: str | None
    username: str | None
    password: str | None
    client_certificate_pem: bytes | None
    client_key_pem: bytes | None
    namespace: str | None
    cluster_name: str
    context_name: str
    user_name: str


def kubeconfig_dict(**fields: Unpack[KubeconfigFields]) -> dict[str, Any]:
    """A kubeconfig with one cluster, one user, and one context, which is the current one (named kopf-sim)."""
    cluster: dict[str, Any] = {"server": fields["server"]}
    if fields.get("ca_pem") is not None:
        cluster["certificate-authority-data"] = _b64(fields["ca_pem"])
    if fields.get("insecure"):
        cluster["insecure-skip-tls-verify"] = True
    user: dict[str, Any] = {}
    if fields.get("token") is not None:
        user["token"] = fields["token"]
    if fields.get("username") is not None or fields.get("password") is not None:
        user["username"], user["password"] = fields.get("username") or "", fields.get("password") or ""
    if fields.get("client_certificate_pem") is not None:
        user["client-certificate-data"] = _b64(fields["client_certificate_pem"])
    if fields.get("client_key_pem") is not None:
        user["client-key-data"] = _b64(fields["client_key_pem"])
    cluster_name = fields.get("cluster_name", "kopf-sim")
    context_name = fields.get("context_name", "kopf-sim")
    user_name = fields.get("user_name", "kopf-sim")
    context: dict[str, Any] = {"cluster": cluster_name, "user": user_name}
    if fields.get("namespace") is not None:
        context["namespace"] = fields["namespace"]
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "preferences": {},
        "clusters": [{"name": cluster_name, "cluster": cluster}],
        "users": [{"name": user_name, "user": user}],
        "contexts": [{"name": context_name, "context": context}],
        "current-context": context_name,
    }


def write_kubeconfig(path: str | os.PathLike[str], **fields: Unpack[KubeconfigFields]) -> None:
    """Write the kubeconfig readable by the owner only, since it contains the credentials."""
    text = yaml.safe_dump(kubeconfig_dict(**fields), sort_keys=False)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        os.fchmod(f.fileno(), 0o600)  # also for pre-existing files, which keep their mode on open
        f.write(text)


def _b64(data: bytes | None) -> str:
    return base64.b64encode(data or b"").decode("ascii")
