"""A small kubeconfig reader: enough to talk to a cluster with aiohttp (server, TLS, token or certs).

Files are taken from ``KUBECONFIG`` (several, separated by ``os.pathsep``, merged as kubectl
does: the first file defining a name wins) or ``~/.kube/config``. Supported credentials:
bearer tokens (inline or ``tokenFile``), client certificates (inline data or files), basic
auth. Exec and auth-provider plugins are not supported here (a clear error says so).
"""
from __future__ import annotations

import base64
import dataclasses
import os
import ssl
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from .errors import KopfConfigError

__all__ = ["KubeConfig", "default_paths", "load", "write"]


@dataclasses.dataclass(frozen=True)
class KubeConfig:
    """The connection settings of one context."""

    server: str
    context: str
    namespace: str | None = None
    ca_pem: bytes | None = None
    insecure: bool = False
    tls_server_name: str | None = None
    token: str | None = None
    username: str | None = None
    password: str | None = None
    client_cert_pem: bytes | None = None
    client_key_pem: bytes | None = None
    paths: tuple[str, ...] = ()

    def headers(self) -> dict[str, str]:
        if self.token:
            return {"Authorization": f"Bearer {self.token}"}
        if self.username is not None and self.password is not None:
            raw = f"{self.username}:{self.password}".encode()
            return {"Authorization": f"Basic {base64.b64encode(raw).decode('ascii')}"}
        return {}

    def ssl_context(self) -> ssl.SSLContext | None:
        """The TLS settings for an https server (None for plain http)."""
        if not self.server.startswith("https:"):
            return None
        if self.ca_pem is not None:
            context = ssl.create_default_context(cadata=self.ca_pem.decode("ascii"))
        else:
            context = ssl.create_default_context()
        if self.insecure:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        if self.client_cert_pem is not None and self.client_key_pem is not None:
            # The ssl module loads keys only from files: keep them on disk for a moment only.
            with tempfile.TemporaryDirectory(prefix="pytest-kopf-") as tmpdir:
                cert, key = Path(tmpdir) / "client.crt", Path(tmpdir) / "client.key"
                key.touch(mode=0o600)
                cert.write_bytes(self.client_cert_pem)
                key.write_bytes(self.client_key_pem)
                context.load_cert_chain(cert, key)
        return context


def default_paths() -> list[str]:
    env = os.environ.get("KUBECONFIG", "")
    paths = [path for path in env.split(os.pathsep) if path]
    return paths or [str(Path.home() / ".kube" / "config")]


def load(paths: Sequence[str | os.PathLike[str]] | None = None, *, context: str | None = None) -> KubeConfig:
    """Read the kubeconfig file(s) and resolve the given (or the current) context."""
    files = [str(p) for p in paths] if paths is not None else default_paths()
    docs: list[tuple[Path, Mapping[str, Any]]] = []
    for name in files:
        path = Path(name).expanduser()
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise KopfConfigError(f"Cannot read the kubeconfig {path}: {exc.strerror or exc}") from None
        try:
            doc = yaml.safe_load(text) or {}
        except yaml.YAMLError as exc:
            raise KopfConfigError(f"The kubeconfig {path} is not valid YAML: {str(exc).splitlines()[0]}") from None
        if not isinstance(doc, Mapping):
            raise KopfConfigError(f"The kubeconfig {path} is not a mapping.")
        docs.append((path, doc))
    if not docs:
        raise KopfConfigError(f"No kubeconfig found (looked at: {', '.join(files)}); set KUBECONFIG.")

    clusters = _merged(docs, "clusters", "cluster")
    users = _merged(docs, "users", "user")
    contexts = _merged(docs, "contexts", "context")
    current = context or next((str(doc["current-context"]) for _, doc in docs if doc.get("current-context")), None)
    where = ", ".join(str(path) for path, _ in docs)
    if not current:
        raise KopfConfigError(f"The kubeconfig ({where}) has no current context; use --kopf-context NAME.")
    if current not in contexts:
        known = ", ".join(sorted(contexts)) or "none"
        raise KopfConfigError(f"The kubeconfig ({where}) has no context {current!r} (known: {known}).")
    ctx, _ = contexts[current]
    cluster_name, user_name = str(ctx.get("cluster", "")), str(ctx.get("user", ""))
    if cluster_name not in clusters:
        raise KopfConfigError(f"The context {current!r} refers to an unknown cluster {cluster_name!r} ({where}).")
    cluster, cluster_base = clusters[cluster_name]
    user, user_base = users.get(user_name, ({}, cluster_base))
    if "exec" in user or "auth-provider" in user:
        raise KopfConfigError(f"The user {user_name!r} of the context {current!r} uses an exec/auth-provider plugin,"
                              " which pytest_kopf does not run; use a token or client certificates.")
    server = str(cluster.get("server", "")).rstrip("/")
    if not server:
        raise KopfConfigError(f"The cluster {cluster_name!r} of the context {current!r} has no server ({where}).")
    token = user.get("token")
    if not token and user.get("tokenFile"):
        token = _read(user_base, str(user["tokenFile"])).decode().strip()
    return KubeConfig(
        server=server,
        context=current,
        namespace=ctx.get("namespace") or None,
        ca_pem=_data(cluster, "certificate-authority", cluster_base),
        insecure=bool(cluster.get("insecure-skip-tls-verify", False)),
        tls_server_name=cluster.get("tls-server-name") or None,
        token=str(token) if token else None,
        username=user.get("username"),
        password=user.get("password"),
        client_cert_pem=_data(user, "client-certificate", user_base),
        client_key_pem=_data(user, "client-key", user_base),
        paths=tuple(str(path) for path, _ in docs),
    )


