"""The kubeconfig files: which ones, and how several of them merge (as kubectl does)."""

import base64
import binascii
import datetime
import os
from collections.abc import Mapping, Sequence
from typing import Any

from kopf._cogs.structs.credentials import LoginError

__all__ = [
    "DEFAULT_KUBECONFIG",
    "KubeconfigEntry",
    "MergedKubeconfig",
    "first_kubeconfig_file",
    "kubeconfig_paths",
    "load_kubeconfig",
    "parse_timestamp",
]

#: The kubeconfig to use when ``$KUBECONFIG`` is not set or empty.
DEFAULT_KUBECONFIG = "~/.kube/config"


class KubeconfigEntry:
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


class MergedKubeconfig:
    """The kubeconfig files merged: the first file to define a name or the current context wins."""

    def __init__(self) -> None:
        self.clusters: dict[str, KubeconfigEntry] = {}
        self.users: dict[str, KubeconfigEntry] = {}
        self.contexts: dict[str, KubeconfigEntry] = {}
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
                target.setdefault(str(item["name"]), KubeconfigEntry(data, base_dir))

    def needs_a_client_library(self) -> bool:
        """Whether the current context's user authenticates in a way that only the libraries implement."""
        context = self.contexts.get(self.current_context or "")
        user_name = context.data.get("user") if context is not None else None
        user = self.users.get(str(user_name)) if user_name else None
        return user is not None and user.data.get("auth-provider") is not None


def kubeconfig_paths() -> list[str]:
    """The kubeconfig files to read: those of ``$KUBECONFIG`` (in its order), or ``~/.kube/config``."""
    env = os.environ.get("KUBECONFIG", "")
    paths = [path for path in env.split(os.pathsep) if path.strip()] if env.strip() else [DEFAULT_KUBECONFIG]
    return [os.path.expanduser(path) for path in paths]


def first_kubeconfig_file() -> str:
    """``$KUBECONFIG`` as the client libraries take it (unsplit), or ``~/.kube/config``."""
    return os.environ.get("KUBECONFIG", "").strip() or DEFAULT_KUBECONFIG


def load_kubeconfig(paths: Sequence[str]) -> tuple[MergedKubeconfig, tuple[str, ...]]:
    """The files merged, and those of them that exist (kubectl ignores the missing ones)."""
    config = MergedKubeconfig()
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


def parse_timestamp(value: str) -> datetime.datetime:
    """An RFC 3339 timestamp of the credentials' expiry (UTC if no zone is given)."""
    moment = datetime.datetime.fromisoformat(value.strip())
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=datetime.UTC)
