"""The oracles that see bugs which a run with no faults has too: transition, rollback, cleanup, consistency.

The comparing checks compare a faulted run with the fault-free run of the same actions, so a bug that is in
both is invisible to them. These oracles compare with something else (as Acto's, whose oracles found most of
its bugs):

* ``transition``: the end state after changing the objects to their final specs equals that of creating them
  so directly (:func:`final_bodies` makes those objects in a fresh world; :func:`history_masked` sets aside
  what tells *how* the state was reached, not *what* it is);
* ``rollback``: a change reverted (:func:`patch_and_revert`: a change B, then the spec A as it was) returns to
  the end state before the change (:class:`Reversal`, judged by :func:`unreverted`);
* ``cleanup``: after every driven object is deleted, nothing that the operator created is left
  (:func:`record_creations`, :func:`leftovers`), unless something alive owns it, or it is declared retained;
* ``consistency``: a user-declared correspondence between the driven objects and the cluster
  (:class:`Correspondence`, judged by :func:`inconsistencies`).
"""

from __future__ import annotations

import copy
import dataclasses
import fnmatch
import json
import re
import weakref
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from kopf_sim.http.faults import serving
from kopf_sim.store.watching import Change

from ._bookkeeping import users_annotations
from ._history import HISTORY_ANNOTATIONS, derived_without_owners, handler_ids, history_masked
from ._judges import Evidence
from ._noise import NoiseField, difference
from ._observations import HistoryRecords, across_histories
from ._refusals import reports_error
from .cluster import KopfCluster
from .driving import (
    DEFAULT_QUIET,
    DEFAULT_SETTLE_TIMEOUT,
    EVENT_KEYS,
    Refusal,
    attempt,
    end_state,
    settle,
)
from .operator import KopfOperator

__all__ = [
    "Correspondence",
    "Reversal",
    "attempt_patch_and_revert",
    "cleanup",
    "consistency",
    "correspondences",
    "derived_without_owners",
    "final_bodies",
    "inconsistencies",
    "leftovers",
    "patch_and_revert",
    "record_creations",
    "refused",
    "reports_error",
    "reversals",
    "rollback",
    "transition",
    "unreverted",
]

JsonDict = dict[str, Any]

#: The top-level fields of an object that are not the users' to write.
_NOT_FIELDS = frozenset({"apiVersion", "kind", "metadata", "status"})


# -- transition ------------------------------------------------------------------------------------------


def final_bodies(objects: Iterable[Mapping[str, Any]]) -> list[JsonDict]:
    """The driven objects as a user would create them in their final state: their top-level fields (``spec``...),
    name, namespace, labels and annotations (kopf's bookkeeping aside); those being deleted are left out."""
    bodies: list[JsonDict] = []
    for obj in objects:
        metadata = obj.get("metadata") or {}
        if metadata.get("deletionTimestamp"):
            continue
        new_metadata: JsonDict = {"name": metadata["name"]}
        if metadata.get("namespace"):
            new_metadata["namespace"] = metadata["namespace"]
        if metadata.get("labels"):
            new_metadata["labels"] = dict(metadata["labels"])
        annotations = {
            key: value
            for key, value in users_annotations(metadata.get("annotations")).items()
            if key not in HISTORY_ANNOTATIONS
        }
        if annotations:
            new_metadata["annotations"] = annotations
        fields = {key: copy.deepcopy(value) for key, value in obj.items() if key not in _NOT_FIELDS}
        bodies.append({"apiVersion": obj["apiVersion"], "kind": obj["kind"], "metadata": new_metadata, **fields})
    return bodies


#: How kopf tells the outcome of handling an object (and posts it as an Event about it).
_PROCESSED = re.compile(r" is processed: \d+ succeeded; (\d+) failed")


