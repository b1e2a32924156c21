"""Where a schema's rules are, and where their instances are in an object (with the old values they correlate to).

A rule sits on a schema node, reached from the root by steps: object fields, list items (``keyed`` for lists of
``x-kubernetes-list-type: map``, whose items correlate with the stored ones by their keys), and map values.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

__all__ = ["MISSING", "Schema", "Step", "anchor_of", "instances", "nodes", "value_at", "visible_root"]

Schema = Mapping[str, Any]
Step = tuple[str, str]  # ("field", name) | ("items", "") | ("keyed", "key1,key2") | ("values", "")
MISSING: Any = object()


def nodes(
    schema: Schema, steps: tuple[Step, ...] = (), path: str = ""
) -> Iterator[tuple[tuple[Step, ...], str, Schema]]:
    """Every node of the schema: its steps from the root, its path as the CRD's errors name it, the node."""
    yield steps, path, schema
    for key, sub in (schema.get("properties") or {}).items():
        if isinstance(sub, Mapping):
            yield from nodes(sub, (*steps, ("field", key)), f"{path}.properties[{key}]")
    if isinstance(schema.get("items"), Mapping):
        keyed = schema.get("x-kubernetes-list-type") == "map"
        step = ("keyed", ",".join(schema.get("x-kubernetes-list-map-keys") or ())) if keyed else ("items", "")
        yield from nodes(schema["items"], (*steps, step), f"{path}.items")
    if isinstance(schema.get("additionalProperties"), Mapping):
        yield from nodes(schema["additionalProperties"], (*steps, ("values", "")), f"{path}.additionalProperties")


def anchor_of(steps: tuple[Step, ...]) -> tuple[str, ...]:
    """The field names down to the deepest node that exists once per object (before any list or map)."""
    names: list[str] = []
    for kind, name in steps:
        if kind != "field":
            break
        names.append(name)
    return tuple(names)


def value_at(value: Any, names: tuple[str, ...]) -> Any:
    """The value at these fields, or MISSING (a null counts as missing: rules do not see nulls)."""
    for name in names:
        value = value.get(name) if type(value) is dict else None
        if value is None:
            return MISSING
    return value


def visible_root(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The object as a rule on the schema's root sees it: of the metadata, only the name and generateName."""
    metadata = obj.get("metadata") or {}
    return {**obj, "metadata": {key: metadata[key] for key in ("name", "generateName") if key in metadata}}


def instances(
    steps: tuple[Step, ...], value: Any, old: Any, *, required: bool, path: str = ""
) -> Iterator[tuple[str, Any, Any]]:
    """Every instance of the node under ``value``: its path, its value, the correlated old value (or MISSING).

    Old values correlate through object fields, map keys and keyed list items; ``required`` skips the
    instances without one (transition rules run only where there is an old value).
    """
    if value is None or value is MISSING:
        return
    if not steps:
        if not (required and (old is None or old is MISSING)):
            yield path, value, old
        return
    (kind, name), rest = steps[0], steps[1:]
    if kind == "field" and isinstance(value, Mapping) and name in value:
        old_child = old.get(name, MISSING) if isinstance(old, Mapping) else MISSING
        yield from instances(rest, value[name], old_child, required=required, path=f"{path}.{name}" if path else name)
    elif kind in ("items", "keyed") and isinstance(value, list):
        keys = name.split(",")
        olds = _by_keys(old, keys) if kind == "keyed" and isinstance(old, list) else {}
        for index, item in enumerate(value):
            old_item = olds.get(_keys_of(item, keys), MISSING) if olds else MISSING
            yield from instances(rest, item, old_item, required=required, path=f"{path}[{index}]")
    elif kind == "values" and isinstance(value, Mapping):
        for key, item in value.items():
            old_item = old.get(key, MISSING) if isinstance(old, Mapping) else MISSING
            yield from instances(rest, item, old_item, required=required, path=f"{path}[{key}]")


def _keys_of(item: Any, keys: list[str]) -> str:
    return json.dumps([item.get(key) for key in keys] if isinstance(item, Mapping) else item)


def _by_keys(items: list[Any], keys: list[str]) -> dict[str, Any]:
    """The items of a keyed list (``x-kubernetes-list-type: map``) by their keys, to correlate old with new."""
    return {_keys_of(item, keys): item for item in items}
