"""Several handlers for one cause, and handlers for changes of specific fields, with old, new and diff.

A KopfExample describes a small inventory: ``spec.items`` (a list of names) and ``spec.field`` (its
owner). Each concern is a handler of its own, so each is retried, reported and stored on its own:

- two creation handlers: ``count_items`` and ``describe_owner`` (both results go to the status);
- an update handler for the whole object: ``log_changes`` logs every change of the ``diff``;
- a field handler for ``spec.items``: ``items_changed`` returns what was added and removed;
- one function with two update decorators (``param=`` tells them apart): ``remember_change`` keeps
  the last old/new values of ``spec.field`` and ``spec.duration`` in ``status.last_changes``.
"""

from typing import Any

import kopf


@kopf.on.create("kopfexamples")
def count_items(spec: kopf.Spec, **_: Any) -> int:
    return len(spec.get("items", []))


@kopf.on.create("kopfexamples")
def describe_owner(spec: kopf.Spec, name: str, **_: Any) -> str:
    return f"{name} is owned by {spec.get('field', 'nobody')}"


@kopf.on.update("kopfexamples")
def log_changes(diff: kopf.Diff, logger: kopf.Logger, **_: Any) -> None:
    for operation, field, old, new in diff:
        logger.info(f"{operation} {'.'.join(field)}: {old!r} -> {new!r}")


@kopf.on.field("kopfexamples", field="spec.items")
def items_changed(old: Any, new: Any, **_: Any) -> dict[str, list[str]]:
    before, after = set(old or []), set(new or [])
    return {"added": sorted(after - before), "removed": sorted(before - after)}


@kopf.on.update("kopfexamples", field="spec.field", param="field")
@kopf.on.update("kopfexamples", field="spec.duration", param="duration")
def remember_change(param: str, old: Any, new: Any, patch: kopf.Patch, **_: Any) -> None:
    patch.status.setdefault("last_changes", {})[param] = {"old": old, "new": new}
