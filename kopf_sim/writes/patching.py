"""
The three patch formats of the Kubernetes API: JSON merge patch, JSON patch, strategic merge patch.

All functions are pure: they never mutate their inputs and return fresh values, so the store can
keep the old object until the new one is validated. Errors are :class:`PatchError` with a message
close to the real apiserver's, since API clients show it to users.
"""

from __future__ import annotations

import json
from typing import Any, Final

import jsonpatch
import jsonpointer

from kopf_sim.kube.objects import clone
from kopf_sim.writes.mergekeys import ListStrategy, list_strategy


class PatchError(ValueError):
    """
    A patch that cannot be decoded (``code=400``, BadRequest) or applied (``code=422``, Invalid).

    The message is meant for the ``message`` field of the Status returned to API clients.
    """

    def __init__(self, message: str, *, code: int = 422) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


# ----------------------------------------------------------------------------------------------------
# JSON merge patch (RFC 7386)
# ----------------------------------------------------------------------------------------------------


def apply_merge_patch(target: Any, patch: Any) -> Any:
    """Apply an RFC 7386 merge patch: maps merge recursively, ``null`` deletes, the rest replaces.

    As the API server does: any JSON as the target and the patch (a non-object patch replaces the target
    whole), and the result is a fresh value that shares nothing with either (the store keeps the old object).
    """
    if not isinstance(patch, dict):
        return clone(patch)
    result = clone(target) if isinstance(target, dict) else {}
    return _merge_patch_into(result, patch)


def _merge_patch_into(result: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict):
            current = result.get(key)
            result[key] = _merge_patch_into(current if isinstance(current, dict) else {}, value)
        else:
            result[key] = clone(value)
    return result


# ----------------------------------------------------------------------------------------------------
# JSON patch (RFC 6902)
# ----------------------------------------------------------------------------------------------------

_JSON_PATCH_OPS: Final = frozenset({"add", "remove", "replace", "move", "copy", "test"})


def apply_json_patch(target: Any, patch: Any) -> Any:
    """
    Apply an RFC 6902 JSON patch, atomically: either all operations apply, or none.

    The operations are applied one by one to a private copy, so that a failure can name
    the operation and the path at fault, as the apiserver does.
    """
    if not isinstance(patch, list):
        kind = "object" if isinstance(patch, dict) else type(patch).__name__
        raise PatchError(f"json: cannot unmarshal {kind} into Go value of type jsonpatch.Patch", code=400)
    for operation in patch:
        _validate_json_patch_operation(operation)

    document = clone(target)
    for operation in patch:
        document = _apply_json_patch_operation(document, operation)
    return document


def _validate_json_patch_operation(operation: Any) -> None:
    """Reject the undecodable operations early, before anything is applied (a 400, not a 422)."""
    if not isinstance(operation, dict):
        kind = type(operation).__name__
        raise PatchError(f"json: cannot unmarshal {kind} into a patch operation", code=400)
    op = operation.get("op")
    if op not in _JSON_PATCH_OPS:
        raise PatchError(f"Unexpected kind: {op}", code=400)
    if not isinstance(operation.get("path"), str):
        raise PatchError(f"{op} operation is missing a path", code=400)
    if op in {"add", "replace", "test"} and "value" not in operation:
        raise PatchError(f"{op} operation is missing a value", code=400)
    if op in {"move", "copy"} and not isinstance(operation.get("from"), str):
        raise PatchError(f"{op} operation is missing a from path", code=400)


def _apply_json_patch_operation(document: Any, operation: dict[str, Any]) -> Any:
    op: str = operation["op"]
    path: str = operation["path"]
    try:
        return jsonpatch.JsonPatch([operation]).apply(document, in_place=True)
    except jsonpatch.JsonPatchTestFailed:
        raise PatchError(f"testing value {path} failed: test failed") from None
    except jsonpatch.InvalidJsonPatch as e:
        raise PatchError(f"invalid {op} operation: {e}", code=400) from None
    except (jsonpatch.JsonPatchConflict, jsonpointer.JsonPointerException, KeyError, IndexError, TypeError):
        subject = operation["from"] if op in {"move", "copy"} else path
        raise PatchError(f'{op} operation does not apply: doc is missing path: "{subject}": missing value') from None


