"""
The echo of the framework's own last patch: known in advance to change nothing, so not processed again.

When a handling cycle is over, the framework patches the object with the handlers' results and its own
bookkeeping (the diff-base, the purged progress), and the watch-stream then brings that very version back.
Processed in full, it only finds what the framework has just written: the essence is the same as the stored
diff-base, there is no progress, no finalizer to add or remove, nothing to spawn; only two debug lines.

So, right after the patch, the patched body is checked to be exactly the processed body with the patch
applied (nobody else has changed the object in between), and the patch to touch only the framework's
bookkeeping and the status, which neither the essence nor any handler's filters can see. Then that version
is remembered as settled, and its event is skipped (with the same debug lines). Anything unusual (other
writers, daemons, event-watching handlers, filters that look at the status or at the whole body) leaves
the version unsettled, and its event is processed as every other one.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any, cast

from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.structs import bodies, patches
from kopf._cogs.structs.references import Resource
from kopf._core.intents import registries
from kopf._core.intents.handlers import ResourceHandler

#: What the API server changes in the metadata by itself on every write (not by the patch), and the merged part.
UNCOMPARED_METADATA = frozenset({"resourceVersion", "managedFields", "generation", "annotations"})
STATUS = frozenset({"status"})

#: The only parts of the object that a settling patch may touch: the status and the annotations.
SETTLING_STANZAS = frozenset({"metadata", "status"})

#: The fields the filters may look at without seeing the settling patch's changes (their first key).
INVISIBLE_ROOTS = frozenset({"metadata", "status"})


def settled_version(
    *,
    before: Mapping[str, Any],
    patch: patches.Patch,
    after: Mapping[str, Any],
    resource: Resource,
    registry: registries.OperatorRegistry,
    settings: OperatorSettings,
) -> str | None:
    """
    The version of the patched object if its event will change nothing (see the module's docs); else ``None``.

    ``before`` is the body that was processed, ``patch`` the patch of its finished handling cycle,
    ``after`` the body that the API has returned for that patch.
    """
    version = (after.get("metadata") or {}).get("resourceVersion")
    if version is None or getattr(patch, "fns", None):
        return None
    annotations = _patched_annotations(patch)
    if annotations is None or not _bookkeeping_only(annotations, settings=settings):
        return None
    changing = registry.changing.get_resource_handlers(resource)
    spawning = registry.spawning.get_resource_handlers(resource)
    if not all(_blind_to_bookkeeping(handler, annotations) for handler in [*changing, *spawning]):
        return None
    if not _landed_as_is(before, patch, after):
        return None
    if _has_progress(after, handlers=changing, settings=settings):
        return None  # it would be purged as stray by the next processing
    return str(version)


def _patched_annotations(patch: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The annotations that the patch changes, if it changes nothing but them and the status; else ``None``."""
    if not patch.keys() <= SETTLING_STANZAS:
        return None
    metadata = patch.get("metadata") or {}
    if not metadata.keys() <= {"annotations"}:
        return None
    annotations: Mapping[str, Any] = metadata.get("annotations") or {}
    return annotations


def _bookkeeping_only(annotations: Mapping[str, Any], *, settings: OperatorSettings) -> bool:
    """
    Whether the annotations that the patch sets are the storages' own records, never a part of the essence.

    The removed ones are not in the object at all. The storages tell theirs by the keys and by the values
    (e.g. a progress record is a JSON of a known shape): so they are asked about these very values.
    """
    persistence = settings.persistence
    garbage: Collection[str] = getattr(persistence.diffbase_storage, "GARBAGE_ANNOTATIONS", frozenset())
    written = {key: value for key, value in annotations.items() if value is not None and key not in garbage}
    if not written:
        return True  # usually: only the default diff-base, which is never a part of the essence anyway
    probe = cast(bodies.BodyEssence, {"metadata": {"annotations": written}})
    cleared = persistence.progress_storage.clear(essence=persistence.diffbase_storage.clear(essence=probe))
    left: Mapping[str, Any] = (cleared.get("metadata") or {}).get("annotations") or {}
    return not left


def _blind_to_bookkeeping(handler: ResourceHandler, annotations: Collection[str]) -> bool:
    """Whether the handler's filters decide the same before and after the settling patch."""
    if handler.when is not None or callable(handler.value):
        return False  # they get the whole body (and the status) in their kwargs
    if handler.field is not None and handler.field[:1] and handler.field[0] in INVISIBLE_ROOTS:
        return False
    for meta_filter in (handler.labels, handler.annotations):
        if meta_filter and any(callable(criterion) for criterion in meta_filter.values()):
            return False
    return not (handler.annotations and any(key in annotations for key in handler.annotations))


def _landed_as_is(before: Mapping[str, Any], patch: Mapping[str, Any], after: Mapping[str, Any]) -> bool:
    """
    Whether the object after the patch is the object before it with the patch applied, and nothing else.

    Only the annotations & the status are merged (the patch has nothing else, see :func:`_patched_annotations`);
    the rest is compared as is, except for what the API server writes by itself.
    """
    if before.keys() - STATUS != after.keys() - STATUS:
        return False
    for key, value in before.items():
        if key != "metadata" and key != "status" and value != after[key]:
            return False
    old_meta: Mapping[str, Any] = before.get("metadata") or {}
    new_meta: Mapping[str, Any] = after.get("metadata") or {}
    if old_meta.keys() - UNCOMPARED_METADATA != new_meta.keys() - UNCOMPARED_METADATA:
        return False
    for key, value in old_meta.items():
        if key not in UNCOMPARED_METADATA and value != new_meta[key]:
            return False
    patched_meta: Mapping[str, Any] = patch.get("metadata") or {}
    patched_annotations = patched_meta.get("annotations") or {}
    annotations = patches.merge_patched_view(old_meta.get("annotations") or {}, patched_annotations, copy_values=False)
    if annotations != (new_meta.get("annotations") or {}):
        return False
    status = before.get("status")
    if "status" in patch:
        status = patches.merge_patched_view(
            status if isinstance(status, Mapping) else {}, patch["status"] or {}, copy_values=False
        )
    return bool(status == after.get("status"))


def _has_progress(body: Mapping[str, Any], *, handlers: Iterable[ResourceHandler], settings: OperatorSettings) -> bool:
    """Whether any handler of the resource has its progress recorded on the object."""
    view = bodies.Body(body)
    storage = settings.persistence.progress_storage
    return any(storage.fetch(key=handler.id, body=view) is not None for handler in handlers)
