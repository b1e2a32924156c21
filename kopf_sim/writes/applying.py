"""
Server-side apply and field ownership (``metadata.managedFields``).

Ownership is kept as sets of field paths. A path is a tuple of FieldsV1 path elements, exactly as
they appear as keys in ``fieldsV1``: ``f:<field>`` for a map field, ``k:<json>`` for an item of an
associative list (a list with a merge key), ``v:<json>`` for a value of a set (a primitive list
with the ``merge`` strategy), ``i:<index>`` for an index (only read, never produced). All other
lists are atomic: they are owned as a whole. Maps are always granular.

The functions are pure: they never mutate their inputs and return new objects.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any, Final, Literal

from kopf_sim.kube.objects import clone
from kopf_sim.writes.mergekeys import KEY_DEFAULTS, list_strategy, metadata_list_strategy
from kopf_sim.writes.patching import PatchError

Path = tuple[str, ...]
FieldSet = set[Path]

BEFORE_FIRST_APPLY: Final = "before-first-apply"

# Fields never tracked: the identity and the server-owned metadata.
_UNTRACKED_ROOT: Final = frozenset({"apiVersion", "kind"})
_UNTRACKED_META: Final = frozenset(
    {
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "managedFields",
        "selfLink",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
    }
)
# Of those, the fields that an applied configuration can never change (name & co. can be set on create).
_SERVER_META: Final = _UNTRACKED_META - {"name", "namespace"}


class ApplyConflictError(Exception):
    """
    An apply that would change fields owned by other managers; the apiserver's 409 Conflict.

    ``conflicts`` are pairs of a manager's name and a field path as the apiserver prints it
    (``.spec.replicas``); ``message`` is the apiserver's text; ``causes`` fit a Status' details.
    """

    def __init__(self, conflicts: list[tuple[str, str]], message: str, causes: list[dict[str, str]]) -> None:
        super().__init__(message)
        self.conflicts = conflicts
        self.message = message
        self.causes = causes


# ----------------------------------------------------------------------------------------------------
# The schema-aware shape of values: which lists are associative, sets, or atomic.
# ----------------------------------------------------------------------------------------------------

Keys = tuple[str, ...]  # the list-map keys of an associative list
ListKind = tuple[Literal["map"], Keys] | tuple[Literal["set"], None] | tuple[Literal["atomic"], None]


def _list_kind(kind_key: str | None, spath: Path) -> ListKind:
    strategy = list_strategy(kind_key, spath) if kind_key else None
    if strategy is None and spath[:1] == ("metadata",):
        strategy = metadata_list_strategy(spath)  # custom resources have the same ObjectMeta
    if strategy is None or not strategy.merges:
        return ("atomic", None)
    if strategy.merge_key is None:
        return ("set", None)
    return ("map", strategy.list_map_keys)


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _key_value(item: dict[str, Any], key: str) -> Any:
    """An item's value of a list-map key, or the key's default if the item omits it."""
    value = item.get(key)
    return KEY_DEFAULTS.get(key) if value is None else value


def _item_element(item: Any, keys: Keys) -> str | None:
    """The ``k:`` element of an associative list's item, or None if the item lacks a key."""
    if not isinstance(item, dict):
        return None
    values = {key: _key_value(item, key) for key in keys}
    if any(value is None for value in values.values()):
        return None
    return "k:" + _json(values)


def _keyed_items(items: list[Any], key: Keys) -> dict[str, Any] | None:
    """Index the items by their ``k:`` elements; None if any item cannot be keyed (then: atomic)."""
    index: dict[str, Any] = {}
    for item in items:
        element = _item_element(item, key)
        if element is None:
            return None
        index.setdefault(element, item)
    return index


def _trackable(obj: Mapping[str, Any] | None) -> dict[str, Any]:
    """A shallow copy of an object without the untracked fields."""
    if not obj:
        return {}
    result = {key: value for key, value in obj.items() if key not in _UNTRACKED_ROOT}
    metadata = result.get("metadata")
    if isinstance(metadata, dict):
        metadata = {key: value for key, value in metadata.items() if key not in _UNTRACKED_META}
        if metadata:
            result["metadata"] = metadata
        else:
            del result["metadata"]
    return result


class _Node:
    """The marker of a list item in the collected paths: it has no value to compare."""


_NODE: Final = _Node()


