"""kopf's own bookkeeping in the annotations of the objects it handles: what the checks leave out of what they compare.

kopf keeps each handler's progress and the last handled state of an object in its annotations, under the prefix
``kopf.zalando.org/`` unless the operator's settings name another (e.g. ``settings.persistence.progress_storage =
kopf.AnnotationsProgressStorage(prefix="my-op.example.com")``, as many operators do, and the same for the diff-base
storage; or keeps them in the status). :func:`without_bookkeeping` is the one place that takes them out: with the
operator's settings, exactly what its storages keep, under any key or field; then, and where no settings are at
hand (a trace's essences, the judges' reading of progress records, late snapshots), by what they are: the last
handled state and the touch by their keys, a handler's progress by its record's fields, kopf's ``status.kopf``.
A user's own annotation is none of these.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, cast

import kopf

__all__ = ["KOPF_PREFIX", "is_kopf_annotation", "progress_record", "users_annotations", "without_bookkeeping"]

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


def without_bookkeeping(obj: Mapping[str, Any], settings: kopf.OperatorSettings | None = None) -> dict[str, Any]:
    """The object without the state that kopf keeps in it: a new top level and metadata, the rest shared.

    With the operator's settings, their storages' ``clear()`` (as kopf uses it for the diff-base's essence) takes out
    what they keep, wherever they keep it; then kopf's annotations under any prefix and ``status.kopf`` go, for
    operators whose settings are not at hand or that changed storages while running.
    """
    cleared: Mapping[str, Any] = obj
    if settings is not None:
        cleared = settings.persistence.progress_storage.clear(essence=cast(kopf.BodyEssence, dict(obj)))
        cleared = settings.persistence.diffbase_storage.clear(essence=cleared)
    result = dict(cleared)
    metadata = dict(result.get("metadata") or {})
    annotations = users_annotations(metadata.get("annotations"))
    if annotations:
        metadata["annotations"] = annotations
    else:
        metadata.pop("annotations", None)
    if "metadata" in result:
        result["metadata"] = metadata
    status = result.get("status")
    if isinstance(status, Mapping) and "kopf" in status:
        result["status"] = {key: value for key, value in status.items() if key != "kopf"}
        if not result["status"]:
            result.pop("status")
    return result
