"""Small helpers on JSON objects: cheap copies, metadata access, name and label validation."""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any

from kopf_sim.kube import jsoncodec

JsonDict = dict[str, Any]

_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")

SUBDOMAIN_MESSAGE = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
    "'-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', "
    "regex used for validation is "
    r"'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
LABEL_MESSAGE = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
    "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)


def compact_json(data: Any) -> str:
    """``json.dumps(data, separators=(",", ":"), ensure_ascii=False)``, for JSON data (acyclic)."""
    return jsoncodec.compact_text(data)


def clone(value: Any) -> Any:
    """A deep copy of JSON data, several times faster than :func:`copy.deepcopy` (no call per scalar)."""
    if isinstance(value, dict):
        return {k: clone(v) if isinstance(v, _CONTAINERS) else v for k, v in value.items()}
    if isinstance(value, list):
        return [clone(v) if isinstance(v, _CONTAINERS) else v for v in value]
    return value


_CONTAINERS = (dict, list)


def meta(obj: Mapping[str, Any]) -> JsonDict:
    value = obj.get("metadata")
    return value if isinstance(value, dict) else {}


def name_problems(name: str, *, label: bool) -> list[str]:
    """Why a name is invalid (empty list when it is fine): label names for namespaces and services."""
    if len(name) <= 63 and _plain_label(name):
        return []  # (most names: valid as a label and as a subdomain, found so without the regular expressions)
    problems = []
    limit = 63 if label else 253
    if len(name) > limit:
        problems.append(f"must be no more than {limit} characters")
    if not (_LABEL if label else _SUBDOMAIN).fullmatch(name):
        problems.append(LABEL_MESSAGE if label else SUBDOMAIN_MESSAGE)
    return problems


def _plain_label(name: str) -> bool:
    """Whether the name is lower case letters and digits, with dashes between them: an RFC 1123 label.

    (Names of digits and dashes only, or with dots, are left to the regular expressions.)
    """
    return name.isascii() and name.islower() and name.replace("-", "").isalnum() and name[0] != "-" and name[-1] != "-"


def qualified_name_problems(key: str) -> list[str]:
    """Why a key (of labels, annotations, finalizers) is not a qualified name, in the apiserver's words."""
    parts = key.split("/")
    if len(parts) > 2:
        return [
            "a qualified name " + _QUALIFIED_NAME_RULE + " with an optional DNS subdomain prefix and '/' "
            "(e.g. 'example.com/MyName')"
        ]
    problems = []
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            problems.append("prefix part must be non-empty")
        else:
            if len(prefix) > 253:
                problems.append("prefix part must be no more than 253 characters")
            if not _SUBDOMAIN.fullmatch(prefix):
                problems.append("prefix part " + SUBDOMAIN_MESSAGE)
    if not name:
        problems.append("name part must be non-empty")
    elif len(name) > 63:
        problems.append("name part must be no more than 63 characters")
    if not _QUALIFIED_NAME.fullmatch(name):
        problems.append("name part " + _QUALIFIED_NAME_RULE)
    return problems


_QUALIFIED_NAME_RULE = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)


def label_value_problems(value: str) -> list[str]:
    problems = []
    if len(value) > 63:
        problems.append("must be no more than 63 characters")
    if not _LABEL_VALUE.fullmatch(value):
        problems.append(
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
            "or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
            "'my_value',  or '12345', regex used for validation is "
            "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
        )
    return problems


def resolve_path(obj: Any, path: str) -> Any:
    """The value at a simple JSON path like ``.spec.replicas`` or ``.status.conditions[0].type``."""
    value = obj
    for part in _path_parts(path):
        if isinstance(part, int):
            if not isinstance(value, list) or part >= len(value):
                return None
            value = value[part]
        elif isinstance(value, dict):
            value = value.get(part)
        else:
            return None
    return value


@functools.lru_cache(maxsize=256)
def _path_parts(path: str) -> tuple[str | int, ...]:
    """A path's field names and list indices, split once (a table resolves the same paths for every row)."""
    return tuple(int(part[1:-1]) if part.startswith("[") else part for part in re.findall(r"[^.\[\]]+|\[\d+\]", path))


def assign_path(obj: JsonDict, path: str, value: Any) -> None:
    """Set a value at a dotted JSON path (``.spec.replicas``), creating maps on the way."""
    parts = [p for p in path.split(".") if p]
    target = obj
    for part in parts[:-1]:
        target = target.setdefault(part, {})
    target[parts[-1]] = value
