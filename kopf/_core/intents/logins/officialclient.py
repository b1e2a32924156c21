"""
Piggybacking the official ``kubernetes`` client and its async twin ``kubernetes_asyncio``.

Both libraries configure themselves the same way (in-cluster, else the kubeconfig), except that
the async one awaits its kubeconfig loading and its token: :func:`_client_login` is written once
as a generator that yields each such call; the sync login sends the results straight back,
the async one awaits them first.
"""

import importlib
import inspect
import sys
from collections.abc import Generator, Mapping
from types import EllipsisType
from typing import Any

from kopf._cogs.structs.credentials import ConnectionInfo, LoginError
from kopf._core.intents import clientdefaults
from kopf._core.intents.logins import serviceaccount
from kopf._core.intents.logins.kubeconfigs import first_kubeconfig_file, kubeconfig_paths
from kopf._core.intents.logins.libraries import LoggerLike, is_installed, login_without_the_library
from kopf._core.intents.logins.redaction import registered

__all__ = [
    "MODULE_NAME_CLIENT",
    "connection_info_from_client_configuration",
    "has_client",
    "login_via_async_client",
    "login_via_client",
]

MODULE_NAME_CLIENT = clientdefaults.MODULE_NAME

#: The steps of a login via a client library: they yield the library's calls, and get their results back.
_LoginSteps = Generator[Any, Any, ConnectionInfo | None]

_NOT_INSTALLED = {
    MODULE_NAME_CLIENT: (
        "The official kubernetes client is not installed: cannot log in via it. "
        "Install it (e.g. kopf[full-auth]) or use another login handler."
    ),
    "kubernetes_asyncio": (
        "kubernetes_asyncio is not installed: cannot log in via it. Install it or use another login handler."
    ),
}


def has_client() -> bool:
    """Whether the official ``kubernetes`` client library is installed (it is not imported here)."""
    return is_installed(MODULE_NAME_CLIENT)


def login_via_client(*, logger: LoggerLike, **_: Any) -> ConnectionInfo | None:
    """
    Piggyback the official ``kubernetes`` client: its in-cluster config, or else its kubeconfig.

    Returns ``None`` if the library is not installed. Fails with :class:`LoginError`
    if the library cannot configure itself in either way. On success, the configuration
    also becomes the library's default, so that the handlers' ``kubernetes.client.CoreV1Api()``
    (with no configuration loading of their own) reach the same cluster as the operator.

    The library is heavy (~17 MiB, tenths of a second to import): if nothing has imported it yet,
    the same service account or kubeconfig context is read without it whenever the built-in
    reader understands those credentials fully (all but the refreshing auth providers),
    and the library's default configuration is set when (if ever) the operator imports it.
    """
    if MODULE_NAME_CLIENT not in sys.modules and has_client():
        info = login_without_the_library(kubeconfig_paths(), library="the client library", logger=logger)
        if info is not None:
            clientdefaults.configure_when_imported(_set_client_default_configuration)
            return info
    return _run_now(_client_login(MODULE_NAME_CLIENT, "The client", logger=logger))


async def login_via_async_client(*, logger: LoggerLike, **_: Any) -> ConnectionInfo | None:
    """
    Piggyback ``kubernetes_asyncio``: its in-cluster config, or else its kubeconfig.

    The same as :func:`login_via_client`, but for the asynchronous twin of the official client
    (not a dependency of the framework: install it explicitly). Its default configuration
    is set too, for the handlers that use it with no configuration loading of their own.
    """
    return await _run_awaiting(_client_login("kubernetes_asyncio", "The async client", logger=logger))


def _run_now(steps: _LoginSteps) -> ConnectionInfo | None:
    """Drive the login steps of the sync library: its calls' results are ready as they are."""
    try:
        result = next(steps)
        while True:
            result = steps.send(result)
    except StopIteration as e:
        info: ConnectionInfo | None = e.value
        return info


async def _run_awaiting(steps: _LoginSteps) -> ConnectionInfo | None:
    """Drive the login steps of the async library: its calls are awaited, their errors thrown back."""
    try:
        call = next(steps)
        while True:
            try:
                result = (await call) if inspect.isawaitable(call) else call
            except Exception as e:
                call = steps.throw(e)
            else:
                call = steps.send(result)
    except StopIteration as e:
        info: ConnectionInfo | None = e.value
        return info