def _collect(value: Any, fpath: Path, spath: Path, kind_key: str | None, out: dict[Path, Any]) -> None:
    """
    Put into ``out`` every owned path of ``value`` with the value there: leaves (scalars, atomic
    lists, empty maps and lists) with their values, list items (``k:``) with :data:`_NODE`.
    Non-empty maps are not owned by themselves, only through their fields, as in the real API.
    """
    if isinstance(value, dict):
        if not value:
            out[fpath] = value
        for key, sub in value.items():
            # The leaves are handled here, without a call: most fields are scalars.
            if isinstance(sub, (dict, list)) and sub:
                _collect(sub, (*fpath, f"f:{key}"), (*spath, key), kind_key, out)
            else:
                out[(*fpath, f"f:{key}")] = sub
    elif isinstance(value, list) and value:
        kind, key = _list_kind(kind_key, spath)
        index = _keyed_items(value, key) if kind == "map" and key else None
        if index is not None:
            for element, item in index.items():
                out[(*fpath, element)] = _NODE
                for field, sub in item.items():
                    _collect(sub, (*fpath, element, f"f:{field}"), (*spath, field), kind_key, out)
        elif kind == "set":
            for item in value:
                out[(*fpath, "v:" + _json(item))] = item
        else:
            out[fpath] = value
    else:
        out[fpath] = value


def _fields_of(obj: Mapping[str, Any] | None, kind_key: str | None) -> dict[Path, Any]:
    out: dict[Path, Any] = {}
    trackable = _trackable(obj)
    if trackable:
        _collect(trackable, (), (), kind_key, out)
    return out


def _diff(
    old: Any, new: Any, fpath: Path, spath: Path, kind_key: str | None, changed: dict[Path, Any], removed: FieldSet
) -> None:
    """Collect the paths added or modified in ``new`` and the (topmost) paths gone from ``old``."""
    if old == new:
        return
    if isinstance(old, dict) and isinstance(new, dict) and ((old and new) or not fpath):
        for key, sub in new.items():
            previous = old.get(key, _NODE)
            if previous is _NODE:
                _collect(sub, (*fpath, f"f:{key}"), (*spath, key), kind_key, changed)
            elif previous != sub:  # the equal fields (most of them) are skipped without a call
                _diff(previous, sub, (*fpath, f"f:{key}"), (*spath, key), kind_key, changed, removed)
        removed.update((*fpath, f"f:{key}") for key in old if key not in new)
        return

    if isinstance(old, list) and isinstance(new, list) and old and new:
        kind, key = _list_kind(kind_key, spath)
        if kind == "set":
            old_values = {_json(item) for item in old}
            new_values = {_json(item): item for item in new}
            changed.update(((*fpath, f"v:{v}"), x) for v, x in new_values.items() if v not in old_values)
            removed.update((*fpath, f"v:{v}") for v in old_values if v not in new_values)
            return
        old_index = _keyed_items(old, key) if kind == "map" and key else None
        new_index = _keyed_items(new, key) if kind == "map" and key else None
        if old_index is not None and new_index is not None:
            for element, item in new_index.items():
                if element in old_index:
                    _diff(old_index[element], item, (*fpath, element), spath, kind_key, changed, removed)
                else:
                    _collect(item, (*fpath, element), spath, kind_key, changed)
                    changed[(*fpath, element)] = _NODE
            removed.update((*fpath, element) for element in old_index if element not in new_index)
            return

    # Scalars, atomic lists, changes of shape: the old subtree is gone, the new one is owned anew.
    if isinstance(old, (dict, list)):
        removed.add(fpath)
    _collect(new, fpath, spath, kind_key, changed)


# ----------------------------------------------------------------------------------------------------
# FieldsV1 encoding, navigation in objects by field paths, conflict messages.
# ----------------------------------------------------------------------------------------------------


def decode_fields(fields_v1: Any) -> FieldSet:
    """Parse a ``fieldsV1`` tree into a set of paths; ``{".": {}}`` marks a node owned by itself."""
    out: FieldSet = set()
    stack: list[tuple[Path, Any]] = [((), fields_v1)]
    while stack:
        prefix, tree = stack.pop()
        if not isinstance(tree, dict):
            continue
        for element, sub in tree.items():
            if element == ".":
                out.add(prefix)
            elif isinstance(sub, dict) and sub:
                stack.append(((*prefix, element), sub))
            else:
                out.add((*prefix, element))
    out.discard(())
    return out


