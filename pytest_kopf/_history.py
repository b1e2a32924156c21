"""How an end state was reached, set aside: what differs between two correct ways of getting to the same state.

Two correct runs of the same user actions can reach the same state by different paths: a fault delays the
operator, so it sees two changes of an object as one (coalesced watch events, a re-list after a reconnect, a
restart after a crash) and writes its children once instead of twice; a change and its reversal, or a change
and a direct creation in the final state (the oracles, :mod:`pytest_kopf._oracles`), differ in how many writes
were made. What tells the path, not the state, is set aside before comparing (:func:`history_masked`):

* the driven objects' handler results (``status.<handler id>``): which handlers ran (create or update);
* ``observedGeneration`` anywhere, and revision annotations (``deployment.kubernetes.io/revision``...):
  how many times a spec was written;
* the objects that the cluster's controllers derive from others (ReplicaSets, Pods, EndpointSlices...): they
  follow their owners, which are compared, and keep their owners' history (a Deployment keeps its old
  ReplicaSets);
* the labels that children have copied from their owner among the driven objects (as ``kopf.adopt`` does at
  each write of a child): a snapshot of the owner's labels at that write; an operator that reacts to its objects'
  spec only carries a change of their labels over to the children at the next change of the spec, if ever (the
  owner's label keys; with ``label_keys``, also those it has had: a run's trace tells them);
* the times (any value that reads as a moment: ``<time>``).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ._noise import is_timestamp
from .operator import KopfOperator

__all__ = [
    "CONTROLLER_MANAGER",
    "DERIVING_KINDS",
    "HISTORY_ANNOTATIONS",
    "HISTORY_KEYS",
    "TIME",
    "derived_without_owners",
    "handler_ids",
    "history_aside",
    "history_masked",
    "is_derived",
    "left_by_statefulsets",
    "owners_labels",
]

JsonDict = dict[str, Any]

#: Fields that tell how an object got to its state, not what state it is in: they differ between reaching a spec
#: by a change and creating the object with it (or between before a change and after it was reverted, or between
#: a run that saw every change of an object and one that saw two of them as one).
HISTORY_KEYS = frozenset({"observedGeneration"})
HISTORY_ANNOTATIONS = frozenset(
    {"deployment.kubernetes.io/revision", "kubectl.kubernetes.io/last-applied-configuration"}
)
#: The kinds whose controllers in the cluster derive objects from them (ReplicaSets, Pods, EndpointSlices...):
#: those follow their owners' state and keep their history (a changed Deployment keeps its old ReplicaSets), so
#: they are compared through their owners, not by themselves.
DERIVING_KINDS = frozenset(
    {
        ("apps/v1", "Deployment"),
        ("apps/v1", "ReplicaSet"),
        ("apps/v1", "StatefulSet"),
        ("apps/v1", "DaemonSet"),
        ("batch/v1", "Job"),
        ("batch/v1", "CronJob"),
        ("v1", "Service"),
    }
)
#: The status fields that the cluster's controllers write on a schedule: when a CronJob last ran and which of its
#: Jobs run now tell how long it has been there (a CronJob made a minute later has run once less), not its state.
SCHEDULE_STATUS: Mapping[tuple[str, str], tuple[str, ...]] = {
    ("batch/v1", "CronJob"): ("lastScheduleTime", "lastSuccessfulTime", "active")
}
#: The field manager of the cluster's controllers (a StatefulSet's, the volumes' binder...), as in Kubernetes: what
#: only it has written, no client of the API (the operator, a user) has made or changed.
CONTROLLER_MANAGER = "kube-controller-manager"
#: What stands for a time (RFC 3339) in the compared states: when a field was written differs between two ways
#: of reaching the same state, not the state.
TIME = "<time>"


def handler_ids(kopf_operator: KopfOperator) -> frozenset[str]:
    """The ids of the operator's handlers: kopf keeps their results in ``status.<id>``, which tells which handlers
    have run (create or update), not the state."""
    registry = kopf_operator.registry
    if registry is None:
        return frozenset()
    found: set[str] = set()
    for handlers in (registry.changing, registry.spawning, registry.watching):
        found.update(str(handler.id) for handler in handlers.get_all_handlers())
    return frozenset(found)


def history_masked(
    state: Iterable[Mapping[str, Any]],
    *,
    driven: Iterable[tuple[str, str]],
    handlers: Iterable[str],
    times: bool = True,
    label_keys: Iterable[str] = (),
) -> list[JsonDict]:
    """The end state without what tells how it was reached: the driven objects' (``driven``: api version & kind)
    handler results (``status.<handler id>``, also of sub-handlers), ``observedGeneration`` & revision
    annotations anywhere, the objects derived by the cluster's controllers (:func:`derived_without_owners` too),
    the driven objects' label keys on their children (also the ``label_keys`` they have had), and the times
    (``times=False``: kept)."""
    state, driven = list(state), list(driven)
    ownerless, labels = derived_without_owners(state), owners_labels(state, driven, label_keys)
    aside = history_aside(driven=driven, handlers=handlers, times=times, ownerless=ownerless, owners_labels=labels)
    return [masked for masked in map(aside, state) if masked is not None]


def history_aside(
    *,
    driven: Iterable[tuple[str, str]],
    handlers: Iterable[str],
    times: bool = True,
    ownerless: Mapping[str, set[tuple[str, str]]] | None = None,
    owners_labels: Mapping[tuple[str, str, str], frozenset[str]] | None = None,
) -> Callable[[Mapping[str, Any]], JsonDict | None]:
    """What :func:`history_masked` makes of one object (None: a derived object, left out); ``times=False``: the
    times are kept (to learn which of them are noise, and to show them); ``ownerless``: the objects derived with
    no owner's reference in the state (:func:`derived_without_owners`), left out too; ``owners_labels``: the
    driven objects' label keys (:func:`owners_labels`), set aside on their children."""
    kinds = set(driven)
    ids = tuple(handlers)
    ownerless = ownerless or {}
    owners_labels = owners_labels or {}

    def aside(obj: Mapping[str, Any]) -> JsonDict | None:
        if is_derived(obj) or _where(obj) in ownerless.get(str(obj.get("kind")), ()):
            return None
        masked = copy.deepcopy(dict(obj))
        status = masked.get("status")
        if (masked.get("apiVersion"), masked.get("kind")) in kinds and isinstance(status, dict):
            for key in [key for key in status if any(key == i or key.startswith(f"{i}/") for i in ids)]:
                del status[key]
            if not status:
                del masked["status"]
        scheduled = SCHEDULE_STATUS.get((str(masked.get("apiVersion")), str(masked.get("kind"))), ())
        if scheduled and isinstance(status, dict):
            for key in scheduled:
                status.pop(key, None)
            if not status:
                masked.pop("status", None)
        _without_copied_labels(masked, owners_labels)
        annotations = (masked.get("metadata") or {}).get("annotations")
        if isinstance(annotations, dict):
            for key in HISTORY_ANNOTATIONS & annotations.keys():
                del annotations[key]
            if not annotations:
                del masked["metadata"]["annotations"]
        kept: JsonDict = _without_history_keys(masked)
        return _timeless(kept) if times else kept

    return aside


