"""
Authentication: the login functions, and the default login handlers.

Two rudimentary login functions read the raw credentials themselves:

* :func:`login_with_service_account` — the in-cluster token, CA, and namespace files
  of the pod's service account, with the API endpoint from the environment;
* :func:`login_with_kubeconfig` — the current context of the kubeconfig files
  (``$KUBECONFIG`` with several paths merged as kubectl does, or ``~/.kube/config``),
  including the ``exec`` credential plugins.

Two more "piggyback" the client libraries, if installed, and take only what is
needed for the API calls from their configurations:

* :func:`login_via_client` — the official ``kubernetes`` client;
* :func:`login_via_pykube` — ``pykube-ng``.

When an operator declares no login handlers of its own, the handlers from
:func:`get_fallback_login_handlers` are used instead (see there for which and when).

All credentials obtained here are registered for the redaction in the logs.
"""

import base64
import binascii
import dataclasses
import datetime
import importlib
import importlib.util
import json
import logging
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from types import EllipsisType
from typing import Any

from kopf._cogs.helpers import loggers
from kopf._cogs.structs.credentials import ConnectionInfo, LoginError
from kopf._cogs.structs.ids import HandlerId
from kopf._core.actions.errors import DEFAULT_RETRY_DELAY, ErrorsMode
from kopf._core.intents import clientdefaults
from kopf._core.intents.causes import Activity
from kopf._core.intents.handlers import ActivityHandler

__all__ = [
    "DEFAULT_KUBECONFIG",
    "EXEC_TIMEOUT",
    "SERVICE_ACCOUNT_DIR",
    "KubeconfigLogin",
    "get_fallback_login_handlers",
    "has_client",
    "has_pykube",
    "kubeconfig_paths",
    "login_via_client",
    "login_via_pykube",
    "login_with_kubeconfig",
    "login_with_kubeconfig_context",
    "login_with_service_account",
    "register_connection_secrets",
]

_logger = logging.getLogger(__name__)

LoggerLike = logging.Logger | logging.LoggerAdapter[Any]

#: Where the pod's service account is mounted (can be patched, e.g. in tests).
SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"

#: The kubeconfig to use when ``$KUBECONFIG`` is not set or empty.
DEFAULT_KUBECONFIG = "~/.kube/config"

#: How long an ``exec`` credential plugin may run (seconds) before the login fails.
EXEC_TIMEOUT = 60.0

EXEC_API_VERSIONS = frozenset(
    {
        "client.authentication.k8s.io/v1",
        "client.authentication.k8s.io/v1beta1",
        "client.authentication.k8s.io/v1alpha1",
    }
)


# -------------------------------------------------------------------------------------------------
# Redaction of whatever is obtained here.
# -------------------------------------------------------------------------------------------------


def register_connection_secrets(info: ConnectionInfo | None) -> None:
    """Mask the secrets of these credentials in all the logs from now on."""
    if info is None:
        return
    for value in (info.token, info.password, info.private_key_data, info.certificate_data):
        loggers.register_secret(value)


def _registered(info: ConnectionInfo | None) -> ConnectionInfo | None:
    register_connection_secrets(info)
    return info


# -------------------------------------------------------------------------------------------------
# The service account.
# -------------------------------------------------------------------------------------------------