# ----------------------------------------------------------------------------------------------------
# Strategic merge patch
# ----------------------------------------------------------------------------------------------------

_PATCH: Final = "$patch"
_RETAIN_KEYS: Final = "$retainKeys"
_DELETE_FROM_PRIMITIVE_LIST: Final = "$deleteFromPrimitiveList/"
_SET_ELEMENT_ORDER: Final = "$setElementOrder/"


class _Deleted:
    """A marker for a map removed by ``$patch: delete``, to be dropped by the enclosing map."""


_DELETED: Final = _Deleted()


def apply_strategic_merge_patch(target: Any, patch: Any, kind_key: str | None) -> Any:
    """
    Apply a strategic merge patch as the apiserver does for built-in kinds.

    Maps merge recursively and ``null`` deletes a key. Lists merge only if the kind's metadata
    (:mod:`kopf_sim.writes.mergekeys`) says so: by merge key for lists of maps, as a union for primitive
    lists; all other lists are replaced. The directives ``$patch``, ``$retainKeys``,
    ``$deleteFromPrimitiveList/<field>`` and ``$setElementOrder/<field>`` are honoured.
    """
    if not isinstance(patch, dict):
        raise PatchError("strategic merge patch must be a JSON object", code=400)
    original = clone(target) if isinstance(target, dict) else {}
    result = _smp_map(original, patch, (), kind_key)
    return {} if isinstance(result, _Deleted) else result


def _smp_map(
    original: dict[str, Any],
    patch: dict[str, Any],
    path: tuple[str, ...],
    kind_key: str | None,
) -> dict[str, Any] | _Deleted:
    """Merge ``patch`` into ``original`` (a private copy, mutated in place) at a map's ``path``."""
    directive = patch.get(_PATCH)
    if directive == "delete":
        return _DELETED
    if directive == "replace":
        original = {}
    elif directive not in (None, "merge"):
        raise PatchError(f"Unknown patch type: {directive} in map: {patch}")

    if _RETAIN_KEYS in patch:
        retained = patch[_RETAIN_KEYS]
        if not isinstance(retained, list) or not all(isinstance(key, str) for key in retained):
            raise PatchError(f"invalid {_RETAIN_KEYS} directive, expected a list of strings: {retained}")
        original = {key: value for key, value in original.items() if key in retained}

    for key, values in patch.items():
        if key.startswith(_DELETE_FROM_PRIMITIVE_LIST):
            field = key[len(_DELETE_FROM_PRIMITIVE_LIST) :]
            if not isinstance(values, list):
                raise PatchError(f"invalid {key} directive, expected a list: {values}")
            current = original.get(field)
            if isinstance(current, list):
                original[field] = [item for item in current if item not in values]

    for key, value in patch.items():
        if key in (_PATCH, _RETAIN_KEYS) or key.startswith((_DELETE_FROM_PRIMITIVE_LIST, _SET_ELEMENT_ORDER)):
            continue
        field_path = (*path, key)
        current = original.get(key)
        if value is None:
            original.pop(key, None)
        elif isinstance(value, dict):
            merged = _smp_map(current if isinstance(current, dict) else {}, value, field_path, kind_key)
            if isinstance(merged, _Deleted):
                original.pop(key, None)
            else:
                original[key] = merged
        elif isinstance(value, list):
            strategy = list_strategy(kind_key, field_path) if kind_key else None
            original[key] = _smp_list(
                current if isinstance(current, list) else [], value, field_path, kind_key, strategy
            )
        else:
            original[key] = value

    for key, order in patch.items():
        if key.startswith(_SET_ELEMENT_ORDER):
            field = key[len(_SET_ELEMENT_ORDER) :]
            if not isinstance(order, list):
                raise PatchError(f"invalid {key} directive, expected a list: {order}")
            current = original.get(field)
            if isinstance(current, list):
                strategy = list_strategy(kind_key, (*path, field)) if kind_key else None
                original[field] = _reorder(current, order, strategy.merge_key if strategy else None)

    return original


