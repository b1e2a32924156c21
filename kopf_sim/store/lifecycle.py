"""Deletion and what follows it: finalizers, garbage collection, namespace and CRD termination.

In a real cluster the garbage collector and the namespace/CRD controllers act asynchronously.
Here they act synchronously, right after the change that triggers them, in a fixed order, so
that every run sees the same sequence of events while clients still observe the same states.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from kopf_sim.kube import builtin_resources, crds, errors
from kopf_sim.kube.objects import JsonDict, clone, meta
from kopf_sim.kube.resources import Catalogue, ResourceType, StorageKey
from kopf_sim.store import graceful
from kopf_sim.timing.clock import Clock
from kopf_sim.writes import options as writeoptions
from kopf_sim.writes.preparing import StoreView

FOREGROUND = "foregroundDeletion"
ORPHAN = "orphan"
NAMESPACES: StorageKey = ("", "namespaces")
CRDS: StorageKey = ("apiextensions.k8s.io", "customresourcedefinitions")


class Store(StoreView, Protocol):
    """
    What deletion and its aftermath need of the store, which calls them with itself.

    Its reads, its catalogue (CRDs add and remove types), and its two low-level writes, which notify
    watchers but run no rules again; so the store imports this module, and this module not the store.
    """

    @property
    def clock(self) -> Clock: ...

    @property
    def catalogue(self) -> Catalogue: ...

    def resource(self, group: str, version: str, plural: str) -> ResourceType: ...

    def count(self, key: StorageKey | None = None) -> int: ...

    def by_uid(self, uid: str) -> JsonDict | None: ...

    def storage_key_of_uid(self, uid: str) -> StorageKey | None: ...

    def dependents_of(self, uid: str) -> list[JsonDict]: ...

    def replace(
        self, rtype: ResourceType, old: JsonDict, new: JsonDict, *, dry_run: bool = False, limit_size: bool = False
    ) -> JsonDict: ...

    def remove(self, key: StorageKey, old: JsonDict, *, final: JsonDict | None = None) -> JsonDict: ...


def _propagation(options: Mapping[str, Any]) -> str:
    writeoptions.check_delete_options(options)  # checked on the way in already when the request came over HTTP
    policy = options.get("propagationPolicy")
    if policy is None and options.get("orphanDependents") is True:
        policy = "Orphan"
    return str(policy or "Background")


def _check_preconditions(rtype: ResourceType, obj: JsonDict, options: Mapping[str, Any]) -> None:
    preconditions = options.get("preconditions") or {}
    metadata = meta(obj)
    uid, rv = preconditions.get("uid"), preconditions.get("resourceVersion")
    if uid and uid != metadata.get("uid"):
        raise errors.precondition_failed(
            rtype.plural,
            rtype.group,
            metadata["name"],
            f"UID in precondition: {uid}, UID in object meta: {metadata.get('uid')}",
        )
    if rv and rv != metadata.get("resourceVersion"):
        raise errors.precondition_failed(
            rtype.plural,
            rtype.group,
            metadata["name"],
            f"ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {metadata.get('resourceVersion')}",
        )


def _success(rtype: ResourceType, obj: JsonDict) -> JsonDict:
    """The answer to a DELETE that removed the object: a ``Status``, or the object for some kinds."""
    if rtype.returns_deleted_object:
        return obj
    details: JsonDict = {"name": meta(obj)["name"]}
    if rtype.group:
        details["group"] = rtype.group
    details["kind"] = rtype.plural
    details["uid"] = meta(obj).get("uid")
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}


def delete(
    cluster: Store,
    rtype: ResourceType,
    obj: JsonDict,
    options: Mapping[str, Any],
    *,
    dry_run: bool = False,
    as_status: bool = True,
) -> JsonDict:
    """Delete an object as the apiserver does: at once, or mark it and let finalizers hold it."""
    _check_preconditions(rtype, obj, options)
    policy = _propagation(options)
    metadata = meta(obj)
    if rtype.storage_key == NAMESPACES and metadata["name"] in builtin_resources.UNDELETABLE_NAMESPACES:
        raise errors.forbidden("namespaces", "", metadata["name"], "this namespace may not be deleted")
    grace = graceful.grace_period(rtype, obj, options)
    if metadata.get("deletionTimestamp"):
        if grace < int(metadata.get("deletionGracePeriodSeconds") or 0):
            return _shorten_grace(cluster, rtype, obj, grace, dry_run=dry_run, as_status=as_status)
        return obj  # already being deleted: the apiserver answers with the current state
    finalizers = list(metadata.get("finalizers") or ())
    if policy == "Foreground" and FOREGROUND not in finalizers:
        finalizers.append(FOREGROUND)
    if policy == "Orphan" and ORPHAN not in finalizers:
        finalizers.append(ORPHAN)
    is_namespace = rtype.storage_key == NAMESPACES
    if not finalizers and not is_namespace and not grace:
        if dry_run:
            return _success(rtype, obj) if as_status else obj
        removed = cluster.remove(rtype.storage_key, obj)
        return _success(rtype, obj) if as_status else removed  # answered as it was stored, not as deleted
    new: JsonDict = clone(obj)
    new_meta = new["metadata"]
    new_meta["deletionTimestamp"] = graceful.deletion_timestamp(cluster.clock(), grace) if grace else cluster.now()
    new_meta["deletionGracePeriodSeconds"] = grace
    if finalizers:
        new_meta["finalizers"] = finalizers
    if rtype.has_generation:
        new_meta["generation"] = int(new_meta.get("generation", 1)) + 1
    if is_namespace:
        new["status"] = {**(new.get("status") or {}), "phase": "Terminating"}
    if rtype.storage_key == CRDS:
        status = dict(new.get("status") or {})
        status["conditions"] = [*(status.get("conditions") or []), crds.terminating_condition(cluster.now())]
        new["status"] = status
    if dry_run:
        return new
    return cluster.replace(rtype, obj, new)


def _shorten_grace(
    cluster: Store, rtype: ResourceType, obj: JsonDict, grace: int, *, dry_run: bool, as_status: bool
) -> JsonDict:
    """A second DELETE with a shorter grace period (the kubelet's final one is 0): sooner, or at once."""
    new: JsonDict = clone(obj)
    new["metadata"]["deletionGracePeriodSeconds"] = grace
    new["metadata"]["deletionTimestamp"] = graceful.deletion_timestamp(cluster.clock(), grace)
    if dry_run:
        return new
    result = cluster.replace(rtype, obj, new)
    removed = cluster.by_uid(meta(obj)["uid"]) is None
    return _success(rtype, result) if removed and as_status else result


def after_create(cluster: Store, rtype: ResourceType, new: JsonDict) -> None:
    if rtype.storage_key == CRDS and "status" in new:
        _serve_crd(cluster, new)
    if new["metadata"].get("ownerReferences"):  # (most objects have none: a load's hundred thousand come here)
        _collect_if_orphaned(cluster, new)


def after_update(cluster: Store, rtype: ResourceType, old: JsonDict, new: JsonDict) -> None:
    if rtype.storage_key == CRDS and not meta(new).get("deletionTimestamp") and "status" in new:
        _serve_crd(cluster, new)
    if meta(new).get("ownerReferences") != meta(old).get("ownerReferences"):
        _collect_if_orphaned(cluster, new)
    if not meta(new).get("deletionTimestamp") or meta(old).get("deletionTimestamp"):
        return
    # The object has just been marked for deletion: start what its finalizers wait for.
    uid = meta(new)["uid"]
    finalizers = meta(new).get("finalizers") or ()
    if ORPHAN in finalizers:
        _orphan_dependents(cluster, uid)
        _drop_finalizer(cluster, uid, ORPHAN)
    if FOREGROUND in finalizers:
        for dependent in cluster.dependents_of(uid):
            _delete_quietly(cluster, dependent, "Foreground")
        _release_foreground_owner(cluster, uid)
    if rtype.storage_key == NAMESPACES:
        _delete_namespace_contents(cluster, meta(new)["name"])
        _finish_namespace_if_empty(cluster, meta(new)["name"])
    if rtype.storage_key == CRDS:
        _delete_crd_instances(cluster, new)
        _finish_crd_if_empty(cluster, new)


def after_removal(cluster: Store, key: StorageKey, last: JsonDict) -> None:
    metadata = meta(last)
    uid = metadata.get("uid", "")
    if key == CRDS:
        spec = last.get("spec") or {}
        cluster.catalogue.remove_resource(spec.get("group", ""), (spec.get("names") or {}).get("plural", ""))
    _collect_dependents(cluster, uid)
    for ref in metadata.get("ownerReferences") or ():
        _release_foreground_owner(cluster, ref.get("uid", ""))
    namespace = metadata.get("namespace")
    if namespace:
        _finish_namespace_if_empty(cluster, namespace)
    crd = _crd_of(cluster, key)
    if crd is not None and meta(crd).get("deletionTimestamp"):
        _finish_crd_if_empty(cluster, crd)


# -- Garbage collection ----------------------------------------------------------------------------


def _collect_dependents(cluster: Store, owner_uid: str) -> None:
    """Dependents whose owners are all gone are deleted; others lose the dangling reference."""
    for dependent in cluster.dependents_of(owner_uid):
        current = cluster.by_uid(meta(dependent)["uid"])
        if current is None:
            continue
        refs = meta(current).get("ownerReferences") or []
        alive = [r for r in refs if r.get("uid") != owner_uid and _owner_present(cluster, current, r)]
        if alive:
            _set_owner_references(cluster, current, [r for r in refs if r.get("uid") != owner_uid])
        elif not meta(current).get("deletionTimestamp"):
            _delete_quietly(cluster, current, "Background")


def _collect_if_orphaned(cluster: Store, obj: JsonDict) -> None:
    """A dependent whose owners are all gone (already when it was made, or made to point to them) is deleted."""
    references = meta(obj).get("ownerReferences")
    if not references:  # (most objects: a load's hundred thousand are asked this)
        return
    refs = [ref for ref in references if ref.get("uid")]
    if not refs or meta(obj).get("deletionTimestamp"):
        return
    if not any(_owner_present(cluster, obj, ref) for ref in refs):
        _delete_quietly(cluster, obj, "Background")


def _owner_present(cluster: Store, dependent: JsonDict, ref: Mapping[str, Any]) -> bool:
    """
    Whether the owner exists where the garbage collector looks for it: in the dependent's own namespace.

    A namespaced owner is found only in the namespace of its dependent; for a cluster-scoped dependent, only
    cluster-scoped owners count. An owner elsewhere is absent (as the apiserver's collector treats it: the
    dependent goes, where a real cluster also reports OwnerRefInvalidNamespace).
    """
    owner = cluster.by_uid(str(ref.get("uid", "")))
    if owner is None:
        return False
    owner_namespace = meta(owner).get("namespace")
    return not owner_namespace or owner_namespace == meta(dependent).get("namespace")


def _orphan_dependents(cluster: Store, owner_uid: str) -> None:
    for dependent in cluster.dependents_of(owner_uid):
        refs = meta(dependent).get("ownerReferences") or []
        _set_owner_references(cluster, dependent, [r for r in refs if r.get("uid") != owner_uid])


def _set_owner_references(cluster: Store, obj: JsonDict, refs: list[JsonDict]) -> None:
    rtype = _rtype_of(cluster, obj)
    new = clone(obj)
    if refs:
        new["metadata"]["ownerReferences"] = refs
    else:
        new["metadata"].pop("ownerReferences", None)
    cluster.replace(rtype, obj, new)


def _release_foreground_owner(cluster: Store, owner_uid: str) -> None:
    owner = cluster.by_uid(owner_uid)
    if owner is None or FOREGROUND not in (meta(owner).get("finalizers") or ()):
        return
    if not meta(owner).get("deletionTimestamp") or cluster.dependents_of(owner_uid):
        return
    _drop_finalizer(cluster, owner_uid, FOREGROUND)


def _drop_finalizer(cluster: Store, uid: str, finalizer: str) -> None:
    obj = cluster.by_uid(uid)
    if obj is None:
        return
    new = clone(obj)
    new["metadata"]["finalizers"] = [f for f in new["metadata"].get("finalizers") or () if f != finalizer]
    if not new["metadata"]["finalizers"]:
        del new["metadata"]["finalizers"]
    cluster.replace(_rtype_of(cluster, obj), obj, new)


def _delete_quietly(cluster: Store, obj: JsonDict, policy: str) -> None:
    current = cluster.by_uid(meta(obj).get("uid", ""))
    if current is not None:
        delete(cluster, _rtype_of(cluster, current), current, {"propagationPolicy": policy})


def _rtype_of(cluster: Store, obj: JsonDict) -> ResourceType:
    key = cluster.storage_key_of_uid(meta(obj)["uid"])
    assert key is not None
    rtypes = cluster.catalogue.for_storage(key)
    return next((t for t in rtypes if t.preferred), rtypes[0])


# -- Namespaces ------------------------------------------------------------------------------------


def _namespaced_keys(cluster: Store) -> list[StorageKey]:
    return sorted({t.storage_key for t in cluster.catalogue if t.namespaced})


def _delete_namespace_contents(cluster: Store, namespace: str) -> None:
    for key in _namespaced_keys(cluster):
        for obj in list(cluster.objects(key, namespace)):
            if not meta(obj).get("deletionTimestamp"):
                _delete_quietly(cluster, obj, "Background")


def _finish_namespace_if_empty(cluster: Store, namespace: str) -> None:
    ns = cluster.peek(NAMESPACES, None, namespace)
    if ns is None or not meta(ns).get("deletionTimestamp"):
        return
    for key in _namespaced_keys(cluster):
        if next(cluster.objects(key, namespace), None) is not None:
            return
    new = clone(ns)
    new["spec"] = {**(new.get("spec") or {}), "finalizers": []}
    rtype = cluster.resource("", "v1", "namespaces")
    if meta(new).get("finalizers"):
        cluster.replace(rtype, ns, new)
    else:
        cluster.remove(NAMESPACES, ns, final=new)


# -- CustomResourceDefinitions ---------------------------------------------------------------------


def _serve_crd(cluster: Store, crd: JsonDict) -> None:
    if not crds.is_established(crd):  # its names are taken by another CRD: nothing is served for it
        return
    spec = crd["spec"]
    cluster.catalogue.remove_resource(spec["group"], spec["names"]["plural"])
    for rtype in crds.crd_types(crd):
        cluster.catalogue.add(rtype)


def _crd_of(cluster: Store, key: StorageKey) -> JsonDict | None:
    group, plural = key
    if not group or key == CRDS:
        return None
    return cluster.peek(CRDS, None, f"{plural}.{group}")


def _delete_crd_instances(cluster: Store, crd: JsonDict) -> None:
    key = (crd["spec"]["group"], crd["spec"]["names"]["plural"])
    for obj in list(cluster.objects(key)):
        if not meta(obj).get("deletionTimestamp"):
            _delete_quietly(cluster, obj, "Background")


def _finish_crd_if_empty(cluster: Store, crd: JsonDict) -> None:
    key = (crd["spec"]["group"], crd["spec"]["names"]["plural"])
    if cluster.count(key):
        return
    current = cluster.peek(CRDS, None, meta(crd)["name"])
    if current is not None and crds.CLEANUP_FINALIZER in (meta(current).get("finalizers") or ()):
        _drop_finalizer(cluster, meta(current)["uid"], crds.CLEANUP_FINALIZER)