def derived_without_owners(state: Iterable[Mapping[str, Any]]) -> dict[str, set[tuple[str, str]]]:
    """The objects (by kind: namespace & name) that the cluster's controllers derive with no owner's reference:
    the Endpoints of a Service with a selector; the claims of a StatefulSet's ``volumeClaimTemplates`` (kept when
    it scales down, as its history; those of a StatefulSet that is gone are not in the end states at all:
    :func:`left_by_statefulsets`); the volumes provisioned for claims."""
    state = list(state)
    found: dict[str, set[tuple[str, str]]] = {
        "Endpoints": set(),
        "PersistentVolumeClaim": set(),
        "PersistentVolume": set(),
    }
    claims = _claim_prefixes(state)
    for obj in state:
        kind, where = obj.get("kind"), _where(obj)
        if kind == "Service" and (obj.get("spec") or {}).get("selector"):
            found["Endpoints"].add(where)
        elif kind == "PersistentVolumeClaim" and _made_from(where, claims):
            found["PersistentVolumeClaim"].add(where)
        elif kind == "PersistentVolume" and "pv.kubernetes.io/provisioned-by" in (
            (obj.get("metadata") or {}).get("annotations") or {}
        ):
            found["PersistentVolume"].add(where)
    return found


def left_by_statefulsets(
    claims: Iterable[Mapping[str, Any]], statefulsets: Iterable[Mapping[str, Any]]
) -> set[tuple[str, str]]:
    """The claims (namespace & name) that a StatefulSet has left behind: made and written by the cluster's
    controllers only (``managedFields``: :data:`CONTROLLER_MANAGER`; the claims of ``volumeClaimTemplates`` are the
    only ones the cluster makes), owned by nothing, and made from the templates of no StatefulSet that is there.

    Kubernetes keeps a StatefulSet's claims when it is deleted (``whenDeleted: Retain``, the default): derived state,
    as the claims of a live StatefulSet (:func:`derived_without_owners`), which a run that never made that
    StatefulSet (its owner deleted before the operator came to make it) has not got. The raw objects are needed
    (with their ``managedFields``): :func:`pytest_kopf.driving.end_state` leaves those claims out.
    """
    prefixes = _claim_prefixes(statefulsets)
    found: set[tuple[str, str]] = set()
    for claim in claims:
        metadata = claim.get("metadata") or {}
        managers = {entry.get("manager") for entry in metadata.get("managedFields") or ()}
        where = _where(claim)
        if managers == {CONTROLLER_MANAGER} and not metadata.get("ownerReferences") and not _made_from(where, prefixes):
            found.add(where)
    return found