def encode_fields(paths: Iterable[Path]) -> dict[str, Any]:
    """Render a set of paths as a ``fieldsV1`` tree, with sorted keys and ``.`` first."""
    trie: dict[str, Any] = {}
    members: FieldSet = set()
    for path in paths:
        node = trie
        for element in path:
            node = node.setdefault(element, {})
        members.add(path)

    def render(node: dict[str, Any], path: Path) -> dict[str, Any]:
        rendered: dict[str, Any] = {".": {}} if node and path in members else {}
        for element in sorted(node):
            rendered[element] = render(node[element], (*path, element))
        return rendered

    return render(trie, ())


# Most writes leave most managers as they were, and the writers own the same fields write after
# write: both directions of the FieldsV1 conversion are memoized. A tree is recognised by identity
# (the stored objects keep their entries from version to version), and confirmed by equality with
# a private snapshot, so that a tree changed in place after caching is never misread. The rendered
# trees are handed out as copies: nobody else can ever hold (and change) a cached one.
_CACHE_LIMIT: Final = 4096
_decoded: dict[int, tuple[Any, dict[str, Any], frozenset[Path]]] = {}
_encoded: dict[frozenset[Path], tuple[dict[str, Any], bool]] = {}


def _remember(cache: dict[Any, Any], key: Any, value: Any) -> None:
    """Put into a bounded cache, emptied when full: cheaper than any eviction, a miss only recomputes."""
    if len(cache) >= _CACHE_LIMIT:
        cache.clear()
    cache[key] = value


def _decode_cached(fields_v1: Any) -> frozenset[Path]:
    """:func:`decode_fields`, memoized for the trees seen (or rendered) before."""
    hit = _decoded.get(id(fields_v1))
    if hit is not None and hit[0] is fields_v1 and fields_v1 == hit[1]:
        return hit[2]
    paths = frozenset(decode_fields(fields_v1))
    if isinstance(fields_v1, dict):
        _remember(_decoded, id(fields_v1), (fields_v1, clone(fields_v1), paths))
    return paths


def _encode_cached(paths: frozenset[Path]) -> dict[str, Any]:
    """:func:`encode_fields`, memoized; the result is a private copy, known to decode to ``paths``."""
    hit = _encoded.get(paths)
    if hit is None:
        tree = encode_fields(paths)
        hit = tree, decode_fields(tree) == paths  # not so for the root path: it is never decoded
        _remember(_encoded, paths, hit)
    tree, round_trips = hit
    result: dict[str, Any] = clone(tree)
    if round_trips:
        _remember(_decoded, id(result), (result, tree, paths))
    return result


def format_path(path: Path) -> str:
    """A path as the apiserver prints it: ``.spec.containers[name="x"].ports[containerPort=80]``."""
    parts: list[str] = []
    for element in path:
        kind, _, raw = element.partition(":")
        if kind == "f":
            parts.append(f".{raw}")
        elif kind == "k":
            keys = json.loads(raw)
            parts.append("[" + ",".join(f"{k}={_json(v)}" for k, v in keys.items()) + "]")
        elif kind == "v":
            parts.append(f"[={raw}]")
        else:
            parts.append(f"[{raw}]")
    return "".join(parts)


def _step(container: Any, element: str) -> tuple[bool, Any, Any]:
    """One step down a path: (found, the value, a locator for deletion: a key or an index)."""
    kind, _, raw = element.partition(":")
    if kind == "f":
        if isinstance(container, dict) and raw in container:
            return True, container[raw], raw
    elif isinstance(container, list):
        if kind == "i":
            index = int(raw)
            if 0 <= index < len(container):
                return True, container[index], index
        elif kind in ("k", "v"):
            target = json.loads(raw)
            for index, item in enumerate(container):
                if kind == "v" and _json(item) == _json(target):
                    return True, item, index
                if (
                    kind == "k"
                    and isinstance(item, dict)
                    and all(_json(_key_value(item, k)) == _json(v) for k, v in target.items())
                ):
                    return True, item, index
    return False, None, None


def _resolve(obj: Any, path: Path) -> tuple[bool, Any]:
    value = obj
    for element in path:
        found, value, _ = _step(value, element)
        if not found:
            return False, None
    return True, value


def _delete(obj: Any, path: Path) -> bool:
    """Delete the value at ``path`` in place; return whether it was there."""
    found, parent = _resolve(obj, path[:-1])
    if not found:
        return False
    found, _, locator = _step(parent, path[-1])
    if found:
        del parent[locator]
    return found


def _with_ancestors(paths: Iterable[Path]) -> FieldSet:
    closure: FieldSet = set()
    for path in paths:
        for length in range(len(path), 0, -1):
            prefix = path[:length]
            if prefix in closure:
                break
            closure.add(prefix)
    return closure


