"""The login from a kubeconfig context: its cluster, its user's credentials (token, certificates, exec plugins)."""

import dataclasses
import datetime
import os
from collections.abc import Mapping, Sequence
from typing import Any

from kopf._cogs.structs.credentials import ConnectionInfo, LoginError
from kopf._core.intents.logins.execplugins import run_exec_plugin
from kopf._core.intents.logins.kubeconfigs import (
    KubeconfigEntry,
    MergedKubeconfig,
    kubeconfig_paths,
    load_kubeconfig,
    parse_timestamp,
)
from kopf._core.intents.logins.redaction import register_connection_secrets
from kopf._core.intents.logins.serviceaccount import read_text

__all__ = ["KubeconfigLogin", "login_with_kubeconfig", "login_with_kubeconfig_context"]


@dataclasses.dataclass(frozen=True)
class KubeconfigLogin:
    """The credentials of a kubeconfig's context, with the context's name and the files they come from."""

    context: str
    paths: tuple[str, ...]
    info: ConnectionInfo


def login_with_kubeconfig(**_: Any) -> ConnectionInfo | None:
    """
    A minimalistic login from the current context of the kubeconfig files.

    The files are ``$KUBECONFIG`` (several paths are merged as kubectl does it: the first
    file that defines a name or the current context wins), or ``~/.kube/config``.
    Supported: the server & its CA (a file or the data), TLS verification skipping,
    the tokens (inline or in a file), basic auth, the client certificates & keys
    (files or data), the context's namespace, the tokens of the legacy auth providers
    (as they are), and the ``exec`` credential plugins (run synchronously).

    Returns ``None`` if there are no kubeconfig files; fails with :class:`LoginError`
    if they exist but are unusable.
    """
    login = login_with_kubeconfig_context()
    return login.info if login is not None else None


def login_with_kubeconfig_context(
    paths: Sequence[str | os.PathLike[str]] | None = None,
    *,
    context: str | None = None,
) -> KubeconfigLogin | None:
    """
    The same login as :func:`login_with_kubeconfig`, from the given files and context if any.

    For the tools that pick a context (``--context NAME``) or files of their own; the defaults
    are ``$KUBECONFIG`` (or ``~/.kube/config``) and the current context. Returns ``None`` if none
    of the files exists.
    """
    files = [os.path.expanduser(os.fspath(path)) for path in paths] if paths is not None else kubeconfig_paths()
    config, found = load_kubeconfig(files)
    if not found:
        return None

    context_name = context or config.current_context
    if not context_name:
        raise LoginError("The kubeconfig has no current context.")
    context_entry = config.contexts.get(context_name)
    if context_entry is None:
        known = ", ".join(sorted(config.contexts)) or "none"
        which = "context" if context else "current context"
        raise LoginError(f"The kubeconfig's {which} {context_name!r} is not defined (known: {known}).")
    return KubeconfigLogin(
        context=context_name, paths=found, info=_context_credentials(config, context_name, context_entry)
    )


@dataclasses.dataclass
class _UserCredentials:
    """What a kubeconfig's user authenticates with (nothing for the anonymous access)."""

    token: str | None = None
    username: str | None = None
    password: str | None = None
    certificate_path: str | None = None
    certificate_data: bytes | None = None
    private_key_path: str | None = None
    private_key_data: bytes | None = None
    expiration: datetime.datetime | None = None


