"""What two different histories of a correct operator legitimately differ in: the records of what happened.

The ``transition`` and ``rollback`` oracles compare end states reached by different histories (a change and
its reversal; a change and a direct creation). Besides how a state was reached (:mod:`pytest_kopf._history`),
two records of those histories differ between them, and are set aside there (:func:`across_histories`):

* the objects made per derived object (a probing Job per Pod, owned by the Pod): they follow the pods, which
  come and go with the history (a pod that was probed before a change keeps the probe made then);
* the driven objects' status fields that only the handlers of other resources write: what the operator saw
  happen to those (``status.lastProbe``, the outcome of the last probe that ran), not what it made of the
  driven object's spec;
* the driven objects' status fields that only the handling of their updates writes (``on.update`` handlers'
  ``patch.status``, never a creation's or a resumption's, nor a timer's): a record of the changes made
  (``status.lastChange``, the old and new values of the last one), which an object created directly in its
  final state has never had, and a reverted change has left; but not a field that may report an error (an
  ``error``, a ``phase``, ``conditions``, a ``message``...): an error that a change has set must clear when the
  change is reverted.

The trace of the run tells those fields (:func:`history_records`), and the labels that the driven objects have
had, which every comparison sets aside on their children (:func:`pytest_kopf._history.history_masked`).

The comparisons of one history with itself (a faulted run and a fault-free run of the same actions) keep them,
but for a record that the faulted run has and the fault-free one lacks (:func:`unseen_records_aside`): a fault
delays the operator, so the states it was about to change last longer and more of what happens is seen (a pod
that lives until a delayed scale-down gets probed). A record that the faulted run lacks, or holds otherwise, is
still compared: an observation lost. But for what a record made per derived object holds, when the faulted run
made it after a user's change of a driven object (:func:`late_snapshots_aside`): such a record is a snapshot of
the driven objects at the moment its derived object got there (a probe of a pod made with the probe's path as the
SmokeTest says when the pod is ready), and a fault delays that moment (a Deployment created a retry later has its
pods ready later), so the fault-free run may have made it before the change, from the state before it. Its
presence is still compared: a record lost.

A faulted run in which the operator never got to act on a driven object in its whole life (made and deleted while
its events were held, as a relist after a broken watch gives them on a real cluster; or while its writes to it
failed) is not compared at all (:func:`unseen_lifetimes`): the operator could not have done anything for that
object, where the fault-free run did what it does for every object it sees.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kopf_sim.http.faults import classify

from ._bookkeeping import users_annotations
from ._discovery import ResourceInfo
from ._history import HISTORY_ANNOTATIONS, is_derived
from ._refusals import may_report_error
from ._tracing import Change, Delivery, Entry, Request, Response
from .operator import KopfOperator

__all__ = [
    "HistoryRecords",
    "across_histories",
    "history_records",
    "late_snapshots_aside",
    "unseen_records_aside",
]

JsonDict = dict[str, Any]
#: The requests that write an object (a delete's body carries no status: none is read from it).
_WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})
#: The reason of the requests made for the handling of an update (see :data:`pytest_kopf._tracing.REASON_HEADER`).
_UPDATE = "update"


@dataclasses.dataclass(frozen=True)
class HistoryRecords:
    """What records a run's history in its end state: ``status_keys``, the top-level fields of the driven objects'
    ``status`` that only handlers of other resources write; ``label_keys``, the labels the driven objects have had;
    ``change_keys``, the top-level status fields that only the handling of the driven objects' updates writes (set
    aside across histories only: two runs of the same changes must record them alike)."""

    status_keys: frozenset[str] = frozenset()
    label_keys: frozenset[str] = frozenset()
    change_keys: frozenset[str] = frozenset()


def history_records(
    trace: Sequence[Entry] | None, kopf_operator: KopfOperator, resources: Sequence[ResourceInfo]
) -> HistoryRecords:
    """The records of the history in a run's trace: the status fields that only the handlers of other resources
    have written to the driven objects (those that a driven resource's own handler writes too are the object's
    state; kopf's own writes, with no handler's name, are of the driven objects' handlers), those that only the
    handling of the driven objects' updates has written (by its handlers or by kopf for them: the requests' reason;
    not those that a creation, a resumption, a deletion or a daemon or timer writes too, nor those that may report
    an error: an error left by a change must clear when it is reverted), and the labels that the driven objects
    have had."""
    if not trace:
        return HistoryRecords()
    own = _own_handlers(kopf_operator, resources)
    kinds = {(resource.api_version, resource.kind) for resource in resources}
    others: set[str] = set()
    owned: set[str] = set()
    on_update: set[str] = set()
    labels: set[str] = set()
    for entry in trace:
        obj = entry.obj if isinstance(entry, Change) else None
        if obj is not None and (str(obj.get("apiVersion")), str(obj.get("kind"))) in kinds:
            labels.update((obj.get("metadata") or {}).get("labels") or {})
        if not isinstance(entry, Request) or entry.method not in _WRITES:
            continue
        if not any(_writes_to(entry.path, resource) for resource in resources):
            continue
        payload = entry.payload
        status = payload.get("status") if isinstance(payload, dict) else None
        if isinstance(status, dict) and (entry.handler is None or entry.handler in own):
            (on_update if entry.reason == _UPDATE else owned).update(status)
        elif isinstance(status, dict):
            others.update(status)
    changes = {key for key in on_update - owned if not may_report_error(key)}
    return HistoryRecords(frozenset(others - owned - on_update), frozenset(labels), frozenset(changes))


def across_histories(
    state: Iterable[Mapping[str, Any]], *, driven: Iterable[tuple[str, str]], records: HistoryRecords
) -> list[JsonDict]:
    """The state without the records of its history (``records``): the objects owned by derived objects
    (transitively), and the observed status fields and the records of changes of the driven objects (api version &
    kind in ``driven``)."""
    objects = [dict(obj) for obj in state]
    kinds, keys = set(driven), records.status_keys | records.change_keys
    made = _made_per_derived(objects)
    kept: list[JsonDict] = []
    for obj in objects:
        if _identity(obj) in made:
            continue
        status = obj.get("status")
        if keys and (obj.get("apiVersion"), obj.get("kind")) in kinds and isinstance(status, dict):
            obj = copy.deepcopy(obj)
            for key in keys & obj["status"].keys():
                del obj["status"][key]
            if not obj["status"]:
                del obj["status"]
        kept.append(obj)
    return kept


def unseen_records_aside(
    actual: Iterable[Mapping[str, Any]],
    expected: Iterable[Mapping[str, Any]],
    *,
    driven: Iterable[tuple[str, str]],
    records: HistoryRecords,
) -> list[JsonDict]:
    """The actual state without the observed status fields (``records``) of the driven objects that the expected
    state's same objects lack: what a delayed operator has seen happen in addition (see the module's docs)."""
    kinds, keys = set(driven), records.status_keys
    seen: dict[tuple[str, str, str], frozenset[str]] = {
        _identity(obj): frozenset(status if isinstance(status := obj.get("status"), dict) else ())
        for obj in expected
        if (obj.get("apiVersion"), obj.get("kind")) in kinds
    }
    kept: list[JsonDict] = []
    for obj in actual:
        status, identity = obj.get("status"), _identity(obj)
        if keys and identity in seen and (obj.get("apiVersion"), obj.get("kind")) in kinds and isinstance(status, dict):
            unseen = (keys & status.keys()) - seen[identity]
            if unseen:
                rest = {key: value for key, value in status.items() if key not in unseen}
                obj = {**obj, "status": rest} if rest else {k: v for k, v in obj.items() if k != "status"}
        kept.append(dict(obj))
    return kept


def late_snapshots_aside(
    actual: Iterable[Mapping[str, Any]],
    expected: Iterable[Mapping[str, Any]],
    *,
    trace: Sequence[Entry] | None,
    driven: Iterable[tuple[str, str]],
) -> tuple[list[JsonDict], list[JsonDict]]:
    """Both states with the objects made per derived object reduced to their identity (kind, namespace, name), for
    those that the faulted run (``trace``) made after a user's change of a driven object (api version & kind in
    ``driven``): what they hold is a snapshot of a moment that a fault delays (see the module's docs)."""
    ours, theirs = [dict(obj) for obj in actual], [dict(obj) for obj in expected]
    late = _made_after_a_change(trace or (), set(driven))
    if not late:
        return ours, theirs

    def reduced(obj: JsonDict) -> JsonDict:
        if _identity(obj) not in late:
            return obj
        metadata = obj.get("metadata") or {}
        where = {key: metadata[key] for key in ("name", "namespace") if key in metadata}
        return {"apiVersion": obj.get("apiVersion"), "kind": obj.get("kind"), "metadata": where}

    return [reduced(obj) for obj in ours], [reduced(obj) for obj in theirs]


def _made_after_a_change(trace: Sequence[Entry], driven: set[tuple[str, str]]) -> set[tuple[str, str, str]]:
    """The objects made per derived object, alive at the end of the run, that it made after the first change of a
    driven object's fields (a re-creation with other fields too), by their masked identity as the end state has it."""
    from .driving import drawn_values, mask_drawn_values, mask_object

    fields: dict[tuple[str, str], JsonDict] = {}  # the driven objects' fields, by namespace & name
    changed_at: int | None = None
    added: dict[tuple[str, str, str, str], int] = {}  # when each object was last made, by resource & name
    live: dict[tuple[str, str, str, str], Mapping[str, Any]] = {}
    for index, entry in enumerate(trace):
        if not isinstance(entry, Change) or entry.obj is None:
            continue
        key = (entry.group, entry.plural, entry.namespace or "", entry.name)
        if entry.type == "DELETED":
            live.pop(key, None)
            continue
        live[key] = entry.obj
        if entry.type == "ADDED":
            added[key] = index
        if changed_at is None and (str(entry.obj.get("apiVersion")), str(entry.obj.get("kind"))) in driven:
            now = _users_fields(entry.obj)
            before = fields.setdefault((entry.namespace or "", entry.name), now)
            changed_at = index if before != now else None
    if changed_at is None:
        return set()
    objects = list(live.values())
    made = _made_per_derived(objects)
    late = [
        obj
        for key, obj in live.items()
        if _identity(obj) in made and not is_derived(obj) and added.get(key, -1) > changed_at
    ]
    if not late:
        return set()
    generated = {drawn: masked for obj in objects for drawn, masked in drawn_values(obj).items()}
    masked = [mask_object(dict(obj)) for obj in late]
    if generated:
        mask_drawn_values(masked, generated)
    return {_identity(obj) for obj in masked}


def _made_per_derived(objects: Sequence[Mapping[str, Any]]) -> set[tuple[str, str, str]]:
    """The objects owned by a derived object, transitively: derived by proxy (a Job of a Pod, and the Job's own
    pods; and the derived objects' own, a ReplicaSet's Pods)."""
    derived = {_identity(obj) for obj in objects if is_derived(obj)}
    grown = True
    while grown:
        more = {_identity(obj) for obj in objects if _owners(obj) & derived} - derived
        derived |= more
        grown = bool(more)
    return {_identity(obj) for obj in objects if _owners(obj) & derived}


def _users_fields(obj: Mapping[str, Any]) -> JsonDict:
    """What the users write of an object: its top-level fields (``spec``...), labels and annotations (kopf's and
    kubectl's bookkeeping aside)."""
    metadata = obj.get("metadata") or {}
    annotations = users_annotations(metadata.get("annotations"))
    annotations = {key: value for key, value in annotations.items() if key not in HISTORY_ANNOTATIONS}
    fields = {key: value for key, value in obj.items() if key not in ("apiVersion", "kind", "metadata", "status")}
    return {**fields, "labels": metadata.get("labels") or {}, "annotations": annotations}


def _own_handlers(kopf_operator: KopfOperator, resources: Sequence[ResourceInfo]) -> frozenset[str]:
    """The ids of the handlers of the driven resources (changing, spawning, watching)."""
    from kopf import Resource

    registry = kopf_operator.registry
    if registry is None:
        return frozenset()
    found: set[str] = set()
    for info in resources:
        resource = Resource(
            group=info.group, version=info.version, plural=info.plural, kind=info.kind, namespaced=info.namespaced
        )
        for handlers in (registry.changing, registry.spawning, registry.watching):
            found.update(str(handler.id) for handler in handlers.get_resource_handlers(resource))
    return frozenset(found)


def _writes_to(path: str, resource: ResourceInfo) -> bool:
    """Whether a request's path is of an object of the resource (or its status)."""
    prefix = f"/apis/{resource.group}/{resource.version}/" if resource.group else f"/api/{resource.version}/"
    parts = path.removeprefix(prefix).split("/") if path.startswith(prefix) else []
    if len(parts) >= 2 and parts[0] == "namespaces":
        parts = parts[2:]
    return len(parts) >= 2 and parts[0] == resource.plural


def _identity(obj: Mapping[str, Any]) -> tuple[str, str, str]:
    metadata = obj.get("metadata") or {}
    return str(obj.get("kind")), str(metadata.get("namespace") or ""), str(metadata.get("name"))


def _owners(obj: Mapping[str, Any]) -> set[tuple[str, str, str]]:
    metadata = obj.get("metadata") or {}
    namespace = str(metadata.get("namespace") or "")
    return {(str(ref.get("kind")), namespace, str(ref.get("name"))) for ref in metadata.get("ownerReferences") or ()}


def unseen_lifetimes(trace: Iterable[Entry], driven: set[tuple[str, str]]) -> list[str]:
    """The driven objects (group & plural in ``driven``) made and deleted in the run without the operator getting
    to act on them while they were there (``plural.group namespace/name``, once per such life): no watch event of
    them came before the deletion (at most events held until after it, late, and the ``DELETED``); or its writes to
    them all failed until then (e.g. kopf's first patch, its finalizer, answered 500 and retried a second later,
    when the object was gone).
    """
    alive: dict[tuple[str, str], list[bool]] = {}  # the objects there now: [an event came, a write tried, landed]
    unseen: list[str] = []
    for entry in trace:
        if isinstance(entry, Response) and entry.method in _WRITES and entry.status is not None:
            key = _addressed(entry.method, entry.path)
            if key in alive:
                alive[key][1] = True
                alive[key][2] = alive[key][2] or entry.status < 400
            continue
        if not isinstance(entry, (Change, Delivery)) or (entry.group, entry.plural) not in driven:
            continue
        key = (entry.resource, entry.where)
        if isinstance(entry, Delivery):
            if key in alive and entry.type != "DELETED":
                alive[key][0] = True
        elif entry.type == "ADDED":
            alive[key] = [False, False, False]
        elif entry.type == "DELETED" and key in alive:
            delivered, tried, landed = alive.pop(key)
            if not delivered or (tried and not landed):
                unseen.append(f"{entry.resource} {entry.where}")
    return unseen


def _addressed(method: str, path: str) -> tuple[str, str] | None:
    """The object that a write addresses, as the trace's changes name it (None: a collection)."""
    info = classify(method, path, {})
    if info.resource is None or info.name is None:
        return None
    resource = f"{info.resource}.{info.group}" if info.group else info.resource
    return resource, f"{info.namespace}/{info.name}" if info.namespace else info.name