def _without_subtrees(paths: FieldSet, removed: FieldSet) -> FieldSet:
    """Drop the paths that are in ``removed`` or under any of them."""
    if not removed:
        return paths
    return {path for path in paths if not any(path[:n] in removed for n in range(1, len(path) + 1))}


# ----------------------------------------------------------------------------------------------------
# Managed fields entries.
# ----------------------------------------------------------------------------------------------------


@dataclass
class _Manager:
    manager: str
    operation: str
    api_version: str
    subresource: str | None
    time: str | None
    fields: FieldSet
    original: dict[str, Any] | None = None  # the entry as it came, reused if nothing changed
    original_fields: AbstractSet[Path] | None = None  # (shared with the decoding cache: never changed)

    @property
    def identity(self) -> tuple[str, str, str, str]:
        # Appliers keep one entry whatever version they apply with; updaters have one per version.
        api_version = "" if self.operation == "Apply" else self.api_version
        return (self.manager, self.operation, api_version, self.subresource or "")

    def describe(self) -> str:
        """The manager as conflict messages name it, e.g. ``"kubectl" using apps/v1``."""
        text = json.dumps(self.manager)
        if self.subresource:
            text += f" with subresource {json.dumps(self.subresource)}"
        if self.operation == "Update":
            text += f" using {self.api_version}"
        return text

    def render(self) -> dict[str, Any]:
        if self.original is not None and self.fields == self.original_fields:
            return self.original
        entry: dict[str, Any] = {"manager": self.manager, "operation": self.operation, "apiVersion": self.api_version}
        if self.time is not None:
            entry["time"] = self.time
        entry["fieldsType"] = "FieldsV1"
        entry["fieldsV1"] = _encode_cached(frozenset(self.fields))
        if self.subresource:
            entry["subresource"] = self.subresource
        return entry


def _parse_managers(entries: Any) -> list[_Manager]:
    managers: list[_Manager] = []
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, dict) or not entry:
            continue
        fields = _decode_cached(entry.get("fieldsV1"))
        managers.append(
            _Manager(
                manager=str(entry.get("manager", "")),
                operation=str(entry.get("operation", "Update")),
                api_version=str(entry.get("apiVersion", "")),
                subresource=entry.get("subresource") or None,
                time=entry.get("time"),
                fields=set(fields),
                original=entry,
                original_fields=fields,
            )
        )
    return managers


def _render_managers(managers: list[_Manager]) -> list[dict[str, Any]]:
    """Drop the empty entries and sort as the apiserver does: appliers first, then by time."""
    kept = [m for m in managers if m.fields]
    kept.sort(key=lambda m: (m.operation, m.time or "", m.manager, m.api_version, m.subresource or ""))
    return [m.render() for m in kept]


def _with_managed_fields(obj: dict[str, Any], entries: list[dict[str, Any]]) -> dict[str, Any]:
    """A shallow copy of ``obj`` with new ``metadata.managedFields`` (absent if empty)."""
    result = dict(obj)
    metadata = dict(result.get("metadata") or {})
    if entries:
        metadata["managedFields"] = entries
    else:
        metadata.pop("managedFields", None)
    result["metadata"] = metadata
    return result


def _managed_fields_of(obj: Mapping[str, Any] | None) -> Any:
    metadata = obj.get("metadata") if obj else None
    return metadata.get("managedFields") if isinstance(metadata, dict) else None


# ----------------------------------------------------------------------------------------------------
# Updates (create, update, patch): the writer takes over what it has changed.
# ----------------------------------------------------------------------------------------------------