def _context_credentials(config: MergedKubeconfig, context_name: str, context: KubeconfigEntry) -> ConnectionInfo:
    cluster = _context_cluster(config, context_name, context)
    user_name = context.data.get("user")
    user = _context_user(config, context_name, str(user_name)) if user_name else None  # none: anonymous
    creds = _user_credentials(user, str(user_name), cluster) if user is not None else _UserCredentials()
    insecure = cluster.data.get("insecure-skip-tls-verify")
    info = ConnectionInfo(
        server=str(cluster.data["server"]),
        ca_path=cluster.path("certificate-authority"),
        ca_data=cluster.b64data("certificate-authority-data"),
        insecure=bool(insecure) if insecure is not None else None,
        username=str(creds.username) if creds.username is not None else None,
        password=str(creds.password) if creds.password is not None else None,
        scheme="Bearer" if creds.token else None,
        token=str(creds.token) if creds.token else None,
        certificate_path=creds.certificate_path,
        certificate_data=creds.certificate_data,
        private_key_path=creds.private_key_path,
        private_key_data=creds.private_key_data,
        default_namespace=str(context.data["namespace"]) if context.data.get("namespace") else None,
        expiration=creds.expiration,
        proxy_url=str(cluster.data["proxy-url"]) if cluster.data.get("proxy-url") else None,
    )
    register_connection_secrets(info)
    return info


def _context_cluster(config: MergedKubeconfig, context_name: str, context: KubeconfigEntry) -> KubeconfigEntry:
    cluster_name = context.data.get("cluster")
    cluster = config.clusters.get(str(cluster_name)) if cluster_name else None
    if cluster is None:
        raise LoginError(f"The kubeconfig's cluster {cluster_name!r} of context {context_name!r} is not defined.")
    if not cluster.data.get("server"):
        raise LoginError(f"The kubeconfig's cluster {cluster_name!r} has no server.")
    return cluster


def _context_user(config: MergedKubeconfig, context_name: str, user_name: str) -> KubeconfigEntry:
    user = config.users.get(user_name)
    if user is None:
        raise LoginError(f"The kubeconfig's user {user_name!r} of context {context_name!r} is not defined.")
    return user


def _user_credentials(user: KubeconfigEntry, user_name: str, cluster: KubeconfigEntry) -> _UserCredentials:
    """The user's own credentials, then a legacy auth provider's token, then an exec plugin's results over them."""
    creds = _UserCredentials(
        token=user.data.get("token") or _token_file(user),
        username=user.data.get("username") or None,
        password=user.data.get("password") or None,
        certificate_path=user.path("client-certificate"),
        certificate_data=user.b64data("client-certificate-data"),
        private_key_path=user.path("client-key"),
        private_key_data=user.b64data("client-key-data"),
    )
    provider = user.data.get("auth-provider")
    if not creds.token and isinstance(provider, Mapping):
        creds.token, creds.expiration = _auth_provider_token(provider)

    exec_spec = user.data.get("exec")
    if exec_spec:
        if not isinstance(exec_spec, Mapping):
            raise LoginError(f"The kubeconfig's exec plugin of user {user_name!r} is malformed.")
        result = run_exec_plugin(exec_spec, cluster=cluster, base_dir=user.base_dir)
        creds.token = result.token or creds.token
        if result.certificate_data is not None:
            creds.certificate_data, creds.certificate_path = result.certificate_data, None
            creds.private_key_data, creds.private_key_path = result.private_key_data, None
        creds.expiration = result.expiration
    return creds


def _token_file(user: KubeconfigEntry) -> str | None:
    token_file = user.path("tokenFile")
    if not token_file:
        return None
    try:
        return read_text(token_file).strip() or None
    except OSError as e:
        raise LoginError(f"Cannot read the kubeconfig's token file: {e}") from e


def _auth_provider_token(provider: Mapping[str, Any]) -> tuple[str | None, datetime.datetime | None]:
    """The already obtained token of a legacy auth provider (oidc, gcp, azure), as is; no refreshing."""
    config = provider.get("config") or {}
    if not isinstance(config, Mapping):
        return None, None
    token = config.get("id-token") or config.get("access-token") or None
    expiry = config.get("expiry") or config.get("expires-on") or None
    expiration: datetime.datetime | None = None
    if token and expiry:
        try:
            if isinstance(expiry, int | float) or str(expiry).isdigit():
                expiration = datetime.datetime.fromtimestamp(int(expiry), datetime.UTC)
            else:
                expiration = parse_timestamp(str(expiry))
        except (ValueError, OverflowError):
            expiration = None  # unknown formats: let the API tell if it has expired (401)
    return (str(token) if token else None), expiration
