"""The machinery shared by the built-in controllers: work queues, timers, and writes through the apiserver.

Controllers are level-triggered, as the real ones: a change of an object (seen as the cluster commits
it, like a watch event) puts the keys of the objects it concerns into a queue; one task of the
cluster's event loop takes them one by one and reconciles each against the current state. Time
enters only through timers that put a key back into the queue when something becomes due (a pod's
containers start, a CronJob's schedule fires), so an idle cluster costs nothing, and under a
virtual-time loop all delays are virtual. The queue is FIFO and everything runs in one task, so
the same changes lead to the same writes in the same order in every run.

Writes go through the same write pipeline as any client's requests (so watchers see them,
``managedFields`` name the writers as in a real cluster, and admission webhooks are called).
"""

from __future__ import annotations

import abc
import asyncio
import datetime
import json
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any, ClassVar, Protocol

from kopf_sim.kube import errors
from kopf_sim.kube.objects import JsonDict, compact_json, meta
from kopf_sim.kube.resources import ResourceType, StorageKey
from kopf_sim.store.cluster import Cluster
from kopf_sim.store.watching import Change
from kopf_sim.writes import preparing

from .fates import Fates
from .settings import ControllerSettings

__all__ = ["Controller", "Key", "Manager", "controller_ref", "owned_by", "parse_time"]

logger = logging.getLogger("kopf_sim.controllers")

Key = tuple[str, str]  # (namespace or "", name) of the object a controller reconciles

PODS: StorageKey = ("", "pods")
NODES: StorageKey = ("", "nodes")
NAMESPACES: StorageKey = ("", "namespaces")
SERVICES: StorageKey = ("", "services")
PVCS: StorageKey = ("", "persistentvolumeclaims")
PVS: StorageKey = ("", "persistentvolumes")
DEPLOYMENTS: StorageKey = ("apps", "deployments")
REPLICASETS: StorageKey = ("apps", "replicasets")
STATEFULSETS: StorageKey = ("apps", "statefulsets")
DAEMONSETS: StorageKey = ("apps", "daemonsets")
REVISIONS: StorageKey = ("apps", "controllerrevisions")
JOBS: StorageKey = ("batch", "jobs")
CRONJOBS: StorageKey = ("batch", "cronjobs")


_PREPARED: dict[tuple[str, ...], JsonDict] = {}
_PREPARED_LIMIT = 256


def create_bootstrap(
    cluster: Cluster,
    rtype: ResourceType,
    namespace: str | None,
    identity: str,
    body: Callable[[], JsonDict],
    *,
    manager: str,
) -> JsonDict:
    """Create an object of a fresh cluster's (a node, a namespace's defaults) as the apiserver would.

    Every fresh cluster creates the same ones at the same (virtual) moment: the apiserver's work on them
    (validation, defaults, managed fields) is done once per process, and the clusters share the result but
    for the metadata, which gets a uid of the cluster's own (asked for in the same order as without the
    sharing, so runs stay reproducible). Sharing is safe because stored objects are never changed in place:
    every write makes a new object. ``identity`` must tell apart all that the body depends on; the body
    is built only when it is new.
    """
    cache_key = (rtype.kind_key, namespace or "", identity, cluster.now(), manager, cluster.version)
    template = _PREPARED.get(cache_key)
    if template is None:
        new = preparing.prepare_create(cluster, rtype, namespace, body(), manager=manager)
        if len(_PREPARED) >= _PREPARED_LIMIT:
            _PREPARED.clear()
        _PREPARED[cache_key] = json.loads(compact_json(new))  # a copy for sharing
        return cluster.commit_new(rtype, new)
    new = {**template, "metadata": {**template["metadata"], "uid": cluster.uids()}}
    return cluster.commit_new(rtype, new)


def key_of(obj: Mapping[str, Any]) -> Key:
    metadata = meta(obj)
    return (metadata.get("namespace") or "", metadata["name"])


