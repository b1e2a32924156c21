"""Noise: the fields of an end state that differ between two correct runs, learned, masked, and told apart.

A correct operator's end state is not one fixed value: it draws passwords and ids, stamps the time, and
the cluster allocates addresses and names. The comparing checks compare a faulted run with a fault-free
one; they must not report what differs between any two correct runs. So the fault-free reference runs
twice, with different seeds (:mod:`pytest_kopf._randomness`, and the simulated cluster's uids) and clocks
shifted by :data:`EPOCH_OFFSET`: every field whose values differ between the two references is noise
(:func:`learn`), masked in both end states of every comparison of that example (:func:`difference`).

* Fields are named by object (api version, kind, namespace, name) and path (:class:`NoiseField`);
  a list of objects with a ``type`` or ``name`` key is matched by that key (``status.conditions[type=Ready]``),
  other lists by position.
* Secrets are compared by their decoded ``data`` (:func:`normalized`), so that a password reads as text.
* A field that differs between the references in value is masked as ``<noise>`` (its presence still counts);
  one that is there in one reference only is masked by removal; so is an object there in one only.

For settling (:mod:`pytest_kopf.driving`), a change of an object that only refreshes timestamps (a
``lastReconciled`` written by a timer) is noise too (:func:`only_timestamps_changed`): an object whose
only changes are timestamps has settled; one that grows or flips between values has not.
"""

from __future__ import annotations

import base64
import binascii
import copy
import dataclasses
import datetime
import difflib
import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import yaml

__all__ = [
    "EPOCH_OFFSET",
    "MASKED",
    "NoiseField",
    "difference",
    "is_timestamp",
    "learn",
    "mask_state",
    "normalized",
    "only_timestamps_changed",
]

#: How far the second reference's clocks are shifted (seconds): hours, minutes, seconds and their fractions differ.
EPOCH_OFFSET = datetime.timedelta(hours=1, minutes=1, seconds=1, milliseconds=500)
#: What a noisy value is replaced with in the compared end states (and so in the diffs of the failures).
MASKED = "<noise>"

#: One step of a path: a mapping's key, a list's index, or a keyed list's element (key field, its value).
Segment = str | int | tuple[str, str]
ObjectKey = tuple[str, str, str | None, str]
_LIST_KEYS = ("type", "name")


@dataclasses.dataclass(frozen=True, order=True)
class NoiseField:
    """A field of one object that differs between two correct runs; ``path=()``: the object itself.

    ``presence``: the field (or object) is there in one reference only; it is removed before comparing,
    not just its value masked.
    """

    api_version: str
    kind: str
    namespace: str | None
    name: str
    path: tuple[Segment, ...]
    presence: bool = False

    @property
    def key(self) -> ObjectKey:
        return (self.api_version, self.kind, self.namespace, self.name)

    def __str__(self) -> str:
        where = f"{self.namespace}/{self.name}" if self.namespace not in (None, "default") else self.name
        return f"{self.kind} {where} {format_path(self.path) if self.path else '(the object itself)'}"


def format_path(path: Sequence[Segment]) -> str:
    """``data.password``, ``status.conditions[type=Ready].lastTransitionTime``, ``metadata.labels["a.b/c"]``."""
    text = ""
    for segment in path:
        if isinstance(segment, int):
            text += f"[{segment}]"
        elif isinstance(segment, tuple):
            text += f"[{segment[0]}={segment[1]}]"
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", segment):
            text += f".{segment}" if text else segment
        else:
            text += f"[{json.dumps(segment)}]"
    return text


# -- normalizing ---------------------------------------------------------------------------------------


def normalized(obj: Mapping[str, Any]) -> dict[str, Any]:
    """A copy to compare: a Secret's ``data`` decoded (text, or ``base64:...`` for bytes that are not UTF-8)."""
    copied = copy.deepcopy(dict(obj))
    if copied.get("kind") == "Secret" and copied.get("apiVersion") == "v1" and isinstance(copied.get("data"), dict):
        copied["data"] = {key: _decoded(value) for key, value in copied["data"].items()}
    return copied


