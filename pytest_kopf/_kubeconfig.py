"""The kubeconfig context of ``--kopf-real``: read by kopf's own login, written by kopf_sim's writer.

Reading is kopf's :func:`~kopf._kits.testing.login_with_kubeconfig_context`: the files of
``KUBECONFIG`` merged as kubectl merges them (or ``~/.kube/config``), the named or the current context,
and every kind of user that an operator can log in with (tokens, client certificates, basic auth, exec
plugins, the tokens of auth providers). The result is kopf's ``ConnectionInfo``: the operator under test
gets it as it is, and the test's own client takes its headers and TLS from it
(:func:`kopf._kits.testing.make_api_session`).
This module only adds the plugin's wording to the errors (which option to use) and writes the context back
as a self-contained kubeconfig for the test's subprocesses (:func:`kopf_sim.transports.kubeconfig.write_kubeconfig`).
"""

from __future__ import annotations

import os
import ssl
from collections.abc import Sequence

from kopf import LoginError
from kopf._kits.testing import KubeconfigLogin, kubeconfig_paths, login_with_kubeconfig_context
from kopf_sim.transports.kubeconfig import write_kubeconfig

from .errors import KopfConfigError

__all__ = ["KubeconfigLogin", "load", "write"]


def load(paths: Sequence[str | os.PathLike[str]] | None = None, *, context: str | None = None) -> KubeconfigLogin:
    """The credentials of the given (or the current) context of the kubeconfig files, or a clear error."""
    files = [os.fspath(path) for path in paths] if paths is not None else kubeconfig_paths()
    try:
        login = login_with_kubeconfig_context(files, context=context)
    except LoginError as exc:
        hint = "; use --kopf-context NAME" if "context" in str(exc) else ""
        raise KopfConfigError(f"{exc} (kubeconfig: {', '.join(files)}){hint}") from None
    if login is None:
        raise KopfConfigError(f"No kubeconfig found (looked at: {', '.join(files)}); set KUBECONFIG.")
    if login.info.server.lower().startswith("https:"):
        try:
            login.info.as_ssl_context()  # the files it names exist, the certificates and keys load
        except (OSError, ssl.SSLError, ValueError) as exc:
            raise KopfConfigError(
                f"The TLS settings of the kubeconfig context {login.context!r} are unusable "
                f"({', '.join(login.paths)}): {exc}"
            ) from None
    return login


def write(path: str | os.PathLike[str], login: KubeconfigLogin, *, namespace: str | None = None) -> None:
    """Write the context as a kubeconfig of its own (credentials inline), readable by the owner only.

    The credentials are those obtained at the login: an exec plugin's token is written as the token
    it was (the subprocesses of a test do not outlive it by much).
    """
    info = login.info
    write_kubeconfig(
        path,
        server=info.server,
        ca_pem=_data(info.ca_data, info.ca_path),
        insecure=bool(info.insecure),
        token=info.token,
        username=info.username,
        password=info.password,
        client_certificate_pem=_data(info.certificate_data, info.certificate_path),
        client_key_pem=_data(info.private_key_data, info.private_key_path),
        namespace=namespace or info.default_namespace,
        cluster_name=login.context,
        context_name=login.context,
        user_name=login.context,
    )


def _data(data: str | bytes | None, path: str | os.PathLike[str] | None) -> bytes | None:
    if data is not None or path is None:
        return data.encode("utf-8") if isinstance(data, str) else data
    try:
        with open(os.path.expanduser(path), "rb") as f:
            return f.read()
    except OSError as exc:
        raise KopfConfigError(f"Cannot read {path} (referred to by the kubeconfig): {exc.strerror or exc}") from None