def login_with_service_account(**_: Any) -> ConnectionInfo | None:
    """
    A minimalistic login from the pod's service account (the raw token, CA, and namespace files).

    Returns ``None`` outside of a cluster: if there is no token file or no
    ``KUBERNETES_SERVICE_HOST`` in the environment.
    """
    token_path = os.path.join(SERVICE_ACCOUNT_DIR, "token")
    ca_path = os.path.join(SERVICE_ACCOUNT_DIR, "ca.crt")
    ns_path = os.path.join(SERVICE_ACCOUNT_DIR, "namespace")

    host = os.environ.get("KUBERNETES_SERVICE_HOST", "").strip()
    port = os.environ.get("KUBERNETES_SERVICE_PORT", "").strip() or "443"
    if not host or not os.path.isfile(token_path):
        return None

    try:
        token = _read_text(token_path).strip()
        namespace = _read_text(ns_path).strip() if os.path.isfile(ns_path) else None
    except OSError as e:
        raise LoginError(f"Cannot read the service account's files: {e}") from e
    if not token:
        raise LoginError(f"The service account's token is empty: {token_path}")

    return _registered(
        ConnectionInfo(
            server=f"https://{_url_host(host)}:{port}",
            ca_path=ca_path if os.path.isfile(ca_path) else None,
            scheme="Bearer",
            token=token,
            default_namespace=namespace or None,
        )
    )


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def _read_text(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


# -------------------------------------------------------------------------------------------------
# Kubeconfig.
# -------------------------------------------------------------------------------------------------


class _Entry:
    """A named entry of a kubeconfig (a cluster, a user, a context), with the directory of its file."""

    def __init__(self, data: Mapping[str, Any], base_dir: str) -> None:
        self.data = data
        self.base_dir = base_dir

    def path(self, key: str) -> str | None:
        """A file path of the entry, resolved relatively to its kubeconfig file (as kubectl does)."""
        value = self.data.get(key)
        if not value:
            return None
        path = os.path.expanduser(str(value))
        return path if os.path.isabs(path) else os.path.join(self.base_dir, path)

    def b64data(self, key: str) -> bytes | None:
        value = self.data.get(key)
        if not value:
            return None
        try:
            return base64.b64decode("".join(str(value).split()), validate=True)
        except (binascii.Error, ValueError) as e:
            raise LoginError(f"The kubeconfig's {key!r} is not valid base64.") from e


class _MergedConfig:
    """The kubeconfig files merged: the first file to define a name or the current context wins."""

    def __init__(self) -> None:
        self.clusters: dict[str, _Entry] = {}
        self.users: dict[str, _Entry] = {}
        self.contexts: dict[str, _Entry] = {}
        self.current_context: str | None = None

    def merge(self, doc: Mapping[str, Any], path: str) -> None:
        base_dir = os.path.dirname(os.path.abspath(path))
        if not self.current_context and doc.get("current-context"):
            self.current_context = str(doc["current-context"])
        for section, target, field in [
            ("clusters", self.clusters, "cluster"),
            ("users", self.users, "user"),
            ("contexts", self.contexts, "context"),
        ]:
            items = doc.get(section) or []
            if not isinstance(items, list):
                raise LoginError(f"The kubeconfig's {section!r} is not a list in {path}")
            for item in items:
                if not isinstance(item, Mapping) or not item.get("name"):
                    raise LoginError(f"The kubeconfig has an unnamed or malformed item of {section!r} in {path}")
                data = item.get(field) or {}
                if not isinstance(data, Mapping):
                    raise LoginError(f"The kubeconfig's {field} {item['name']!r} is malformed in {path}")
                target.setdefault(str(item["name"]), _Entry(data, base_dir))


def kubeconfig_paths() -> list[str]:
    """The kubeconfig files to read: those of ``$KUBECONFIG`` (in its order), or ``~/.kube/config``."""
    env = os.environ.get("KUBECONFIG", "")
    paths = [path for path in env.split(os.pathsep) if path.strip()] if env.strip() else [DEFAULT_KUBECONFIG]
    return [os.path.expanduser(path) for path in paths]


def _load_kubeconfig(paths: Sequence[str]) -> tuple[_MergedConfig, tuple[str, ...]]:
    """The files merged, and those of them that exist (kubectl ignores the missing ones)."""
    config = _MergedConfig()
    found: list[str] = []
    for path in paths:
        if not os.path.isfile(path):
            continue
        found.append(path)
        import yaml  # on demand: ~11 ms at start-up, which the in-cluster operators (a service account) never need

        try:
            with open(path, encoding="utf-8") as f:
                doc = yaml.safe_load(f)
        except (OSError, yaml.YAMLError) as e:
            raise LoginError(f"Cannot read the kubeconfig {path}: {e}") from e
        if doc is None:
            continue
        if not isinstance(doc, Mapping):
            raise LoginError(f"The kubeconfig is not a mapping: {path}")
        config.merge(doc, path)
    return config, tuple(found)


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
    config, found = _load_kubeconfig(files)
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


def _context_credentials(config: _MergedConfig, context_name: str, context: _Entry) -> ConnectionInfo:
    cluster_name = context.data.get("cluster")
    cluster = config.clusters.get(str(cluster_name)) if cluster_name else None
    if cluster is None:
        raise LoginError(f"The kubeconfig's cluster {cluster_name!r} of context {context_name!r} is not defined.")
    server = cluster.data.get("server")
    if not server:
        raise LoginError(f"The kubeconfig's cluster {cluster_name!r} has no server.")

    user_name = context.data.get("user")
    user: _Entry | None
    if user_name:
        user = config.users.get(str(user_name))
        if user is None:
            raise LoginError(f"The kubeconfig's user {user_name!r} of context {context_name!r} is not defined.")
    else:
        user = None  # anonymous access

    token: str | None = None
    scheme: str | None = None
    username: str | None = None
    password: str | None = None
    certificate_path: str | None = None
    certificate_data: bytes | None = None
    private_key_path: str | None = None
    private_key_data: bytes | None = None
    expiration: datetime.datetime | None = None
    if user is not None:
        token = user.data.get("token") or None
        token_file = user.path("tokenFile")
        if not token and token_file:
            try:
                token = _read_text(token_file).strip() or None
            except OSError as e:
                raise LoginError(f"Cannot read the kubeconfig's token file: {e}") from e
        username = user.data.get("username") or None
        password = user.data.get("password") or None
        certificate_path = user.path("client-certificate")
        certificate_data = user.b64data("client-certificate-data")
        private_key_path = user.path("client-key")
        private_key_data = user.b64data("client-key-data")

        provider = user.data.get("auth-provider")
        if not token and isinstance(provider, Mapping):
            token, expiration = _auth_provider_token(provider)

        exec_spec = user.data.get("exec")
        if exec_spec:
            if not isinstance(exec_spec, Mapping):
                raise LoginError(f"The kubeconfig's exec plugin of user {user_name!r} is malformed.")
            result = _run_exec_plugin(exec_spec, cluster=cluster, base_dir=user.base_dir)
            token = result.token or token
            if result.certificate_data is not None:
                certificate_data, certificate_path = result.certificate_data, None
                private_key_data, private_key_path = result.private_key_data, None
            expiration = result.expiration

    if token:
        scheme = "Bearer"

    insecure = cluster.data.get("insecure-skip-tls-verify")
    info = ConnectionInfo(
        server=str(server),
        ca_path=cluster.path("certificate-authority"),
        ca_data=cluster.b64data("certificate-authority-data"),
        insecure=bool(insecure) if insecure is not None else None,
        username=str(username) if username is not None else None,
        password=str(password) if password is not None else None,
        scheme=scheme,
        token=str(token) if token else None,
        certificate_path=certificate_path,
        certificate_data=certificate_data,
        private_key_path=private_key_path,
        private_key_data=private_key_data,
        default_namespace=str(context.data["namespace"]) if context.data.get("namespace") else None,
        expiration=expiration,
        proxy_url=str(cluster.data["proxy-url"]) if cluster.data.get("proxy-url") else None,
    )
    register_connection_secrets(info)
    return info


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
                expiration = _parse_timestamp(str(expiry))
        except (ValueError, OverflowError):
            expiration = None  # unknown formats: let the API tell if it has expired (401)
    return (str(token) if token else None), expiration


def _parse_timestamp(value: str) -> datetime.datetime:
    moment = datetime.datetime.fromisoformat(value.strip())
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=datetime.UTC)