def _merged(docs: Iterable[tuple[Path, Mapping[str, Any]]], section: str,
            field: str) -> dict[str, tuple[Mapping[str, Any], Path]]:
    """Named entries of all files (the first definition wins), with the directory to resolve paths in."""
    result: dict[str, tuple[Mapping[str, Any], Path]] = {}
    for path, doc in docs:
        for entry in doc.get(section) or ():
            if isinstance(entry, Mapping) and entry.get("name") is not None:
                result.setdefault(str(entry["name"]), (entry.get(field) or {}, path.parent))
    return result


def _data(section: Mapping[str, Any], key: str, base: Path) -> bytes | None:
    inline = section.get(f"{key}-data")
    if inline:
        try:
            return base64.b64decode(str(inline))
        except ValueError:
            raise KopfConfigError(f"The kubeconfig's {key}-data is not valid base64.") from None
    if section.get(key):
        return _read(base, str(section[key]))
    return None


def _read(base: Path, name: str) -> bytes:
    path = (base / Path(name).expanduser())
    try:
        return path.read_bytes()
    except OSError as exc:
        raise KopfConfigError(f"Cannot read {path} (referred to by the kubeconfig): {exc.strerror or exc}") from None


def write(path: str | os.PathLike[str], config: KubeConfig, *, namespace: str | None = None) -> None:
    """Write a self-contained kubeconfig of one context (credentials inline), readable by the owner only."""
    cluster: dict[str, Any] = {"server": config.server}
    if config.ca_pem is not None:
        cluster["certificate-authority-data"] = base64.b64encode(config.ca_pem).decode("ascii")
    if config.insecure:
        cluster["insecure-skip-tls-verify"] = True
    if config.tls_server_name:
        cluster["tls-server-name"] = config.tls_server_name
    user: dict[str, Any] = {}
    if config.token:
        user["token"] = config.token
    if config.username is not None and config.password is not None:
        user["username"], user["password"] = config.username, config.password
    if config.client_cert_pem is not None and config.client_key_pem is not None:
        user["client-certificate-data"] = base64.b64encode(config.client_cert_pem).decode("ascii")
        user["client-key-data"] = base64.b64encode(config.client_key_pem).decode("ascii")
    context: dict[str, Any] = {"cluster": config.context, "user": config.context}
    if namespace or config.namespace:
        context["namespace"] = namespace or config.namespace
    doc = {
        "apiVersion": "v1", "kind": "Config", "preferences": {},
        "clusters": [{"name": config.context, "cluster": cluster}],
        "users": [{"name": config.context, "user": user}],
        "contexts": [{"name": config.context, "context": context}],
        "current-context": config.context,
    }
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(yaml.safe_dump(doc, sort_keys=False))