def track_update(
    old: dict[str, Any] | None,
    new: dict[str, Any],
    *,
    manager: str,
    kind_key: str | None,
    api_version: str,
    now: str,
    operation: str = "Update",
    subresource: str | None = None,
) -> dict[str, Any]:
    """
    Record a non-apply write: ``manager`` owns what it created or changed, others lose it.

    The managed fields come from ``old``, unless the writer sent its own (then they are honoured,
    as the apiserver does); ``[{}]`` resets them to nothing. A write that changes nothing keeps
    the managed fields as they were (so that the store can see a no-op).
    """
    incoming = _managed_fields_of(new)
    previous = _managed_fields_of(old)
    if isinstance(incoming, list) and incoming and all(entry == {} for entry in incoming):
        return _with_managed_fields(new, [])
    if incoming is None or incoming == [] or incoming == previous:
        baseline = previous
    else:
        baseline = incoming

    changed: dict[Path, Any] = {}
    removed: FieldSet = set()
    if old is None:
        changed = _fields_of(new, kind_key)
    else:
        _diff(_trackable(old), _trackable(new), (), (), kind_key, changed, removed)

    managers = _parse_managers(baseline)
    if changed or removed:
        identity = _Manager(manager, operation, api_version, subresource, None, set()).identity
        owned = set(changed)
        writer: _Manager | None = None
        for entry in managers:
            entry.fields = _without_subtrees(entry.fields, removed)
            if entry.identity == identity:
                writer = entry
            else:
                entry.fields -= owned
        if writer is None:
            writer = _Manager(manager, operation, api_version, subresource, now, set())
            managers.append(writer)
        writer.fields |= owned
        writer.time = now
        writer.original = None  # the time changes even if the fields do not
    return _with_managed_fields(new, _render_managers(managers))


# ----------------------------------------------------------------------------------------------------
# Server-side apply.
# ----------------------------------------------------------------------------------------------------


def _without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


class TypedPatchError(PatchError):
    """An applied configuration that breaks the kind's list keys: the caller names the object in the message."""


def _validate_keys(config: Any, kind_key: str | None) -> None:
    """The applied associative lists must have the keys in all items, and no duplicates (all problems told)."""
    problems: list[str] = []
    _key_problems(config, (), (), kind_key, problems)
    if len(problems) == 1:
        raise TypedPatchError(problems[0], code=400)
    if problems:
        raise TypedPatchError("errors:\n  " + "\n  ".join(problems), code=400)


def _key_problems(value: Any, spath: Path, fpath: Path, kind_key: str | None, problems: list[str]) -> None:
    if isinstance(value, dict):
        for key, sub in value.items():
            _key_problems(sub, (*spath, key), (*fpath, f"f:{key}"), kind_key, problems)
    elif isinstance(value, list):
        kind, keys = _list_kind(kind_key, spath)
        seen: set[str] = set()
        for index, item in enumerate(value):
            if kind == "map" and keys:
                element = _item_element(item, keys)
                if element is None:
                    missing = next(k for k in keys if not isinstance(item, dict) or _key_value(item, k) is None)
                    problems.append(
                        f"{format_path(fpath)}: element {index}: associative list with keys "
                        f"has an element that omits key field {json.dumps(missing)}"
                    )
                elif element in seen:
                    problems.append(f"{format_path(fpath)}: duplicate entries for key {format_path((element,))}")
                else:
                    seen.add(element)
                    _key_problems(item, spath, (*fpath, element), kind_key, problems)


def _merge_into(live: Any, config: Any, spath: Path, kind_key: str | None) -> Any:
    """Merge the applied configuration into a private copy of the live value (mutated in place)."""
    if isinstance(live, dict) and isinstance(config, dict):
        for key, sub in config.items():
            if key in live:
                live[key] = _merge_into(live[key], sub, (*spath, key), kind_key)
            else:
                live[key] = clone(sub)
        return live
    if isinstance(live, list) and isinstance(config, list):
        kind, key = _list_kind(kind_key, spath)
        if kind == "set":
            known = {_json(item) for item in live}
            live.extend(clone(item) for item in config if _json(item) not in known)
            return live
        if kind == "map" and key and _keyed_items(live, key) is not None:
            positions = {_item_element(item, key): index for index, item in reversed(list(enumerate(live)))}
            for item in config:
                index = positions.get(_item_element(item, key))
                if index is None:
                    live.append(clone(item))
                else:
                    live[index] = _merge_into(live[index], item, spath, kind_key)
            return live
    return clone(config)


def _iter_conflicts(
    managers: list[_Manager], applier: _Manager, applied: dict[Path, Any], live: Any
) -> Iterator[tuple[_Manager, Path]]:
    """Fields of other managers that the apply would set to a different value."""
    for entry in managers:
        if entry is applier:
            continue
        for path in sorted(entry.fields & applied.keys()):
            value = applied[path]
            if isinstance(value, _Node):
                continue
            found, current = _resolve(live, path)
            if found and _json(current) != _json(value):
                yield entry, path