def refused(kopf_cluster: KopfCluster, obj: Mapping[str, Any]) -> bool:
    """Whether the operator has refused the object's spec: its latest handling has failed (a handler raised
    :class:`kopf.PermanentError`, or failed for good otherwise; as kopf tells it in the Events about the object:
    ``... is processed: 1 succeeded; 1 failed``), or its status reports an error (:func:`reports_error`). A spec
    that the operator refuses is not a final state to compare: it may keep the last good one."""
    return reports_error(obj) or _handling_failed(kopf_cluster, obj)


def _handling_failed(kopf_cluster: KopfCluster, obj: Mapping[str, Any]) -> bool:
    metadata = obj.get("metadata") or {}
    latest: tuple[int, int] | None = None
    for event in kopf_cluster.sim.store.objects(("", "events"), metadata.get("namespace")):
        if (event.get("involvedObject") or {}).get("uid") != metadata.get("uid"):
            continue
        found = _PROCESSED.search(str(event.get("message", "")))
        if found:
            written = int((event.get("metadata") or {}).get("resourceVersion") or 0)
            latest = max(latest or (written, 0), (written, int(found.group(1))))
    return latest is not None and latest[1] > 0


# -- rollback --------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Reversal:
    """A change reverted (:func:`patch_and_revert`): the end states before the change and after its reversal.

    ``refused_before``: the operator had refused the object's state before the change (:func:`refused`); then the state
    after the reversal may keep what the change brought (e.g. the last good child), and it is not judged.
    """

    change: str
    before: list[JsonDict]
    after: list[JsonDict]
    refused_before: bool = False


_reversals: weakref.WeakKeyDictionary[KopfCluster, list[Reversal]] = weakref.WeakKeyDictionary()


def reversals(kopf_cluster: KopfCluster) -> list[Reversal]:
    """The changes reverted in this cluster so far (by :func:`patch_and_revert`), in order."""
    return _reversals.setdefault(kopf_cluster, [])


async def patch_and_revert(
    kopf_cluster: KopfCluster,
    kopf_operator: KopfOperator,
    resource: str,
    name: str,
    patch: Mapping[str, Any],
    *,
    namespace: str | None = None,
    quiet: float = DEFAULT_QUIET,
    timeout: float = DEFAULT_SETTLE_TIMEOUT,
) -> JsonDict | None:
    """Change an object (a merge patch of its fields) and revert the change, each once the operator has settled.

    The end states before the change and after the reversal are kept (:func:`reversals`) for the ``rollback``
    check. Returns the reverted object, or None if the object is not there or the change is refused (nothing
    is changed then).
    """
    result = await attempt_patch_and_revert(
        kopf_cluster, kopf_operator, resource, name, patch, namespace=namespace, quiet=quiet, timeout=timeout
    )
    return None if isinstance(result, Refusal) else result


async def attempt_patch_and_revert(
    kopf_cluster: KopfCluster,
    kopf_operator: KopfOperator,
    resource: str,
    name: str,
    patch: Mapping[str, Any],
    *,
    namespace: str | None = None,
    quiet: float = DEFAULT_QUIET,
    timeout: float = DEFAULT_SETTLE_TIMEOUT,
) -> JsonDict | Refusal:
    """As :func:`patch_and_revert`, but the cluster's :class:`~pytest_kopf.driving.Refusal` when nothing is changed
    (a user's action refused: the object is not there, or the change is invalid)."""
    await settle(kopf_cluster, kopf_operator, quiet=quiet, timeout=timeout)
    original = await kopf_cluster.get(resource, name, namespace)
    if original is None:
        return Refusal(404, "NotFound", f"{resource} {name!r} is not there")
    before = end_state(kopf_cluster)
    was_refused = refused(kopf_cluster, original)
    patched = await attempt(kopf_cluster.patch(resource, name, dict(patch), namespace))
    if isinstance(patched, Refusal):
        return patched
    await settle(kopf_cluster, kopf_operator, quiet=quiet, timeout=timeout)
    changed = await kopf_cluster.get(resource, name, namespace)
    if changed is None:
        return Refusal(404, "NotFound", f"{resource} {name!r} is gone after the change")
    fields = {key for key in (*original, *changed) if key not in _NOT_FIELDS}
    undo = _merge_diff(
        {k: changed[k] for k in fields if k in changed}, {k: original[k] for k in fields if k in original}
    )
    reverted = await attempt(kopf_cluster.patch(resource, name, undo, namespace)) if undo else changed
    await settle(kopf_cluster, kopf_operator, quiet=quiet, timeout=timeout)
    change = f"{resource} {name}: {json.dumps(dict(patch), sort_keys=True)}"
    reversals(kopf_cluster).append(Reversal(change, before, end_state(kopf_cluster), was_refused))
    return reverted