class _ExecResult:
    def __init__(
        self,
        *,
        token: str | None,
        certificate_data: bytes | None,
        private_key_data: bytes | None,
        expiration: datetime.datetime | None,
    ) -> None:
        self.token = token
        self.certificate_data = certificate_data
        self.private_key_data = private_key_data
        self.expiration = expiration


def _run_exec_plugin(spec: Mapping[str, Any], *, cluster: _Entry, base_dir: str) -> _ExecResult:
    """
    Run an ``exec`` credential plugin and parse the ``ExecCredential`` from its stdout.

    The plugin never gets a terminal (operators are not interactive), so the plugins
    that always require one (``interactiveMode: Always``) fail the login.
    """
    api_version = spec.get("apiVersion")
    if api_version not in EXEC_API_VERSIONS:
        raise LoginError(f"The exec plugin's apiVersion is not supported: {api_version!r}")
    command = _exec_command(spec, base_dir=base_dir)
    args = [str(arg) for arg in spec.get("args") or []]
    env = _exec_env(spec, api_version=api_version, cluster=cluster)
    stdout = _exec_stdout(spec, command=command, args=args, env=env)
    return _parse_exec_credential(stdout, command=command, api_version=api_version)


def _exec_command(spec: Mapping[str, Any], *, base_dir: str) -> str:
    """The plugin's executable: a path with separators is relative to the kubeconfig; a bare name is in $PATH."""
    command = spec.get("command")
    if not command:
        raise LoginError("The exec plugin has no command.")
    if spec.get("interactiveMode") == "Always":
        raise LoginError("The exec plugin requires an interactive terminal, which operators do not have.")
    command = os.path.expanduser(str(command))
    if os.sep in command or (os.altsep and os.altsep in command):
        command = command if os.path.isabs(command) else os.path.join(base_dir, command)
    return command