def _conflict_error(conflicts: list[tuple[_Manager, Path]]) -> ApplyConflictError:
    pairs = [(entry.manager, format_path(path)) for entry, path in conflicts]
    causes = [
        {"reason": "FieldManagerConflict", "message": f"conflict with {entry.describe()}", "field": format_path(path)}
        for entry, path in conflicts
    ]
    if len(conflicts) == 1:
        entry, path = conflicts[0]
        message = f"Apply failed with 1 conflict: conflict with {entry.describe()}: {format_path(path)}"
    else:
        lines: list[str] = []
        by_manager: dict[tuple[str, str, str, str], list[tuple[_Manager, Path]]] = {}
        for entry, path in conflicts:
            by_manager.setdefault(entry.identity, []).append((entry, path))
        for identity in sorted(by_manager):
            group = by_manager[identity]
            lines.append(f"conflicts with {group[0][0].describe()}:")
            lines.extend(f"- {format_path(path)}" for _, path in group)
        message = f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(lines)
    return ApplyConflictError(pairs, message, causes)


def _is_item_key(path: Path) -> bool:
    """Whether the path is a key field of an associative list's item (never pruned alone)."""
    if len(path) < 2 or not path[-1].startswith("f:") or not path[-2].startswith("k:"):
        return False
    return path[-1][2:] in json.loads(path[-2][2:])


def _prune(obj: dict[str, Any], dropped: FieldSet, keep: FieldSet) -> None:
    """
    Remove the fields that the applier dropped from its configuration, unless someone still owns
    them or anything under them; then remove the maps and lists emptied by that.
    """
    kept = _with_ancestors(keep)
    for path in sorted(dropped, key=len, reverse=True):
        if path in kept or _is_item_key(path) or not _delete(obj, path):
            continue
        for length in range(len(path) - 1, 0, -1):
            ancestor = path[:length]
            found, value = _resolve(obj, ancestor)
            if not found or value or not isinstance(value, (dict, list)) or ancestor in kept:
                break
            _delete(obj, ancestor)


def server_side_apply(
    live: dict[str, Any] | None,
    applied: dict[str, Any],
    *,
    manager: str,
    force: bool,
    kind_key: str | None,
    api_version: str,
    now: str,
) -> dict[str, Any]:
    """
    Apply a configuration as ``manager`` (``live=None`` creates) and return the new object.

    The configuration is merged into the live object; the fields it sets become owned by the
    applier; the fields the applier owned before but dropped now are removed unless co-owned.
    Setting a field owned by another manager to a different value is a conflict, unless forced:
    then the ownership moves to the applier. The caller strips the status beforehand if needed.
    """
    if not isinstance(applied, dict):
        raise PatchError("the applied configuration must be a JSON object", code=400)
    config = _without_nulls(applied)
    metadata = config.get("metadata")
    untouchable = _SERVER_META if live is None else _UNTRACKED_META
    if isinstance(metadata, dict):
        config["metadata"] = {key: value for key, value in metadata.items() if key not in untouchable}
    if live is not None:
        config = {key: value for key, value in config.items() if key not in _UNTRACKED_ROOT}
    _validate_keys(config, kind_key)

    managers = _parse_managers(_managed_fields_of(live))
    if live is not None and not managers:
        legacy = set(_fields_of(live, kind_key))
        if legacy:
            managers.append(_Manager(BEFORE_FIRST_APPLY, "Update", api_version, None, now, legacy))

    applied_fields = _fields_of(config, kind_key)
    identity = _Manager(manager, "Apply", api_version, None, None, set()).identity
    applier = next((entry for entry in managers if entry.identity == identity), None)
    if applier is None:
        applier = _Manager(manager, "Apply", api_version, None, now, set())
        managers.append(applier)
    previous = set(applier.fields)

    conflicts = list(_iter_conflicts(managers, applier, applied_fields, live or {}))
    if conflicts and not force:
        raise _conflict_error(conflicts)
    for entry, path in conflicts:
        entry.fields.discard(path)

    result = _merge_into(clone(live) if live is not None else {}, config, (), kind_key)
    applier.fields = set(applied_fields)
    dropped = previous - applier.fields
    if dropped:
        keep = set(applier.fields).union(*(entry.fields for entry in managers if entry is not applier))
        _prune(result, dropped, keep)

    if (
        live is not None
        and not conflicts
        and applier.original is not None
        and applier.fields == previous
        and applier.api_version == api_version
        and _trackable(result) == _trackable(live)
    ):
        unchanged: dict[str, Any] = clone(live)  # a no-op apply changes nothing, not even the time
        return unchanged
    applier.api_version = api_version
    applier.time = now
    applier.original = None
    return _with_managed_fields(result, _render_managers(managers))