def controller_ref(obj: Mapping[str, Any]) -> JsonDict | None:
    """The owner reference marked as the controller, if any."""
    for ref in meta(obj).get("ownerReferences") or ():
        if ref.get("controller"):
            return dict(ref)
    return None


def owned_by(obj: Mapping[str, Any], owner: Mapping[str, Any]) -> bool:
    ref = controller_ref(obj)
    return ref is not None and ref.get("uid") == meta(owner).get("uid")


def owner_key(obj: Mapping[str, Any], kind: str) -> Key | None:
    """The key of the object's controller, if it is of this kind (in the object's namespace)."""
    ref = controller_ref(obj)
    if ref is None or ref.get("kind") != kind:
        return None
    return (meta(obj).get("namespace") or "", str(ref.get("name", "")))


def new_owner_ref(owner: Mapping[str, Any]) -> JsonDict:
    """An owner reference to a controlling object, as the built-in controllers set them."""
    metadata = meta(owner)
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": metadata["name"],
        "uid": metadata["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def parse_time(text: str | None) -> datetime.datetime | None:
    if not text:
        return None
    try:
        return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def condition(conditions: Iterable[Mapping[str, Any]] | None, type_: str) -> JsonDict | None:
    for cond in conditions or ():
        if cond.get("type") == type_:
            return dict(cond)
    return None


def set_condition(
    conditions: list[JsonDict],
    type_: str,
    status: str,
    reason: str,
    message: str,
    now: str,
    *,
    probe: bool = False,
    update_time: bool = False,
) -> list[JsonDict]:
    """The conditions with one set: its transition time kept unless the status changes, as controllers do."""
    result: list[JsonDict] = []
    found = False
    for cond in conditions:
        if cond.get("type") != type_:
            result.append(cond)
            continue
        found = True
        changed = cond.get("status") != status
        new = dict(cond, status=status, reason=reason, message=message)
        if changed:
            new["lastTransitionTime"] = now
        if update_time and (changed or cond.get("reason") != reason or cond.get("message") != message):
            new["lastUpdateTime"] = now
        result.append(new)
    if not found:
        new = {"type": type_, "status": status}
        if probe:
            new["lastProbeTime"] = None
        if update_time:
            new["lastUpdateTime"] = now
        new.update({"lastTransitionTime": now, "reason": reason, "message": message})
        result.append(new)
    return result


class Manager(Protocol):
    """What a controller uses of its manager (:class:`kopf_sim.controllers.manager.ControllerManager`).

    The manager imports every controller, so the controllers know it by this protocol, not by an import.
    """

    @property
    def cluster(self) -> Cluster: ...

    @property
    def settings(self) -> ControllerSettings: ...

    @property
    def fates(self) -> Fates: ...

    def rtype(self, key: StorageKey) -> ResourceType: ...

    def schedule(self, name: str, key: Key, delay: float) -> None: ...


class Controller(abc.ABC):
    """One control loop: which changes concern it, and how it brings an object to its desired state."""

    name: ClassVar[str]
    primary: ClassVar[StorageKey]  # the objects it reconciles (its queue's keys are theirs)
    watches: ClassVar[tuple[StorageKey, ...]] = ()  # other objects whose changes concern some primary ones
    field_manager: ClassVar[str] = "kube-controller-manager"

    def __init__(self, manager: Manager) -> None:
        self.manager = manager
        self.cluster = manager.cluster

    # -- What the manager calls ------------------------------------------------------------------------

    def bootstrap(self) -> None:  # noqa: B027 - an optional hook: nothing by default
        """Create what exists in a fresh cluster (synchronously, at start, before any client's request)."""

    def initial_keys(self) -> Iterable[Key]:
        """The keys to reconcile when the controller starts: all the primary objects."""
        return [key_of(obj) for obj in self.cluster.objects(self.primary)]

    def keys_for(self, change: Change) -> Iterable[Key]:
        """The keys of the primary objects that a committed change concerns."""
        if change.key == self.primary:
            return (key_of(change.obj),)
        return self.related_keys(change)

    def related_keys(self, change: Change) -> Iterable[Key]:
        return ()

    @abc.abstractmethod
    async def reconcile(self, key: Key) -> None:
        """Bring the object of the key (or its absence) to its desired state."""

    def stopped(self) -> None:  # noqa: B027 - an optional hook: nothing by default
        """Forget the in-memory state (the controller is switched off, or the manager stops)."""

    # -- Reading -----------------------------------------------------------------------------------------

    @property
    def loop_time(self) -> float:
        return asyncio.get_running_loop().time()

    def now(self) -> str:
        return self.cluster.now()

    def wall(self) -> datetime.datetime:
        return self.cluster.clock()

    def rtype(self, key: StorageKey) -> ResourceType:
        return self.manager.rtype(key)

    def get(self, key: StorageKey, ref: Key) -> JsonDict | None:
        return self.cluster.peek(key, ref[0] or None, ref[1])

    def later(self, delay: float, key: Key) -> None:
        """Reconcile this key again after a delay (the earliest of the requested times wins)."""
        self.manager.schedule(self.name, key, delay)

    # -- Writing (through the apiserver's logic, as this controller's field manager) ---------------------

    async def create(
        self, key: StorageKey, namespace: str | None, body: JsonDict, *, manager: str | None = None
    ) -> JsonDict | None:
        """Create an object; None if it exists already (other failures raise, and are retried later)."""
        rtype = self.rtype(key)
        try:
            return await self.cluster.writes.create(rtype, namespace, body, manager=manager or self.field_manager)
        except errors.ApiError as exc:
            if exc.code == 409:
                logger.debug(
                    "%s: cannot create %s %s/%s: %s",
                    self.name,
                    rtype.kind,
                    namespace,
                    meta(body).get("name") or meta(body).get("generateName"),
                    exc.message,
                )
                return None
            raise

    async def update(
        self, obj: JsonDict, *, subresource: str | None = None, manager: str | None = None
    ) -> JsonDict | None:
        """Store a changed object (or its status); None if it is gone meanwhile."""
        key = self.cluster.storage_key_of_uid(meta(obj).get("uid", ""))
        if key is None:
            return None
        rtype = self.rtype(key)
        metadata = meta(obj)
        body = dict(obj)
        body["metadata"] = {k: v for k, v in metadata.items() if k != "resourceVersion"}
        try:
            return await self.cluster.writes.update(
                rtype,
                metadata.get("namespace"),
                metadata["name"],
                body,
                subresource=subresource,
                manager=manager or self.field_manager,
            )
        except errors.ApiError as exc:
            if exc.code == 404:
                return None
            raise

    async def update_status(self, obj: JsonDict, status: JsonDict, *, manager: str | None = None) -> JsonDict | None:
        """Store a new status, unless it is the same already (then nothing is written)."""
        if obj.get("status") == status:
            return obj
        return await self.update({**obj, "status": status}, subresource="status", manager=manager)

    async def delete(
        self, obj: JsonDict, *, grace: int | None = None, propagation: str | None = None, uid_precondition: bool = True
    ) -> None:
        key = self.cluster.storage_key_of_uid(meta(obj).get("uid", ""))
        if key is None:
            return
        rtype = self.rtype(key)
        metadata = meta(obj)
        options: JsonDict = {}
        if propagation is not None:
            options["propagationPolicy"] = propagation
        if grace is not None:
            options["gracePeriodSeconds"] = grace
        if uid_precondition:
            options["preconditions"] = {"uid": metadata["uid"]}
        try:
            await self.cluster.writes.delete(rtype, metadata.get("namespace"), metadata["name"], options)
        except errors.ApiError as exc:
            if exc.code not in (404, 409):
                raise