def _merge_diff(current: Mapping[str, Any], wanted: Mapping[str, Any]) -> JsonDict:
    """The JSON merge patch that turns ``current`` into ``wanted``."""
    patch: JsonDict = {key: None for key in current if key not in wanted}
    for key, value in wanted.items():
        old = current.get(key)
        if isinstance(value, dict) and isinstance(old, dict):
            nested = _merge_diff(old, value)
            if nested:
                patch[key] = nested
        elif key not in current or old != value:
            patch[key] = copy.deepcopy(value)
    return patch


def unreverted(
    changes: Sequence[Reversal],
    *,
    driven: Iterable[tuple[str, str]],
    handlers: Iterable[str],
    mask: Sequence[str] = (),
    noise: Iterable[NoiseField] = (),
    records: HistoryRecords | None = None,
) -> str | None:
    """The first change whose reversal has not returned to the end state before it (with the difference), if any;
    how the states were reached aside (:func:`history_masked`), and what records the histories (``records``:
    :func:`~pytest_kopf._observations.across_histories`), and the ``noise`` masked."""
    from .driving import mask_object

    kinds, ids, fields, recorded = list(driven), list(handlers), list(noise), records or HistoryRecords()

    def compared(state: list[JsonDict]) -> list[JsonDict]:
        kept = across_histories([mask_object(obj, mask) for obj in state], driven=kinds, records=recorded)
        return history_masked(kept, driven=kinds, handlers=ids, label_keys=recorded.label_keys)

    for reversal in (change for change in changes if not change.refused_before):
        before, after = compared(reversal.before), compared(reversal.after)
        differs = difference(before, after, fields, labels=("before the change", "after reverting it"))
        if differs is not None:
            return f"reverting a change has not returned to the end state before it ({reversal.change}):\n{differs}"
    return None


# -- cleanup ---------------------------------------------------------------------------------------------


def record_creations(kopf_cluster: KopfCluster) -> set[str]:
    """A set that gets the uid of every object created from now on by a client of the cluster's API (the operator,
    with kopf's client or any other), not by the test itself, nor by the cluster's own controllers."""
    created: set[str] = set()

    def observe(change: Change) -> None:
        if change.type == "ADDED" and serving() is not None and change.key not in EVENT_KEYS:
            created.add(str((change.obj.get("metadata") or {}).get("uid")))

    kopf_cluster.sim.store.observers.append(observe)
    return created


def leftovers(kopf_cluster: KopfCluster, created: Iterable[str], retained: Sequence[str] = ()) -> list[str]:
    """The objects created by the operator (``created``: their uids) still there, except those owned by a live
    object and those that match the ``retained`` patterns (``resource/name``, globs: ``persistentvolumeclaims/*``)."""
    store = kopf_cluster.sim.store
    found: list[str] = []
    for uid in sorted(set(created)):
        obj = store.by_uid(uid)
        key = store.storage_key_of_uid(uid)
        if obj is None or key is None or _owned_by_live(store, obj) or _retained(key, obj, retained):
            continue
        metadata = obj.get("metadata") or {}
        plural = f"{key[1]}.{key[0]}" if key[0] else key[1]
        where = f"{metadata['namespace']}/" if metadata.get("namespace") else ""
        found.append(
            f"{plural} {where}{metadata.get('name')}{' (being deleted)' if metadata.get('deletionTimestamp') else ''}"
        )
    return sorted(found)


