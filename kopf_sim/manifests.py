"""Reading manifests (YAML or JSON, several documents per file) for ``--load`` and for tests."""

from __future__ import annotations

import pathlib
from collections.abc import Iterable
from typing import Any

import yaml

#: libyaml's parser where PyYAML has it (about 10x faster: 10,000 objects loaded at a server's start), else Python's;
#: the same safe constructor either way, so the same documents.
_SafeLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class ManifestError(ValueError):
    """A manifest that cannot be read: the message names the file and the problem."""


def read_manifests(paths: Iterable[str | pathlib.Path]) -> list[Any]:
    documents: list[Any] = []
    for path in paths:
        documents.extend(read_manifest(path))
    return documents


def read_manifest(path: str | pathlib.Path) -> list[Any]:
    try:
        text = pathlib.Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ManifestError(f"cannot read {path}: {exc.strerror or exc}") from None
    return parse_manifests(text, source=str(path))


def parse_manifests(text: str, *, source: str = "<text>") -> list[Any]:
    try:
        documents = [doc for doc in yaml.load_all(text, Loader=_SafeLoader) if doc is not None]
    except yaml.YAMLError as exc:
        raise ManifestError(f"{source} is not valid YAML: {str(exc).splitlines()[0]}") from None
    for index, doc in enumerate(documents):
        if not isinstance(doc, dict) or "apiVersion" not in doc or "kind" not in doc:
            raise ManifestError(
                f"{source}, document {index + 1}: not a Kubernetes object (apiVersion and kind are required)"
            )
    return documents
