"""The fields in which two JSON documents differ: for a change's summary and for two end states side by side."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

__all__ = ["ABSENT", "Path", "changed_fields", "dotted", "shown"]

Path = tuple[str | int, ...]


class _Absent:
    """A field that one of the two documents does not have."""

    def __repr__(self) -> str:
        return "(absent)"


ABSENT: Any = _Absent()


def changed_fields(old: Any, new: Any) -> list[tuple[Path, Any, Any]]:
    """The leaves that differ, each with its path and both values (:data:`ABSENT` where one has none).

    Mappings are walked key by key and lists item by item; a value whose type differs is one leaf.
    """
    return list(_walk((), old, new))


def _walk(path: Path, old: Any, new: Any) -> Iterator[tuple[Path, Any, Any]]:
    if isinstance(old, dict) and isinstance(new, dict):
        for key in sorted(old.keys() | new.keys(), key=str):
            yield from _walk((*path, key), old.get(key, ABSENT), new.get(key, ABSENT))
    elif isinstance(old, list) and isinstance(new, list):
        for index in range(max(len(old), len(new))):
            yield from _walk(
                (*path, index),
                old[index] if index < len(old) else ABSENT,
                new[index] if index < len(new) else ABSENT,
            )
    elif old is ABSENT and isinstance(new, dict | list) and new:
        yield from _walk(path, type(new)(), new)  # a new subtree: its leaves, one by one
    elif new is ABSENT and isinstance(old, dict | list) and old:
        yield from _walk(path, old, type(old)())
    elif old != new or type(old) is not type(new):
        yield path, old, new


def dotted(path: Path) -> str:
    """``metadata.labels.app``, ``spec.items[0]``, and keys with dots quoted: ``annotations["kopf.zalando.org/x"]``."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        elif part and all(char.isalnum() or char in "_-" for char in part):
            text += f".{part}" if text else part
        else:
            text += f"[{json.dumps(part)}]"
    return text or "(the whole document)"


def shown(value: Any, limit: int = 200) -> str:
    """A value in one line, as JSON (cut to ``limit`` characters); :data:`ABSENT` as ``(absent)``."""
    if value is ABSENT:
        return "(absent)"
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"