def _owned_by_live(store: Any, obj: Mapping[str, Any]) -> bool:
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or ():
        owner = store.by_uid(str(ref.get("uid")))
        if owner is not None and not (owner.get("metadata") or {}).get("deletionTimestamp"):
            return True
    return False


def _retained(key: tuple[str, str], obj: Mapping[str, Any], patterns: Sequence[str]) -> bool:
    group, plural = key
    metadata = obj.get("metadata") or {}
    name = str(metadata.get("name"))
    namespace = metadata.get("namespace")
    kind = str(obj.get("kind", "")).lower()
    resources = {plural, f"{plural}.{group}" if group else plural, kind}
    candidates = {f"{resource}/{name}" for resource in resources}
    if namespace:
        candidates |= {f"{namespace}/{resource}/{name}" for resource in resources}
    return any(fnmatch.fnmatchcase(candidate, pattern) for pattern in patterns for candidate in candidates)


# -- consistency -----------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Correspondence:
    """A field of each driven object (``source``) and where its value must be found after settling (``target``).

    ``target`` is ``<resource>/<name>.<path>``: the name may use ``{name}`` and ``{namespace}`` of the driven
    object (``deployments/{name}.spec.replicas``, ``configmaps/{name}-config.data.size``); the object is looked
    for in the driven object's namespace (if its resource is namespaced).
    """

    source: str
    resource: str
    name: str
    path: str

    @classmethod
    def parse(cls, source: str, target: str) -> Correspondence:
        resource, slash, rest = target.partition("/")
        brace = rest.rfind("}")
        dot = rest.find(".", brace + 1 if brace >= 0 else 0)
        if not slash or not resource or dot <= 0 or not source or dot == len(rest) - 1:
            raise ValueError(
                f"A consistency target must be <resource>/<name>.<path>, e.g. 'deployments/{{name}}.spec.replicas'; "
                f"got {target!r} for {source!r}."
            )
        return cls(source=source, resource=resource, name=rest[:dot], path=rest[dot + 1 :])

    def __str__(self) -> str:
        return f"{self.source} -> {self.resource}/{self.name}.{self.path}"


def correspondences(mapping: Mapping[str, str] | None) -> tuple[Correspondence, ...]:
    """The user's ``consistency=`` mapping, parsed (a clear error for a malformed one)."""
    return tuple(Correspondence.parse(source, target) for source, target in (mapping or {}).items())


_ABSENT = object()


async def inconsistencies(
    kopf_cluster: KopfCluster,
    driven: Iterable[Mapping[str, Any]],
    declared: Sequence[Correspondence],
) -> list[str]:
    """Where the cluster does not have the values that the driven objects' fields declare (see
    :class:`Correspondence`); a driven object without the source field, or being deleted, is not judged."""
    problems: list[str] = []
    for obj in driven:
        metadata = obj.get("metadata") or {}
        if metadata.get("deletionTimestamp"):
            continue
        for correspondence in declared:
            wanted = _lookup(obj, correspondence.source)
            if wanted is _ABSENT:
                continue
            info = await kopf_cluster.resolve(correspondence.resource)
            namespace = metadata.get("namespace") if info.namespaced else None
            name = correspondence.name.format(name=metadata.get("name"), namespace=metadata.get("namespace") or "")
            target = await kopf_cluster.get(info, name, namespace)
            owner = f"{str(obj.get('kind', '')).lower()} {metadata.get('name')}"
            place = f"{info.plural}/{name}"
            if target is None:
                problems.append(f"{owner}: {correspondence.source}={wanted!r}, but {place} does not exist")
                continue
            found = _lookup(target, correspondence.path)
            if found is _ABSENT:
                problems.append(
                    f"{owner}: {correspondence.source}={wanted!r}, but {place} has no {correspondence.path}"
                )
            elif not _same(wanted, found):
                problems.append(
                    f"{owner}: {correspondence.source}={wanted!r}, but {place} has {correspondence.path}={found!r}"
                )
    return problems


