"""kopf's own bookkeeping in the annotations of the objects it handles: what the checks leave out of what they compare.

kopf keeps each handler's progress and the last handled state of an object in its annotations, under the prefix
``kopf.zalando.org/`` unless the operator's settings name another (e.g. ``settings.persistence.progress_storage =
kopf.AnnotationsProgressStorage(prefix="my-op.example.com")``, as many operators do, and the same for the diff-base
storage). Under any prefix they are told by what they are: the last handled state and the touch by their keys, a
handler's progress by its record's fields. A user's own annotation is none of these. (Where the operator's
settings are at hand, :func:`pytest_kopf.driving.without_bookkeeping` clears exactly what its storages keep, under
any key; this serves where they are not: a trace's essences, the judges' reading of progress records, snapshots.)
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = ["KOPF_PREFIX", "is_kopf_annotation", "progress_record", "users_annotations"]

#: The prefix of kopf's annotations when the operator's settings do not name another.
KOPF_PREFIX = "kopf.zalando.org/"
#: The names (after the prefix) of kopf's annotations that are no progress record: the last handled state, the touch.
_KOPF_NAMES = frozenset({"last-handled-configuration", "touch-dummy"})
#: The fields of a handler's progress record (all optional; "started" is always written first).
_PROGRESS_FIELDS = frozenset(
    {"started", "stopped", "delayed", "purpose", "retries", "success", "failure", "message", "subrefs"}
)


def progress_record(value: Any) -> dict[str, Any] | None:
    """A handler's progress record that an annotation's value holds (kopf writes it as JSON), or None."""
    if not isinstance(value, str) or not value.startswith("{"):
        return None
    try:
        record = json.loads(value)
    except ValueError:
        return None
    if isinstance(record, dict) and record and "started" in record and _PROGRESS_FIELDS.issuperset(record):
        return record
    return None


def is_kopf_annotation(key: str, value: Any) -> bool:
    """Whether an annotation is kopf's bookkeeping (a handler's progress, the last handled state, the touch)."""
    if key.startswith(KOPF_PREFIX):
        return True
    prefix, slash, name = key.rpartition("/")
    if not slash or not prefix:
        return False
    return name in _KOPF_NAMES or progress_record(value) is not None


def users_annotations(annotations: Mapping[str, Any] | None) -> dict[str, Any]:
    """The annotations without kopf's bookkeeping."""
    return {key: value for key, value in (annotations or {}).items() if not is_kopf_annotation(key, value)}
