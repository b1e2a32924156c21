"""A connection to any cluster from a kubeconfig, for ``kopf-sim record``.

The kubeconfig is read by the official ``kubernetes`` client's loader (the ``full-auth`` extra),
which knows every way of logging in that kubectl knows: tokens, client certificates, exec
plugins (EKS, GKE, AKS, OIDC helpers) and their renewals.
"""

from __future__ import annotations

import dataclasses
import os
import ssl
from collections.abc import Mapping
from typing import Any

from kopf_sim.recording.apiclient import HttpApi

__all__ = ["ClusterConnection", "CredentialsError", "connect"]


class CredentialsError(Exception):
    """The kubeconfig cannot be used: what is wrong, in words for the user."""


@dataclasses.dataclass(frozen=True)
class ClusterConnection:
    server: str
    context: str
    api: HttpApi


def connect(
    kubeconfig: str | os.PathLike[str] | None = None, context: str | None = None, *, user_agent: str = "kopf-sim"
) -> ClusterConnection:
    """The API of the kubeconfig's context (the current one by default; ``KUBECONFIG`` or ``~/.kube/config``)."""
    try:
        import kubernetes  # the full-auth extra
    except ImportError:
        raise CredentialsError(
            "Reading kubeconfigs needs the official client: pip install 'kopf[full-auth]'."
        ) from None
    path = os.fspath(kubeconfig) if kubeconfig is not None else None
    configuration = kubernetes.client.Configuration()
    try:
        kubernetes.config.load_kube_config(
            config_file=path, context=context, client_configuration=configuration, persist_config=False
        )  # type: ignore[no-untyped-call]
        _, active = kubernetes.config.list_kube_config_contexts(config_file=path)  # type: ignore[no-untyped-call]
    except (kubernetes.config.ConfigException, OSError, ValueError, TypeError, KeyError) as exc:
        where = path or os.environ.get("KUBECONFIG") or "~/.kube/config"
        raise CredentialsError(f"Cannot use the kubeconfig {where}: {exc}") from None
    name = context or str((active or {}).get("name") or "")
    api = HttpApi(
        configuration.host,
        ssl_context=_ssl_context(configuration),
        headers=lambda: _auth_headers(configuration),
        user_agent=user_agent,
    )
    return ClusterConnection(server=str(configuration.host), context=name, api=api)


def _ssl_context(configuration: Any) -> ssl.SSLContext | None:
    if not str(configuration.host).startswith("https:"):
        return None
    context = ssl.create_default_context(cafile=configuration.ssl_ca_cert or None)
    if not configuration.verify_ssl:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if configuration.cert_file:
        context.load_cert_chain(configuration.cert_file, configuration.key_file or None)
    return context


def _auth_headers(configuration: Any) -> Mapping[str, str]:
    """The authorization header, asked anew each time: the loader renews tokens that expire."""
    settings = configuration.auth_settings() or {}
    return {
        str(entry["key"]): str(entry["value"])
        for entry in settings.values()
        if isinstance(entry, dict) and entry.get("in") == "header" and entry.get("value")
    }