def _lookup(value: Any, path: str) -> Any:
    for part in _parts(path):
        found = isinstance(value, dict) and isinstance(part, str) and part in value
        indexed = isinstance(value, list) and isinstance(part, int) and -len(value) <= part < len(value)
        if not (found or indexed):
            return _ABSENT
        value = value[part]
    return value


def _parts(path: str) -> Iterator[str | int]:
    for part in path.split("."):
        name, *indexes = part.split("[")
        if name:
            yield name
        for index in indexes:
            yield int(index.rstrip("]"))


def _same(wanted: Any, found: Any) -> bool:
    """Equal as values, or as text where one side is a string (a ConfigMap's data has strings only)."""
    if wanted == found and type(wanted) is type(found):
        return True
    if isinstance(wanted, str) != isinstance(found, str):
        text, other = (wanted, found) if isinstance(wanted, str) else (found, wanted)
        return text in (str(other), json.dumps(other))
    return bool(wanted == found) and not isinstance(wanted, bool) and not isinstance(found, bool)


# -- the judges (see pytest_kopf._catalogue) ---------------------------------------------------------------


def _driven_kinds(evidence: Evidence) -> list[tuple[str, str]]:
    return [(resource.api_version, resource.kind) for resource in evidence.resources]


def _driven_objects(evidence: Evidence) -> list[JsonDict]:
    store = evidence.cluster.sim.store
    return [
        obj
        for resource in evidence.resources
        for obj in store.objects((resource.group, resource.plural), evidence.namespace if resource.namespaced else None)
    ]


def transition(evidence: Evidence) -> str | None:
    """The end state equals that of creating the driven objects directly in their final state, history aside."""
    if evidence.direct is None or any(refused(evidence.cluster, obj) for obj in _driven_objects(evidence)):
        return None  # not comparable: the operator has refused a final spec (it may keep the last good state)
    kinds, ids = _driven_kinds(evidence), handler_ids(evidence.operator)
    records = evidence.history_records
    actual, direct = (
        history_masked(
            across_histories(state, driven=kinds, records=records),
            driven=kinds,
            handlers=ids,
            label_keys=records.label_keys,
        )
        for state in (evidence.state, evidence.direct)
    )
    labels = ("created directly in their final state", "actual")
    differs = difference(direct, actual, evidence.noise, labels=labels)
    if differs is None:
        return None
    return (
        "the end state differs from that of creating the driven objects directly in their final state "
        f"(how it was reached aside: handler results, observed generations, revisions, times):\n{differs}"
    )


async def rollback(evidence: Evidence) -> str | None:
    """Every change reverted in the run has returned to the end state before it (history aside)."""
    changes = reversals(evidence.cluster)
    return unreverted(
        changes,
        driven=_driven_kinds(evidence),
        handlers=handler_ids(evidence.operator),
        mask=evidence.mask,
        noise=evidence.noise,
        records=evidence.history_records,
    )


async def consistency(evidence: Evidence) -> str | None:
    """The user-declared correspondences hold for every live driven object."""
    if not evidence.correspondences:
        return None
    problems = await inconsistencies(evidence.cluster, _driven_objects(evidence), evidence.correspondences)
    if not problems:
        return None
    declared = ", ".join(str(correspondence) for correspondence in evidence.correspondences)
    return f"the cluster does not have what the objects declare ({declared}):\n" + "\n".join(
        f"  - {problem}" for problem in problems
    )


async def cleanup(evidence: Evidence) -> str | None:
    """After every driven object is deleted and the run has settled, nothing that the operator created is left."""
    if evidence.created is None:
        return None
    await evidence.delete_all()
    left = leftovers(evidence.cluster, evidence.created, evidence.retained)
    if not left:
        return None
    return (
        "after all objects were deleted and the cluster settled, the operator's creations are still there "
        "(owned by nothing alive, not declared retained):\n" + "\n".join(f"  - {item}" for item in left)
    )
