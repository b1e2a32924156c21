"""Reading manifests (YAML or JSON, several documents per file) for ``--load`` and for tests.

Large manifests are read one document at a time (:func:`iter_manifests`), so that loading a million
objects never holds them all as parsed documents. Documents written as JSON (``---``-separated, as
generated manifests often are) are parsed as JSON, about twenty times faster than by a YAML parser (by
orjson, the ``speed`` extra, where it reads them as the standard library does: faster still); from the
first document that is not JSON on, the rest of the file is read as YAML.
"""

from __future__ import annotations

import pathlib
import re
from collections.abc import Iterable, Iterator
from typing import IO, Any

import yaml

from kopf_sim.kube import jsoncodec

#: libyaml's parser where PyYAML has it (about 10x faster: 10,000 objects loaded at a server's start), else Python's;
#: the same safe constructor either way, so the same documents.
_SafeLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class ManifestError(ValueError):
    """A manifest that cannot be read: the message names the file and the problem."""


def read_manifests(paths: Iterable[str | pathlib.Path]) -> list[Any]:
    return list(iter_manifests(paths))


def iter_manifests(paths: Iterable[str | pathlib.Path]) -> Iterator[Any]:
    """The documents of the files, one at a time (each checked to be a Kubernetes object)."""
    for path in paths:
        try:
            stream = open(path, encoding="utf-8")  # noqa: SIM115 - closed when the documents are read
        except OSError as exc:
            raise ManifestError(f"cannot read {path}: {exc.strerror or exc}") from None
        with stream:
            try:
                yield from _checked(_documents(stream, str(path)), str(path))
            except UnicodeDecodeError as exc:
                raise ManifestError(f"cannot read {path}: {exc}") from None


def read_manifest(path: str | pathlib.Path) -> list[Any]:
    return read_manifests([path])


def parse_manifests(text: str, *, source: str = "<text>") -> list[Any]:
    return list(_checked(_yaml_documents(text, source), source))


#: How much of a manifest is read at a time (its documents are split and parsed from each block).
_BLOCK = 1 << 20
#: A document marker, where it starts a line: a line of ``---`` (and whitespace) alone. (Found wherever it is and
#: then checked to start a line: ``^`` in a multi-line pattern makes the search look at every line, 10x slower.)
_MARKER = re.compile(r"---[^\S\n]*\n")


def _documents(stream: IO[str], source: str) -> Iterator[Any]:
    """The documents of a stream: ``---``-separated JSON ones as JSON, then (from the first other one on) YAML."""
    pending = ""
    while True:
        block = stream.read(_BLOCK)
        text = pending + block
        if not block and text and not text.endswith("\n"):
            text += "\n"  # the last line ends, so that a last marker is one
        # No marker before the pending text's last line (a long document's): the split starts there.
        scanned = pending.rfind("\n") + 1
        parts = _split(text, scanned)
        pending = parts.pop()  # the text after the last marker: the start of a document, maybe all of it
        exactly = jsoncodec.reads_exactly(text)
        for index, part in enumerate(parts):
            parsed = _as_json(part, exactly=exactly)
            if parsed is _NOT_JSON:
                rest = "".join(f"{later}---\n" for later in parts[index:])  # (the markers as one form of them)
                yield from _yaml_documents(rest + pending + stream.read(), source)
                return
            if parsed is not _BLANK:
                yield parsed
        if not block:
            break
    parsed = _as_json(pending, exactly=jsoncodec.reads_exactly(pending))
    if parsed is _NOT_JSON:
        yield from _yaml_documents(pending, source)
    elif parsed is not _BLANK:
        yield parsed


def _split(text: str, start: int) -> list[str]:
    """The text cut at each marker from ``start`` on (a line start), as ``re.split`` of a ``^---`` pattern would."""
    parts = []
    cut = 0
    for marker in _MARKER.finditer(text, start):
        at = marker.start()
        if at == start or text[at - 1] == "\n":
            parts.append(text[cut:at])
            cut = marker.end()
    parts.append(text[cut:])
    return parts


_NOT_JSON = object()
_BLANK = object()


def _as_json(text: str, *, exactly: bool) -> Any:
    """A document as JSON if it is a JSON object (of one line or more), ``_BLANK`` if blank, else ``_NOT_JSON``.

    ``exactly``: orjson reads it as the standard library would (see :func:`jsoncodec.reads_exactly`).
    """
    parsed = jsoncodec.parse_object(text, exactly=exactly)
    if parsed is not None:
        return parsed
    return _NOT_JSON if text.strip() else _BLANK


def _yaml_documents(text: str, source: str) -> Iterator[Any]:
    try:
        for doc in yaml.load_all(text, Loader=_SafeLoader):
            if doc is not None:
                yield doc
    except yaml.YAMLError as exc:
        raise ManifestError(f"{source} is not valid YAML: {str(exc).splitlines()[0]}") from None


def _checked(documents: Iterable[Any], source: str) -> Iterator[Any]:
    for index, doc in enumerate(documents):
        if not isinstance(doc, dict) or "apiVersion" not in doc or "kind" not in doc:
            raise ManifestError(
                f"{source}, document {index + 1}: not a Kubernetes object (apiVersion and kind are required)"
            )
        yield doc