def _client_login(module_name: str, title: str, *, logger: LoggerLike) -> _LoginSteps:
    """The login via either library, with its kubeconfig loading and its token yielded to be resolved."""
    try:
        library = importlib.import_module(module_name)
    except ImportError:
        logger.warning(_NOT_INSTALLED[module_name])
        return None

    config = library.client.Configuration()
    namespace: str | None
    try:
        library.config.load_incluster_config(client_configuration=config)
    except library.config.ConfigException as e1:
        config_file = first_kubeconfig_file()
        try:
            yield library.config.load_kube_config(
                config_file=config_file,
                client_configuration=config,
                persist_config=False,  # never write refreshed tokens into the user's files
            )
        except (library.config.ConfigException, OSError, ValueError) as e2:
            raise LoginError(
                f"Cannot authenticate the {module_name} client library: "
                f"neither in-cluster ({e1}), nor via kubeconfig ({e2})."
            ) from e2
        logger.debug(f"{title} is configured via kubeconfig.")
        namespace = _client_kubeconfig_namespace(library, config_file)
    else:
        logger.debug(f"{title} is configured in-cluster with a service account.")
        namespace = serviceaccount.service_account_namespace()

    header: str | None = None
    for identifier in ("authorization", "BearerToken"):  # a coroutine in the async library: it may refresh it
        header = header or (yield config.get_api_key_with_prefix(identifier))
    info = connection_info_from_client_configuration(config, default_namespace=namespace, authorization=header)
    library.client.Configuration.set_default(config)
    return registered(info)


def _set_client_default_configuration(kubernetes: Any) -> None:
    """Load the library's configuration as the login via it does, and make it the library's default."""
    config = kubernetes.client.Configuration()
    try:
        kubernetes.config.load_incluster_config(client_configuration=config)
    except kubernetes.config.ConfigException:
        config_file = first_kubeconfig_file()
        kubernetes.config.load_kube_config(config_file=config_file, client_configuration=config, persist_config=False)
    kubernetes.client.Configuration.set_default(config)


def _client_kubeconfig_namespace(kubernetes: Any, config_file: str) -> str | None:
    try:
        _, active = kubernetes.config.list_kube_config_contexts(config_file=config_file)
    except Exception:  # the namespace is optional: a failure to get it is not a failure to log in
        return None
    context = (active or {}).get("context") or {}
    namespace = context.get("namespace") if isinstance(context, Mapping) else None
    return str(namespace) if namespace else None


def connection_info_from_client_configuration(
    config: Any,
    *,
    default_namespace: str | None = None,
    authorization: str | EllipsisType | None = ...,
) -> ConnectionInfo:
    """
    Convert the official client's ``Configuration`` to the connection info.

    The authorization header is taken with its prefix (e.g. ``Bearer xyz``) and split
    into the scheme and the token; the token refreshing hook of the library (if any)
    is triggered by this, so the freshest token is taken.
    """
    header: str | None = None
    if not isinstance(authorization, EllipsisType):
        header = authorization  # fetched by the caller (e.g. awaited from an async client)
    else:
        for identifier in ("authorization", "BearerToken"):
            header = header or config.get_api_key_with_prefix(identifier)

    scheme, token = _split_authorization(header)

    # The client's basic auth goes via the header too; the username/password are only their raw source.
    username = getattr(config, "username", None) or None
    password = getattr(config, "password", None) or None
    if header and scheme and scheme.lower() == "basic":
        username = password = None

    host = getattr(config, "host", None)
    if not host:
        raise LoginError("The kubernetes client's configuration has no host.")
    return ConnectionInfo(
        server=str(host),
        ca_path=getattr(config, "ssl_ca_cert", None) or None,
        insecure=not getattr(config, "verify_ssl", True),
        username=username,
        password=password,
        scheme=scheme,
        token=token or None,
        certificate_path=getattr(config, "cert_file", None) or None,
        private_key_path=getattr(config, "key_file", None) or None,
        default_namespace=default_namespace,
        proxy_url=getattr(config, "proxy", None) or None,
    )


def _split_authorization(header: str | None) -> tuple[str | None, str | None]:
    """The scheme and the token of an authorization header (``Bearer xyz``; a bare token has no scheme)."""
    if not header:
        return None, None
    header = str(header).strip()
    if " " not in header:
        return None, header
    scheme, _, token = header.partition(" ")
    return scheme, token.strip()