def _exec_env(spec: Mapping[str, Any], *, api_version: str, cluster: _Entry) -> dict[str, str]:
    """The plugin's environment: ours, the spec's variables, and the request as ``KUBERNETES_EXEC_INFO``."""
    env = dict(os.environ)
    for item in spec.get("env") or []:
        if isinstance(item, Mapping) and item.get("name"):
            env[str(item["name"])] = str(item.get("value") or "")
    exec_info: dict[str, Any] = {
        "apiVersion": api_version,
        "kind": "ExecCredential",
        "spec": {"interactive": False},
    }
    if spec.get("provideClusterInfo"):
        exec_info["spec"]["cluster"] = _exec_cluster_info(cluster)
    env["KUBERNETES_EXEC_INFO"] = json.dumps(exec_info)
    return env


def _exec_stdout(spec: Mapping[str, Any], *, command: str, args: Sequence[str], env: Mapping[str, str]) -> bytes:
    """Run the plugin with no terminal and a time limit; its stdout, or a login error worded for the user."""
    try:
        completed = subprocess.run(
            [command, *args],
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=EXEC_TIMEOUT,
            check=False,
        )
    except FileNotFoundError as e:
        hint = spec.get("installHint")
        raise LoginError(f"The exec plugin {command!r} is not found." + (f" {hint}" if hint else "")) from e
    except subprocess.TimeoutExpired as e:
        raise LoginError(f"The exec plugin {command!r} did not finish in {EXEC_TIMEOUT}s.") from e
    except OSError as e:
        raise LoginError(f"The exec plugin {command!r} cannot be executed: {e}") from e

    if completed.returncode != 0:
        stderr = loggers.redact(completed.stderr.decode("utf-8", errors="replace").strip())[-1000:]
        raise LoginError(f"The exec plugin {command!r} failed with exit code {completed.returncode}: {stderr}")
    stdout: bytes = completed.stdout
    return stdout


def _parse_exec_credential(stdout: bytes, *, command: str, api_version: str) -> _ExecResult:
    """The token or the client certificate (and the expiration) from the plugin's ``ExecCredential``."""
    try:
        credential = json.loads(stdout)
    except ValueError as e:
        raise LoginError(f"The exec plugin {command!r} returned no valid JSON.") from e
    if not isinstance(credential, Mapping) or credential.get("kind") != "ExecCredential":
        raise LoginError(f"The exec plugin {command!r} returned no ExecCredential.")
    if credential.get("apiVersion") != api_version:
        raise LoginError(
            f"The exec plugin {command!r} returned apiVersion {credential.get('apiVersion')!r}, "
            f"while {api_version!r} was requested."
        )
    status = credential.get("status") or {}
    if not isinstance(status, Mapping):
        raise LoginError(f"The exec plugin {command!r} returned a malformed status.")
    return _exec_result(status, command=command)


