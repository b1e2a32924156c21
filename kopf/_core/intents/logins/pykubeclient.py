"""Piggybacking ``pykube-ng``: its service-account config, or else its kubeconfig."""

import importlib
import os
import sys
from collections.abc import Mapping
from typing import Any

from kopf._cogs.structs.credentials import ConnectionInfo, LoginError
from kopf._core.intents.logins import serviceaccount
from kopf._core.intents.logins.kubeconfigs import first_kubeconfig_file
from kopf._core.intents.logins.libraries import LoggerLike, is_installed, login_without_the_library
from kopf._core.intents.logins.redaction import registered

__all__ = ["has_pykube", "login_via_pykube"]


def has_pykube() -> bool:
    """Whether ``pykube-ng`` is installed (it is not imported here)."""
    return is_installed("pykube")


def login_via_pykube(*, logger: LoggerLike, **_: Any) -> ConnectionInfo | None:
    """
    Piggyback ``pykube-ng``: its service-account config, or else its kubeconfig.

    Returns ``None`` if the library is not installed (it is not a dependency of the framework:
    install it explicitly or via ``kopf[full-auth]``). Fails with :class:`LoginError` if the
    library cannot configure itself in either way.

    Pykube imports ``requests`` (~7 MiB, tenths of a second): if nothing has imported pykube yet,
    the same service account or kubeconfig file (the first of ``$KUBECONFIG``, as pykube reads it)
    is read without it whenever the built-in reader understands those credentials fully.
    """
    if "pykube" not in sys.modules and has_pykube():
        paths = [os.path.expanduser(_pykube_kubeconfig_file())]
        info = login_without_the_library(paths, library="pykube", logger=logger)
        if info is not None:
            return info
    return _login_via_imported_pykube(logger=logger)


def _pykube_kubeconfig_file() -> str:
    """Pykube reads only the first file of ``$KUBECONFIG``."""
    return first_kubeconfig_file().split(os.pathsep)[0]


def _login_via_imported_pykube(*, logger: LoggerLike) -> ConnectionInfo | None:
    try:
        pykube = importlib.import_module("pykube")
    except ImportError:
        logger.warning(
            "pykube-ng is not installed: cannot log in via it. "
            "Install it (e.g. kopf[full-auth]) or use another login handler."
        )
        return None

    try:
        config = pykube.KubeConfig.from_service_account(path=serviceaccount.SERVICE_ACCOUNT_DIR)
        logger.debug("Pykube is configured in-cluster with a service account.")
    except (FileNotFoundError, OSError) as e1:
        try:
            config = pykube.KubeConfig.from_file(_pykube_kubeconfig_file())
            logger.debug("Pykube is configured via kubeconfig.")
        except Exception as e2:
            raise LoginError(
                f"Cannot authenticate pykube: neither in-cluster ({e1}), nor via kubeconfig ({e2})."
            ) from e2

    cluster: Mapping[str, Any] = config.cluster or {}
    user: Mapping[str, Any] = config.user or {}
    token = user.get("token") or None
    insecure = cluster.get("insecure-skip-tls-verify")
    return registered(
        ConnectionInfo(
            server=str(cluster.get("server")),
            ca_path=_pykube_filename(cluster.get("certificate-authority")),
            insecure=bool(insecure) if insecure is not None else None,
            username=user.get("username") or None,
            password=user.get("password") or None,
            scheme="Bearer" if token else None,
            token=str(token) if token else None,
            certificate_path=_pykube_filename(user.get("client-certificate")),
            private_key_path=_pykube_filename(user.get("client-key")),
            default_namespace=getattr(config, "namespace", None) or None,
            proxy_url=str(cluster["proxy-url"]) if cluster.get("proxy-url") else None,
        )
    )


def _pykube_filename(value: Any) -> str | None:
    """Pykube's files-or-data values provide a file name (the data is put into a temporary file)."""
    if value is None:
        return None
    if isinstance(value, str | os.PathLike):
        return os.fspath(value)
    filename = getattr(value, "filename", None)
    return str(filename()) if callable(filename) else None