def _decoded(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return value
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return f"base64:{value}"


def _object_key(obj: Mapping[str, Any]) -> ObjectKey:
    metadata = obj.get("metadata") or {}
    return (str(obj.get("apiVersion")), str(obj.get("kind")), metadata.get("namespace"), str(metadata.get("name")))


def _grouped(state: Iterable[Mapping[str, Any]]) -> dict[ObjectKey, list[dict[str, Any]]]:
    """The objects by identity (generated names are masked alike: several may share one), in their order."""
    groups: dict[ObjectKey, list[dict[str, Any]]] = {}
    for obj in state:
        groups.setdefault(_object_key(obj), []).append(normalized(obj))
    return groups


# -- learning ------------------------------------------------------------------------------------------


def learn(first: Iterable[Mapping[str, Any]], second: Iterable[Mapping[str, Any]]) -> frozenset[NoiseField]:
    """The fields (and objects) whose values differ between two end states of correct runs of the same actions."""
    left, right = _grouped(first), _grouped(second)
    found: set[NoiseField] = set()
    for mine, theirs, name in _drawn_names(left, right):  # compared as one object, its name masked
        masked: ObjectKey = (*mine[:3], name)
        found.add(NoiseField(*masked, path=_NAME))
        left[masked], right[masked] = left.pop(mine), right.pop(theirs)
    for key in sorted(set(left) | set(right), key=str):
        these, those = left.get(key, []), right.get(key, [])
        if len(these) != len(those):
            found.add(NoiseField(*key, path=(), presence=True))
            continue
        for one, other in zip(these, those, strict=True):
            for path, presence in _differing(_named(one, key), _named(other, key), ()):
                found.add(NoiseField(*key, path=path, presence=presence))
    return frozenset(found)


#: The path of a name drawn at random (``NoiseField.name`` is the masked name then: ``web-setup-<noise>``).
_NAME: tuple[Segment, ...] = ("metadata", "name")
#: A run of letters and digits that two references drew differently within names of the same shape.
_DRAWN = re.compile(r"[a-z0-9]{4,}")


def _masked_name(one: str, other: str) -> str | None:
    """The name with its drawn part masked (``obj-0-setup-<noise>``), if the two names differ only there: the same
    length, one differing run of at least 4 letters and digits (a uuid's or a token's, not a word's)."""
    if len(one) != len(other) or one == other:
        return None
    start = next(i for i, (a, b) in enumerate(zip(one, other, strict=True)) if a != b)
    end = len(one) - next(i for i, (a, b) in enumerate(zip(one[::-1], other[::-1], strict=True)) if a != b)
    while start > 0 and one[start - 1].isalnum() and other[start - 1].isalnum():
        start -= 1
    while end < len(one) and one[end].isalnum() and other[end].isalnum():
        end += 1
    if not (_DRAWN.fullmatch(one[start:end]) and _DRAWN.fullmatch(other[start:end])):
        return None
    return f"{one[:start]}{MASKED}{one[end:]}"


def _drawn_names(
    left: Mapping[ObjectKey, list[dict[str, Any]]], right: Mapping[ObjectKey, list[dict[str, Any]]]
) -> Iterator[tuple[ObjectKey, ObjectKey, str]]:
    """The pairs of objects, one in each reference only, of one kind and namespace, whose names differ only in a
    part drawn at random (a child named ``web-setup-<uuid>``): one object of a correct operator, not two."""
    only_right = [key for key in right if key not in left and len(right[key]) == 1]
    for key in [key for key in left if key not in right and len(left[key]) == 1]:
        for other in only_right:
            name = _masked_name(key[3], other[3]) if other[:3] == key[:3] else None
            if name is not None:
                only_right.remove(other)
                yield key, other, name
                break


def _named(obj: dict[str, Any], key: ObjectKey) -> dict[str, Any]:
    """The object with the name of its key (a drawn name masked) where its own name is."""
    metadata = obj.get("metadata")
    if isinstance(metadata, dict) and metadata.get("name") != key[3]:
        return {**obj, "metadata": {**metadata, "name": key[3]}}
    return obj


def _differing(one: Any, other: Any, path: tuple[Segment, ...]) -> Iterator[tuple[tuple[Segment, ...], bool]]:
    """The paths where two values differ: (path, whether it is there on one side only)."""
    if isinstance(one, dict) and isinstance(other, dict):
        for key in sorted(set(one) | set(other), key=str):
            if key not in one or key not in other:
                yield (*path, key), True
            else:
                yield from _differing(one[key], other[key], (*path, key))
    elif isinstance(one, list) and isinstance(other, list):
        field = _list_key(one) if _list_key(one) == _list_key(other) else None
        if field is not None:
            these = {item[field]: item for item in one}
            those = {item[field]: item for item in other}
            for value in sorted(set(these) | set(those)):
                if value not in these or value not in those:
                    yield (*path, (field, value)), True
                else:
                    yield from _differing(these[value], those[value], (*path, (field, value)))
        elif len(one) != len(other):
            yield path, False
        else:
            for index, (item, another) in enumerate(zip(one, other, strict=True)):
                yield from _differing(item, another, (*path, index))
    elif one != other or type(one) is not type(other):
        yield path, False


def _list_key(items: list[Any]) -> str | None:
    """The field that names the elements of a list of objects (``type``, ``name``), if every element has it."""
    if not items or not all(isinstance(item, dict) for item in items):
        return None
    for field in _LIST_KEYS:
        values = [item.get(field) for item in items]
        if all(isinstance(value, str) for value in values) and len(set(values)) == len(values):
            return field
    return None


# -- masking & comparing -------------------------------------------------------------------------------


def mask_state(state: Iterable[Mapping[str, Any]], noise: Iterable[NoiseField]) -> list[dict[str, Any]]:
    """The objects (normalized) with the noisy fields masked and the noisy objects left out."""
    by_object: dict[ObjectKey, list[NoiseField]] = {}
    drawn: list[tuple[ObjectKey, re.Pattern[str]]] = []  # the masked names, and what names they stand for
    for field in noise:
        by_object.setdefault(field.key, []).append(field)
        if field.path == _NAME and MASKED in field.name:
            prefix, _, suffix = field.name.partition(MASKED)
            drawn.append((field.key, re.compile(f"{re.escape(prefix)}[a-z0-9]{{4,}}{re.escape(suffix)}")))
    masked: list[dict[str, Any]] = []
    for obj in state:
        copied = normalized(obj)
        key = _object_key(copied)
        for masked_key, pattern in drawn:
            if key[:3] == masked_key[:3] and key not in by_object and pattern.fullmatch(key[3]):
                copied["metadata"]["name"] = masked_key[3]
                key = masked_key
                break
        fields = [field for field in by_object.get(key, []) if field.path != _NAME]
        if any(not field.path for field in fields):
            continue
        for field in sorted(fields):
            _mask(copied, list(field.path), field.presence)
        masked.append(copied)
    return masked


def _mask(value: Any, path: list[Segment], presence: bool) -> None:
    place = _locate(value, path[0])
    if place is None:
        return
    if len(path) > 1:
        _mask(value[place], path[1:], presence)
    elif presence:
        del value[place]
    else:
        value[place] = MASKED


def _locate(value: Any, segment: Segment) -> int | str | None:
    """Where a step of a path is in a value: a list's index or a mapping's key; None if it is not there."""
    if isinstance(segment, tuple):
        if not isinstance(value, list):
            return None
        field, wanted = segment
        return next((i for i, item in enumerate(value) if isinstance(item, dict) and item.get(field) == wanted), None)
    if isinstance(segment, int):
        return segment if isinstance(value, list) and segment < len(value) else None
    return segment if isinstance(value, dict) and segment in value else None


def difference(
    expected: Sequence[Mapping[str, Any]],
    actual: Sequence[Mapping[str, Any]],
    noise: Iterable[NoiseField] = (),
    *,
    labels: tuple[str, str] = ("expected", "actual"),
) -> str | None:
    """How two end states differ with the noise masked (a unified diff of their YAML), or None if they do not."""
    fields = list(noise)
    left, right = mask_state(expected, fields), mask_state(actual, fields)
    if left == right:
        return None
    before = yaml.safe_dump(left, sort_keys=True).splitlines()
    after = yaml.safe_dump(right, sort_keys=True).splitlines()
    return "\n".join(difflib.unified_diff(before, after, *labels, lineterm=""))


def described(noise: Iterable[NoiseField]) -> str:
    """The noise as the reports list it: ``Secret obj-0-credentials data.password, ...``."""
    return ", ".join(sorted(dict.fromkeys(str(field) for field in noise)))


# -- settling: timestamps refreshed ----------------------------------------------------------------------

_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|z|[+-]\d{2}:?\d{2})?")
#: Numbers in these ranges read as moments since 1970 (seconds, milliseconds): 2001-09-09 to 2286-11-20.
_EPOCH_SECONDS = (1e9, 1e10)
_EPOCH_MILLISECONDS = (1e12, 1e13)
#: The fields that change on every write, whatever is written: not the object's content.
_WRITE_FIELDS = ("resourceVersion", "managedFields")


def is_timestamp(value: Any) -> bool:
    """Whether a value reads as a moment: an RFC 3339 / ISO 8601 date-time, or a Unix time (s or ms)."""
    if isinstance(value, str):
        return bool(_TIMESTAMP.fullmatch(value.strip()))
    if isinstance(value, int | float) and not isinstance(value, bool):
        return any(low <= value < high for low, high in (_EPOCH_SECONDS, _EPOCH_MILLISECONDS))
    return False


def only_timestamps_changed(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Whether a change of an object only moved timestamps (values that read as moments on both sides)."""
    before, after = _content(old), _content(new)
    changed = False
    for path, presence in _differing(before, after, ()):
        if presence:
            return False
        one, other = _at(before, path), _at(after, path)
        if not (is_timestamp(one) and is_timestamp(other)):
            return False
        changed = True
    return changed


def _content(obj: Mapping[str, Any]) -> dict[str, Any]:
    copied = dict(obj)
    metadata = dict(copied.get("metadata") or {})
    for field in _WRITE_FIELDS:
        metadata.pop(field, None)
    copied["metadata"] = metadata
    return copied


def _at(value: Any, path: Sequence[Segment]) -> Any:
    for segment in path:
        value = value[_locate(value, segment)]
    return value