def _exec_result(status: Mapping[str, Any], *, command: str) -> _ExecResult:
    """The credentials in the ``ExecCredential``'s status: a token, or a certificate with its key, or both."""
    token = status.get("token") or None
    cert = status.get("clientCertificateData") or None
    key = status.get("clientKeyData") or None
    if bool(cert) != bool(key):
        raise LoginError(f"The exec plugin {command!r} returned a client certificate without a key or vice versa.")
    if not token and not cert:
        raise LoginError(f"The exec plugin {command!r} returned neither a token nor a client certificate.")

    expiration: datetime.datetime | None = None
    if status.get("expirationTimestamp"):
        try:
            expiration = _parse_timestamp(str(status["expirationTimestamp"]))
        except ValueError as e:
            raise LoginError(f"The exec plugin {command!r} returned a malformed expirationTimestamp.") from e

    return _ExecResult(
        token=str(token) if token else None,
        certificate_data=str(cert).encode("utf-8") if cert else None,
        private_key_data=str(key).encode("utf-8") if key else None,
        expiration=expiration,
    )


def _exec_cluster_info(cluster: _Entry) -> dict[str, Any]:
    """The cluster as the ExecCredential's ``spec.cluster`` describes it (for ``provideClusterInfo``)."""
    info: dict[str, Any] = {"server": cluster.data.get("server")}
    ca_data = cluster.data.get("certificate-authority-data")
    ca_path = cluster.path("certificate-authority")
    if not ca_data and ca_path and os.path.isfile(ca_path):
        with open(ca_path, "rb") as f:
            ca_data = base64.b64encode(f.read()).decode("ascii")
    if ca_data:
        info["certificate-authority-data"] = ca_data
    for key in ("insecure-skip-tls-verify", "tls-server-name", "proxy-url", "disable-compression"):
        if cluster.data.get(key) is not None:
            info[key] = cluster.data[key]
    extensions = cluster.data.get("extensions") or []
    for extension in extensions if isinstance(extensions, list) else []:
        if isinstance(extension, Mapping) and extension.get("name") == "client.authentication.k8s.io/exec":
            info["config"] = extension.get("extension")
    return info


# -------------------------------------------------------------------------------------------------
# The official client library.
# -------------------------------------------------------------------------------------------------


def has_client() -> bool:
    """Whether the official ``kubernetes`` client library is installed (it is not imported here)."""
    return _is_installed("kubernetes")


def has_pykube() -> bool:
    """Whether ``pykube-ng`` is installed (it is not imported here)."""
    return _is_installed("pykube")