def _claim_prefixes(state: Iterable[Mapping[str, Any]]) -> set[tuple[str, str]]:
    """Where the StatefulSets among the objects make their claims, and the prefix of those claims' names
    (``<template>-<statefulset>-``, then the ordinal)."""
    prefixes: set[tuple[str, str]] = set()
    for obj in state:
        if obj.get("kind") == "StatefulSet":
            namespace, name = _where(obj)
            for template in (obj.get("spec") or {}).get("volumeClaimTemplates") or ():
                prefixes.add((namespace, f"{(template.get('metadata') or {}).get('name')}-{name}-"))
    return prefixes


def _made_from(where: tuple[str, str], prefixes: Iterable[tuple[str, str]]) -> bool:
    namespace, name = where
    return any(namespace == at and name.startswith(prefix) and name[len(prefix) :].isdigit() for at, prefix in prefixes)


def owners_labels(
    state: Iterable[Mapping[str, Any]], driven: Iterable[tuple[str, str]], had: Iterable[str] = ()
) -> dict[tuple[str, str, str], frozenset[str]]:
    """The label keys of the driven objects (``driven``: api version & kind) by kind, namespace and name, with
    those they have had (``had``)."""
    kinds, earlier = set(driven), frozenset(had)
    found: dict[tuple[str, str, str], frozenset[str]] = {}
    for obj in state:
        labels = (obj.get("metadata") or {}).get("labels")
        if (obj.get("apiVersion"), obj.get("kind")) in kinds:
            keys = earlier | (labels.keys() if isinstance(labels, dict) else frozenset())
            if keys:
                found[(str(obj.get("kind")), *_where(obj))] = keys
    return found


def _without_copied_labels(obj: JsonDict, owners_labels: Mapping[tuple[str, str, str], frozenset[str]]) -> None:
    """Remove the labels that the object may have copied from an owner of it among the driven objects (any value:
    the owner's labels as they were at the copy)."""
    metadata = obj.get("metadata") or {}
    labels = metadata.get("labels")
    if not isinstance(labels, dict) or not owners_labels:
        return
    namespace = str(metadata.get("namespace") or "")
    for ref in metadata.get("ownerReferences") or ():
        for where in (
            (str(ref.get("kind")), namespace, str(ref.get("name"))),
            (str(ref.get("kind")), "", str(ref.get("name"))),
        ):
            for key in owners_labels.get(where, frozenset()) & labels.keys():
                del labels[key]
    if not labels:
        del metadata["labels"]


def _where(obj: Mapping[str, Any]) -> tuple[str, str]:
    metadata = obj.get("metadata") or {}
    return str(metadata.get("namespace") or ""), str(metadata.get("name"))


def is_derived(obj: Mapping[str, Any]) -> bool:
    """Whether the cluster's controllers derive the object from another (a ReplicaSet's Pod, a Service's slice)."""
    refs = (obj.get("metadata") or {}).get("ownerReferences") or ()
    return any(ref.get("controller") and (ref.get("apiVersion"), ref.get("kind")) in DERIVING_KINDS for ref in refs)


def _without_history_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _without_history_keys(item) for key, item in value.items() if key not in HISTORY_KEYS}
    if isinstance(value, list):
        return [_without_history_keys(item) for item in value]
    return value


def _timeless(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _timeless(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_timeless(item) for item in value]
    if isinstance(value, str) and is_timestamp(value):
        return TIME
    return value
