"""The in-cluster login: the pod's service account files and the API endpoint from the environment."""

import os
from typing import Any

from kopf._cogs.structs.credentials import ConnectionInfo, LoginError
from kopf._core.intents.logins.redaction import registered

__all__ = ["SERVICE_ACCOUNT_DIR", "login_with_service_account", "read_text", "service_account_namespace"]

#: Where the pod's service account is mounted (can be patched, e.g. in tests: read it via this module).
SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


def login_with_service_account(**_: Any) -> ConnectionInfo | None:
    """
    A minimalistic login from the pod's service account (the raw token, CA, and namespace files).

    Returns ``None`` outside of a cluster: if there is no token file or no
    ``KUBERNETES_SERVICE_HOST`` in the environment.
    """
    token_path = os.path.join(SERVICE_ACCOUNT_DIR, "token")
    ca_path = os.path.join(SERVICE_ACCOUNT_DIR, "ca.crt")

    host = os.environ.get("KUBERNETES_SERVICE_HOST", "").strip()
    port = os.environ.get("KUBERNETES_SERVICE_PORT", "").strip() or "443"
    if not host or not os.path.isfile(token_path):
        return None

    try:
        token = read_text(token_path).strip()
        namespace = service_account_namespace()
    except OSError as e:
        raise LoginError(f"Cannot read the service account's files: {e}") from e
    if not token:
        raise LoginError(f"The service account's token is empty: {token_path}")

    return registered(
        ConnectionInfo(
            server=f"https://{_url_host(host)}:{port}",
            ca_path=ca_path if os.path.isfile(ca_path) else None,
            scheme="Bearer",
            token=token,
            default_namespace=namespace,
        )
    )


def service_account_namespace() -> str | None:
    """The namespace of the pod's service account, if mounted."""
    ns_path = os.path.join(SERVICE_ACCOUNT_DIR, "namespace")
    return read_text(ns_path).strip() or None if os.path.isfile(ns_path) else None


def read_text(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host