def _is_installed(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


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
        info = _login_before_the_client_is_imported(logger)
        if info is not None:
            clientdefaults.configure_when_imported(_set_client_default_configuration)
            return info
    return _login_via_imported_client(logger=logger)


MODULE_NAME_CLIENT = clientdefaults.MODULE_NAME


def _login_before_the_client_is_imported(logger: LoggerLike) -> ConnectionInfo | None:
    """The same credentials as the client would get, if the built-in reader understands them; else None."""
    try:
        info = login_with_service_account()
        if info is not None:
            logger.debug("The credentials are the service account's (the client library is not imported).")
            return info
        paths = kubeconfig_paths()
        config, found = _load_kubeconfig(paths)
        if not found or _needs_the_client_library(config):
            return None
        info = login_with_kubeconfig()
    except LoginError:
        return None  # the library tries on its own and explains its failures in its own terms
    if info is not None:
        logger.debug("The credentials are the kubeconfig's (the client library is not imported).")
    return info


def _needs_the_client_library(config: _MergedConfig) -> bool:
    """Whether the current context's user authenticates in a way that only the library implements."""
    context = config.contexts.get(config.current_context or "")
    user_name = context.data.get("user") if context is not None else None
    user = config.users.get(str(user_name)) if user_name else None
    return user is not None and user.data.get("auth-provider") is not None


def _set_client_default_configuration(kubernetes: Any) -> None:
    """Load the library's configuration as the login via it does, and make it the library's default."""
    config = kubernetes.client.Configuration()
    try:
        kubernetes.config.load_incluster_config(client_configuration=config)
    except kubernetes.config.ConfigException:
        config_file = os.environ.get("KUBECONFIG", "").strip() or DEFAULT_KUBECONFIG
        kubernetes.config.load_kube_config(config_file=config_file, client_configuration=config, persist_config=False)
    kubernetes.client.Configuration.set_default(config)


def _login_via_imported_client(*, logger: LoggerLike) -> ConnectionInfo | None:
    try:
        kubernetes = importlib.import_module("kubernetes")
    except ImportError:
        logger.warning(
            "The official kubernetes client is not installed: cannot log in via it. "
            "Install it (e.g. kopf[full-auth]) or use another login handler."
        )
        return None

    config = kubernetes.client.Configuration()
    namespace: str | None
    try:
        kubernetes.config.load_incluster_config(client_configuration=config)
    except kubernetes.config.ConfigException as e1:
        config_file = os.environ.get("KUBECONFIG", "").strip() or DEFAULT_KUBECONFIG
        try:
            kubernetes.config.load_kube_config(
                config_file=config_file,
                client_configuration=config,
                persist_config=False,  # never write refreshed tokens into the user's files
            )
        except (kubernetes.config.ConfigException, OSError, ValueError) as e2:
            raise LoginError(
                "Cannot authenticate the kubernetes client library: "
                f"neither in-cluster ({e1}), nor via kubeconfig ({e2})."
            ) from e2
        logger.debug("The client is configured via kubeconfig.")
        namespace = _client_kubeconfig_namespace(kubernetes, config_file)
    else:
        logger.debug("The client is configured in-cluster with a service account.")
        ns_path = os.path.join(SERVICE_ACCOUNT_DIR, "namespace")
        namespace = _read_text(ns_path).strip() or None if os.path.isfile(ns_path) else None

    info = connection_info_from_client_configuration(config, default_namespace=namespace)
    kubernetes.client.Configuration.set_default(config)
    return _registered(info)


async def login_via_async_client(*, logger: LoggerLike, **_: Any) -> ConnectionInfo | None:
    """
    Piggyback ``kubernetes_asyncio``: its in-cluster config, or else its kubeconfig.

    The same as :func:`login_via_client`, but for the asynchronous twin of the official client
    (not a dependency of the framework: install it explicitly). Its default configuration
    is set too, for the handlers that use it with no configuration loading of their own.
    """
    try:
        kubernetes_asyncio = importlib.import_module("kubernetes_asyncio")
    except ImportError:
        logger.warning(
            "kubernetes_asyncio is not installed: cannot log in via it. Install it or use another login handler."
        )
        return None

    config = kubernetes_asyncio.client.Configuration()
    namespace: str | None
    try:
        kubernetes_asyncio.config.load_incluster_config(client_configuration=config)
    except kubernetes_asyncio.config.ConfigException as e1:
        config_file = os.environ.get("KUBECONFIG", "").strip() or DEFAULT_KUBECONFIG
        try:
            await kubernetes_asyncio.config.load_kube_config(
                config_file=config_file,
                client_configuration=config,
                persist_config=False,  # never write refreshed tokens into the user's files
            )
        except (kubernetes_asyncio.config.ConfigException, OSError, ValueError) as e2:
            raise LoginError(
                "Cannot authenticate the kubernetes_asyncio client library: "
                f"neither in-cluster ({e1}), nor via kubeconfig ({e2})."
            ) from e2
        logger.debug("The async client is configured via kubeconfig.")
        namespace = _client_kubeconfig_namespace(kubernetes_asyncio, config_file)
    else:
        logger.debug("The async client is configured in-cluster with a service account.")
        namespace = _service_account_namespace()

    header: str | None = None
    for identifier in ("authorization", "BearerToken"):  # a coroutine here: it may refresh the token
        header = header or await config.get_api_key_with_prefix(identifier)
    info = connection_info_from_client_configuration(config, default_namespace=namespace, authorization=header)
    kubernetes_asyncio.client.Configuration.set_default(config)
    return _registered(info)


def _client_kubeconfig_namespace(kubernetes: Any, config_file: str) -> str | None:
    try:
        _, active = kubernetes.config.list_kube_config_contexts(config_file=config_file)
    except Exception:  # the namespace is optional: a failure to get it is not a failure to log in
        return None
    context = (active or {}).get("context") or {}
    namespace = context.get("namespace") if isinstance(context, Mapping) else None
    return str(namespace) if namespace else None


def _service_account_namespace() -> str | None:
    ns_path = os.path.join(SERVICE_ACCOUNT_DIR, "namespace")
    return _read_text(ns_path).strip() or None if os.path.isfile(ns_path) else None


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

    scheme: str | None = None
    token: str | None = None
    if header:
        header = str(header).strip()
        if " " in header:
            scheme, _, token = header.partition(" ")
            token = token.strip()
        else:
            token = header

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


# -------------------------------------------------------------------------------------------------
# pykube-ng.
# -------------------------------------------------------------------------------------------------


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
        info = _login_before_pykube_is_imported(logger)
        if info is not None:
            return info
    return _login_via_imported_pykube(logger=logger)


def _login_before_pykube_is_imported(logger: LoggerLike) -> ConnectionInfo | None:
    """The same credentials as pykube would get, if the built-in reader understands them; else None."""
    try:
        info = login_with_service_account()
        if info is not None:
            logger.debug("The credentials are the service account's (pykube is not imported).")
            return info
        config_file = os.environ.get("KUBECONFIG", "").strip() or DEFAULT_KUBECONFIG
        paths = [os.path.expanduser(config_file.split(os.pathsep)[0])]
        config, found = _load_kubeconfig(paths)
        if not found or _needs_the_client_library(config):
            return None
        login = login_with_kubeconfig_context(paths)
    except LoginError:
        return None  # pykube tries on its own and explains its failures in its own terms
    if login is None:
        return None
    logger.debug("The credentials are the kubeconfig's (pykube is not imported).")
    return login.info


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
        config = pykube.KubeConfig.from_service_account(path=SERVICE_ACCOUNT_DIR)
        logger.debug("Pykube is configured in-cluster with a service account.")
    except (FileNotFoundError, OSError) as e1:
        try:
            config_file = os.environ.get("KUBECONFIG", "").strip() or DEFAULT_KUBECONFIG
            config = pykube.KubeConfig.from_file(config_file.split(os.pathsep)[0])
            logger.debug("Pykube is configured via kubeconfig.")
        except Exception as e2:
            raise LoginError(
                f"Cannot authenticate pykube: neither in-cluster ({e1}), nor via kubeconfig ({e2})."
            ) from e2

    cluster: Mapping[str, Any] = config.cluster or {}
    user: Mapping[str, Any] = config.user or {}
    token = user.get("token") or None
    insecure = cluster.get("insecure-skip-tls-verify")
    return _registered(
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


# -------------------------------------------------------------------------------------------------
# The default login handlers.
# -------------------------------------------------------------------------------------------------


def login_with_service_account_or_kubeconfig(**kwargs: Any) -> ConnectionInfo | None:
    """The rudimentary fallback: the service account if in a cluster, else the kubeconfig."""
    return login_with_service_account(**kwargs) or login_with_kubeconfig(**kwargs)


def get_fallback_login_handlers() -> Sequence[ActivityHandler]:
    """
    The login handlers to use when the operator declares none of its own.

    All the installed client libraries are piggybacked: pykube-ng and the official
    ``kubernetes`` client, each as a separate handler, so all of their credentials
    go into the vault. If none of them is installed, the rudimentary login is used:
    the service account if in a cluster, otherwise the kubeconfig.
    The handlers have the same defaults as ``@kopf.on.login()``.
    """
    fns: list[tuple[str, Any]] = []
    if has_pykube():
        fns.append(("login_via_pykube", login_via_pykube))
    if has_client():
        fns.append(("login_via_client", login_via_client))
    if not fns:
        fns.append(("login_with_service_account_or_kubeconfig", login_with_service_account_or_kubeconfig))
    return [
        ActivityHandler(
            fn=fn,
            id=HandlerId(handler_id),
            param=None,
            activity=Activity.AUTHENTICATION,
            errors=ErrorsMode.TEMPORARY,
            timeout=None,
            retries=None,
            backoff=DEFAULT_RETRY_DELAY,
        )
        for handler_id, fn in fns
    ]