def _smp_list(
    original: list[Any],
    patch: list[Any],
    path: tuple[str, ...],
    kind_key: str | None,
    strategy: ListStrategy | None,
) -> list[Any]:
    """Merge a patch list into the original list according to the field's strategy."""
    if strategy is None or not strategy.merges:
        copied: list[Any] = clone(patch)
        return copied
    if strategy.merge_key is None:
        return _smp_primitive_list(original, patch, path)
    return _smp_keyed_list(original, patch, path, kind_key, strategy.merge_key)


def _smp_primitive_list(original: list[Any], patch: list[Any], path: tuple[str, ...]) -> list[Any]:
    """A ``merge`` list of primitives is a set: the union in the original order, new values last."""
    result = list(original)
    for item in patch:
        if isinstance(item, (dict, list)):
            raise PatchError(f"list {'.'.join(path)} expects primitive values, got: {item}")
        if item not in result:
            result.append(item)
    return result


def _smp_keyed_list(
    original: list[Any],
    patch: list[Any],
    path: tuple[str, ...],
    kind_key: str | None,
    merge_key: str,
) -> list[Any]:
    """A ``merge`` list of maps: items are matched by the merge key and merged, or appended."""
    replace = False
    deleted: list[Any] = []
    items: list[dict[str, Any]] = []
    for item in patch:
        if not isinstance(item, dict):
            raise PatchError(f"list {'.'.join(path)} expects maps with merge key {merge_key!r}, got: {item}")
        directive = item.get(_PATCH)
        if directive is None:
            if merge_key not in item:
                raise PatchError(f"map: {item} does not contain declared merge key: {merge_key}")
            items.append(item)
        elif directive == "replace":
            replace = True
        elif directive == "delete":
            if merge_key not in item:
                raise PatchError(f"delete directive {item} does not contain declared merge key: {merge_key}")
            deleted.append(item[merge_key])
        elif directive == "merge":
            raise PatchError("merging lists cannot yet be specified in the patch")
        else:
            raise PatchError(f"Unknown patch type: {directive} in map: {item}")

    if replace:
        return [_smp_item({}, item, path, kind_key) for item in items]

    result = [item for item in original if not (isinstance(item, dict) and item.get(merge_key) in deleted)]
    for item in items:
        index = _find_by_key(result, merge_key, item[merge_key])
        if index is None:
            result.append(_smp_item({}, item, path, kind_key))
        else:
            current = result[index]
            result[index] = _smp_item(current if isinstance(current, dict) else {}, item, path, kind_key)
    return result


def _smp_item(
    original: dict[str, Any], item: dict[str, Any], path: tuple[str, ...], kind_key: str | None
) -> dict[str, Any]:
    merged = _smp_map(original, item, path, kind_key)
    return {} if isinstance(merged, _Deleted) else merged


def _find_by_key(items: list[Any], merge_key: str, value: Any) -> int | None:
    for index, item in enumerate(items):
        if isinstance(item, dict) and merge_key in item and item[merge_key] == value:
            return index
    return None


def _reorder(items: list[Any], order: list[Any], merge_key: str | None) -> list[Any]:
    """
    Apply ``$setElementOrder``: the listed items follow the given order; the unlisted ("server-only")
    items stay in their slots, the listed ones fill the remaining slots in the given order.
    """
    if merge_key is None and order and all(isinstance(entry, dict) and len(entry) == 1 for entry in order):
        merge_key = next(iter(order[0]))  # unknown metadata: infer the key from the order entries

    def identity(item: Any) -> str:
        if isinstance(item, dict) and merge_key is not None:
            return json.dumps(item.get(merge_key), sort_keys=True)
        return json.dumps(item, sort_keys=True)

    ranks: dict[str, int] = {}
    for rank, entry in enumerate(order):
        ranks.setdefault(identity(entry), rank)

    slots = [index for index, item in enumerate(items) if identity(item) in ranks]
    listed = sorted((items[index] for index in slots), key=lambda item: ranks[identity(item)])
    result = list(items)
    for index, item in zip(slots, listed, strict=True):
        result[index] = item
    return result
