"""The object store: objects, resource versions, history, watches, and the writes' semantics.

All operations are synchronous and run to completion without awaiting, so each request is
atomic with respect to others in the same event loop and the order of changes is deterministic.
Deletion, garbage collection and terminations live in :mod:`kopf_sim.store.lifecycle`.
"""

from __future__ import annotations

import base64
import collections
import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Unpack

from kopf_sim.admission.control import AdmissionControl
from kopf_sim.kube import builtin_types, errors
from kopf_sim.kube.objects import JsonDict, clone, meta
from kopf_sim.kube.resources import Catalogue, ResourceType, StorageKey
from kopf_sim.kube.selectors import FieldSelector, LabelSelector
from kopf_sim.store import lifecycle, pipeline
from kopf_sim.store.watching import Change, Subscription, WatchEvent
from kopf_sim.timing.clock import Clock, UidFactory, format_timestamp, random_uids, system_clock
from kopf_sim.writes import preparing

ObjectKey = tuple[str, str]  # (namespace or "", name)
Observer = Callable[[Change], None]
#: Told of each watch event as it is sent to a watcher (its resource type as watched, and the event).
DeliveryObserver = Callable[[ResourceType, WatchEvent], None]
JsonList = list[JsonDict]
_MAX_CONTINUE_TOKEN = 4096  # ours are a few dozen bytes
#: How many changes the history keeps for watches and continue tokens (etcd's compaction, by count):
#: older versions are 410 Expired. It bounds the memory of long runs (a version kept per change).
HISTORY_WINDOW = 10_000


class Cluster:
    """The whole simulated cluster's state, with the apiserver's semantics on every write."""

    def __init__(
        self,
        *,
        clock: Clock = system_clock,
        uids: UidFactory = random_uids,
        history_window: int = HISTORY_WINDOW,
        version: str = "v1.32.0",
    ) -> None:
        self.clock = clock
        self.uids = uids
        self.history_window = history_window
        self.version = version
        self.catalogue = Catalogue(builtin_types.builtin_types())
        self.rv = 0
        self.compacted_rv = 0
        self.history: collections.deque[Change] = collections.deque()
        self.observers: list[Observer] = []
        #: Told of every object's watch event (ADDED, MODIFIED, DELETED) as a watch stream sends it.
        self.deliveries: list[DeliveryObserver] = []
        self._objects: dict[StorageKey, dict[ObjectKey, JsonDict]] = {}
        self._by_uid: dict[str, tuple[StorageKey, ObjectKey]] = {}
        self._dependents: dict[str, set[str]] = {}  # owner uid -> dependent uids
        self._subscriptions: list[Subscription] = []
        #: The dynamic admission of this cluster's writes (webhooks, served in-process or over HTTPS).
        self.admission = AdmissionControl(self)
        #: The writes, awaited (each prepared, admitted and committed); the methods below run them synchronously.
        self.writes = pipeline.WritePipeline(self, self.admission)
        for name in builtin_types.INITIAL_NAMESPACES:
            self.create(
                self.resource("", "v1", "namespaces"),
                None,
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}},
            )

    # -- Lookups ---------------------------------------------------------------------------------

    def now(self) -> str:
        return format_timestamp(self.clock())

    def resource(self, group: str, version: str, plural: str) -> ResourceType:
        rtype = self.catalogue.lookup(group, version, plural)
        if rtype is None:
            raise errors.page_not_found()
        return rtype

    def resource_for(self, api_version: str, kind: str) -> ResourceType:
        rtype = self.catalogue.by_kind(api_version, kind)
        if rtype is None:
            version = api_version.rpartition("/")[2]
            raise errors.ApiError(
                404,
                "NotFound",
                f'no matches for kind "{kind}" in version "{api_version}"'
                if version
                else f"unknown apiVersion {api_version!r}",
            )
        return rtype

    def peek(self, key: StorageKey, namespace: str | None, name: str) -> JsonDict | None:
        """The stored object (not a copy: never mutate it) or None."""
        return self._objects.get(key, {}).get((namespace or "", name))

    def by_uid(self, uid: str) -> JsonDict | None:
        where = self._by_uid.get(uid)
        return None if where is None else self._objects[where[0]][where[1]]

    def storage_key_of_uid(self, uid: str) -> StorageKey | None:
        where = self._by_uid.get(uid)
        return None if where is None else where[0]

    def dependents_of(self, uid: str) -> JsonList:
        found = [self.by_uid(dep) for dep in self._dependents.get(uid, ())]
        return sorted((obj for obj in found if obj is not None), key=_sort_key)

    def objects(self, key: StorageKey, namespace: str | None = None) -> Iterator[JsonDict]:
        """Stored objects in etcd order (namespace, then name); never mutate them."""
        bucket = self._objects.get(key, {})
        for (ns, _), obj in sorted(bucket.items()):
            if namespace is None or ns == namespace:
                yield obj

    def everything(self) -> Iterator[tuple[StorageKey, JsonDict]]:
        """Every stored object with its storage key (e.g. the state a recording starts from); never mutate them."""
        for key in list(self._objects):
            for obj in self.objects(key):
                yield key, obj

    def count(self, key: StorageKey | None = None) -> int:
        if key is not None:
            return len(self._objects.get(key, {}))
        return sum(len(bucket) for bucket in self._objects.values())

    def present(self, obj: JsonDict, rtype: ResourceType) -> JsonDict:
        """The object as served at the requested version (only ``apiVersion`` differs across versions)."""
        if obj.get("apiVersion") == rtype.api_version:
            return obj
        return {**obj, "apiVersion": rtype.api_version}

    # -- Reads -----------------------------------------------------------------------------------

    def get(self, rtype: ResourceType, namespace: str | None, name: str) -> JsonDict:
        obj = self.peek(rtype.storage_key, namespace, name)
        if obj is None:
            raise errors.not_found(rtype.plural, rtype.group, name)
        return self.present(obj, rtype)

    def get_at(self, rtype: ResourceType, namespace: str | None, name: str, rv: int) -> JsonDict:
        """The object as it was at revision ``rv`` (a lagging cache's view; no older than the history)."""
        obj = self._bucket_at(rtype.storage_key, self.stale_revision(rv)).get((namespace or "", name))
        if obj is None:
            raise errors.not_found(rtype.plural, rtype.group, name)
        return self.present(obj, rtype)

    def stale_revision(self, rv: int) -> int:
        """The revision that a read of ``rv`` can be served at: never older than the history kept."""
        return max(self.compacted_rv, min(rv, self.rv))

    def list(
        self,
        rtype: ResourceType,
        namespace: str | None,
        *,
        labels: LabelSelector | None = None,
        fields: FieldSelector | None = None,
        limit: int | None = None,
        continue_token: str | None = None,
        at_rv: int | None = None,
    ) -> JsonDict:
        """The objects (of a namespace, selected); ``at_rv``: as they were at that revision (a stale read)."""
        list_rv = self.rv
        start_after: tuple[str, str] | None = None
        if at_rv is not None and not continue_token:
            list_rv = self.stale_revision(at_rv)
        if continue_token:
            list_rv, start_after = self._decode_continue(continue_token)
            if list_rv == LATEST:  # a token handed out with a 410: the rest of the list as it is now
                list_rv = self.rv
        label_check = labels if labels is not None and not labels.empty else None
        field_check = fields if fields is not None and not fields.empty else None
        # Later pages come from the first page's snapshot, as etcd serves them at the token's revision.
        bucket = (
            self._objects.get(rtype.storage_key, {})
            if start_after is None and list_rv == self.rv
            else self._bucket_at(rtype.storage_key, list_rv)
        )
        keys: Iterable[ObjectKey] = sorted(bucket)
        exact = field_check.exact_name() if field_check is not None else None
        if exact is not None:
            keys = [k for k in keys if k[1] == exact]
        api_version = rtype.api_version
        items: JsonList = []
        remaining = 0
        last_key: tuple[str, str] | None = None
        for key in keys:
            if namespace is not None and key[0] != namespace:
                continue
            if start_after is not None and key <= start_after:
                continue
            obj = bucket[key]
            if label_check is not None and not label_check.matches(obj["metadata"].get("labels")):
                continue
            if field_check is not None and not field_check.matches(obj):
                continue
            if limit and len(items) >= limit:
                remaining += 1
                continue
            items.append(obj if obj.get("apiVersion") == api_version else {**obj, "apiVersion": api_version})
            last_key = key
        list_meta: JsonDict = {"resourceVersion": str(list_rv)}
        if remaining and last_key is not None:
            list_meta["continue"] = self._encode_continue(list_rv, last_key)
            list_meta["remainingItemCount"] = remaining
        return {"kind": rtype.list_kind, "apiVersion": rtype.api_version, "metadata": list_meta, "items": items}

    def _bucket_at(self, key: StorageKey, rv: int) -> dict[ObjectKey, JsonDict]:
        """The objects of a resource as they were at version ``rv``: the later history undone."""
        bucket = dict(self._objects.get(key, {}))
        for change in reversed(self.history):
            if change.rv <= rv:
                break
            if change.key == key:
                metadata = meta(change.obj)
                object_key = (metadata.get("namespace", ""), metadata["name"])
                if change.old is None:
                    bucket.pop(object_key, None)
                else:
                    bucket[object_key] = change.old
        return bucket

    def _encode_continue(self, rv: int, key: tuple[str, str]) -> str:
        raw = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": f"{key[0]}/{key[1]}"})
        return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")

    def _decode_continue(self, token: str) -> tuple[int, tuple[str, str]]:
        rv, start = _decode_continue_token(token)
        namespace, _, name = start.partition("/")
        if rv != LATEST and rv < self.compacted_rv:
            # As the apiserver does: a token for the same start key at "the latest version" comes with the 410.
            raise errors.expired(
                "The provided continue parameter is too old to display a consistent list result. "
                "You can start a new list without the continue parameter, or use the continue token "
                "in this response to retrieve the remainder of the results. Continuing with the "
                "provided token results in an inconsistent list - objects that were created, modified, "
                "or deleted between the time the first chunk was returned and now may show up in the list.",
                continue_token=self._encode_continue(LATEST, (namespace, name)),
            )
        return rv, (namespace, name)

    # -- Writes (synchronous; the HTTP layer and the controllers await ``self.writes``) -----------------

    def create(
        self, rtype: ResourceType, namespace: str | None, body: Any, **options: Unpack[pipeline.WriteOptions]
    ) -> JsonDict:
        return pipeline.run_now(self.writes.create(rtype, namespace, body, **options))

    def update(
        self,
        rtype: ResourceType,
        namespace: str | None,
        name: str,
        body: Any,
        *,
        subresource: str | None = None,
        **options: Unpack[pipeline.WriteOptions],
    ) -> JsonDict:
        return pipeline.run_now(self.writes.update(rtype, namespace, name, body, subresource=subresource, **options))

    def patch(
        self,
        rtype: ResourceType,
        namespace: str | None,
        name: str,
        patch: Any,
        content_type: str,
        *,
        subresource: str | None = None,
        **options: Unpack[pipeline.PatchOptions],
    ) -> JsonDict:
        write = self.writes.patch(rtype, namespace, name, patch, content_type, subresource=subresource, **options)
        return pipeline.run_now(write)

    def delete(
        self,
        rtype: ResourceType,
        namespace: str | None,
        name: str,
        options: Mapping[str, Any] | None = None,
        *,
        dry_run: bool = False,
    ) -> JsonDict:
        return pipeline.run_now(self.writes.delete(rtype, namespace, name, options, dry_run=dry_run))

    def delete_collection(
        self,
        rtype: ResourceType,
        namespace: str | None,
        *,
        labels: LabelSelector | None = None,
        fields: FieldSelector | None = None,
        options: Mapping[str, Any] | None = None,
        dry_run: bool = False,
    ) -> JsonDict:
        deletion = self.writes.delete_collection(
            rtype, namespace, labels=labels, fields=fields, options=options, dry_run=dry_run
        )
        return pipeline.run_now(deletion)

    # -- Commits: the only places where the stored state changes -----------------------------------

    def commit_new(self, rtype: ResourceType, new: JsonDict) -> JsonDict:
        metadata = new["metadata"]
        bucket = self._objects.setdefault(rtype.storage_key, {})
        key = (metadata.get("namespace", ""), metadata["name"])
        if key in bucket:
            raise errors.already_exists(rtype.plural, rtype.group, metadata["name"])
        self.rv += 1
        metadata["resourceVersion"] = str(self.rv)
        bucket[key] = new
        self._index(rtype.storage_key, key, None, new)
        self._record(Change(self.rv, rtype.storage_key, "ADDED", new, None))
        lifecycle.after_create(self, rtype, new)
        return new

    def replace(self, rtype: ResourceType, old: JsonDict, new: JsonDict, *, dry_run: bool = False) -> JsonDict:
        """Store ``new`` in place of ``old``: a no-op when nothing changed; deletes emptied finalizers."""
        if preparing.same_content(old, new):
            return old
        metadata = new["metadata"]
        if metadata.get("deletionTimestamp") and not preparing.held(rtype, new):
            if dry_run:
                return new
            return self.remove(rtype.storage_key, old, final=new)
        if dry_run:
            return new
        self.rv += 1
        metadata["resourceVersion"] = str(self.rv)
        key = (metadata.get("namespace", ""), metadata["name"])
        self._objects[rtype.storage_key][key] = new
        self._index(rtype.storage_key, key, old, new)
        self._record(Change(self.rv, rtype.storage_key, "MODIFIED", new, old))
        lifecycle.after_update(self, rtype, old, new)
        return new

    def remove(self, key: StorageKey, old: JsonDict, *, final: JsonDict | None = None) -> JsonDict:
        """Remove an object for good: the DELETED event carries its last state with a new version."""
        last = dict(final if final is not None else old)
        last["metadata"] = dict(meta(last))
        self.rv += 1
        last["metadata"]["resourceVersion"] = str(self.rv)
        object_key = (last["metadata"].get("namespace", ""), last["metadata"]["name"])
        del self._objects[key][object_key]
        self._index(key, object_key, old, None)
        self._record(Change(self.rv, key, "DELETED", last, old))
        lifecycle.after_removal(self, key, last)
        return last

    def _index(self, key: StorageKey, object_key: ObjectKey, old: JsonDict | None, new: JsonDict | None) -> None:
        old_uid = meta(old).get("uid") if old else None
        if old is not None and old_uid:
            for ref in meta(old).get("ownerReferences") or ():
                deps = self._dependents.get(ref.get("uid", ""))
                if deps is not None:
                    deps.discard(old_uid)
                    if not deps:
                        del self._dependents[ref.get("uid", "")]
            if new is None:
                self._by_uid.pop(old_uid, None)
        if new is not None:
            uid = meta(new)["uid"]
            self._by_uid[uid] = (key, object_key)
            for ref in meta(new).get("ownerReferences") or ():
                if ref.get("uid"):
                    self._dependents.setdefault(ref["uid"], set()).add(uid)

    def _record(self, change: Change) -> None:
        self.history.append(change)
        while len(self.history) > self.history_window:
            self.compacted_rv = self.history.popleft().rv
        for subscription in list(self._subscriptions):
            subscription.offer(change)
        for observer in list(self.observers):
            observer(change)

    def compact(self, upto: int | None = None) -> None:
        """Forget the history up to ``upto`` (default: all of it): older versions then get 410 Expired."""
        limit = self.rv if upto is None else upto
        while self.history and self.history[0].rv <= limit:
            self.history.popleft()
        self.compacted_rv = max(self.compacted_rv, limit)

    # -- Watching --------------------------------------------------------------------------------

    def watch(
        self,
        rtype: ResourceType,
        namespace: str | None,
        *,
        labels: LabelSelector | None = None,
        fields: FieldSelector | None = None,
        resource_version: str | None = None,
        send_initial_events: bool = False,
    ) -> Subscription:
        """Subscribe to changes; the backlog (initial objects or missed history) is queued at once.

        An expired version yields a subscription with one ERROR event (410 Expired), as the apiserver
        reports it in-stream rather than as an HTTP error.
        """
        subscription = Subscription(
            rtype,
            namespace,
            labels or LabelSelector(),
            fields or FieldSelector(),
            on_close=self._subscriptions.remove,
            max_pending=self.history_window,
        )
        start: int | None = None
        if resource_version not in (None, "", "0") and not send_initial_events:
            try:
                start = int(resource_version or "")
            except ValueError:
                raise errors.bad_request(f'invalid resource version "{resource_version}"') from None
        if start is None:
            for obj in self.objects(rtype.storage_key, namespace):
                if subscription.matches(obj):
                    subscription.push(WatchEvent("ADDED", obj, int(meta(obj)["resourceVersion"])))
        elif start < self.compacted_rv:
            status = errors.expired(f"too old resource version: {start} ({self.compacted_rv + 1})").to_status()
            subscription.push(WatchEvent("ERROR", status, self.rv))
            subscription.closed = True
            return subscription
        else:
            for change in self.history:
                if change.rv > start:
                    subscription.offer(change)
        self._subscriptions.append(subscription)
        return subscription

    def watched(self, key: StorageKey) -> bool:
        """Whether a watch stream follows this resource now (e.g. an operator has started to)."""
        return any(subscription.rtype.storage_key == key for subscription in self._subscriptions)

    def withheld(self) -> int:
        """How many events are held back from their watchers now (by a withholding fault), not yet delivered.

        A cluster with such events is not quiet yet: its watchers have not seen its latest state.
        """
        return sum(subscription.withheld for subscription in self._subscriptions)

    def withheld_revisions(self) -> set[int]:
        """The resource versions of the changes held back from their watchers now (see :meth:`withheld`)."""
        return {rv for subscription in self._subscriptions for rv in subscription.withheld_revisions()}

    def close_watches(self) -> None:
        for subscription in list(self._subscriptions):
            subscription.close()

    # -- Convenience for loading manifests ---------------------------------------------------------

    def apply_manifests(self, documents: Iterable[Any]) -> JsonList:
        """Create every object of the documents (``List`` kinds unfolded), CRDs served at once."""
        created: JsonList = []
        for doc in documents:
            if not doc:
                continue
            if isinstance(doc, Mapping) and str(doc.get("kind", "")).endswith("List") and "items" in doc:
                created.extend(self.apply_manifests(doc["items"]))
                continue
            if not isinstance(doc, Mapping):
                raise errors.bad_request(f"a manifest must be a mapping, got {type(doc).__name__}")
            rtype = self.resource_for(str(doc.get("apiVersion", "")), str(doc.get("kind", "")))
            namespace = meta(doc).get("namespace", "default") if rtype.namespaced else None
            created.append(self.create(rtype, namespace, clone(dict(doc))))
        return created


LATEST = -1  # the version of a continue token that goes on at the latest version (handed out with a 410)


def _decode_continue_token(token: str) -> tuple[int, str]:
    """The version and start key of a continue token; a 400 if it is not one of ours (however it is made)."""
    if len(token) > _MAX_CONTINUE_TOKEN:
        raise errors.bad_request("continue key is not valid: too long")
    try:
        raw = base64.b64decode(token + "=" * (-len(token) % 4), altchars=b"-_", validate=True)
    except ValueError:
        raise errors.bad_request("continue key is not valid: illegal base64 data") from None
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        raise errors.bad_request("continue key is not valid: the token is not JSON") from None
    if not isinstance(data, dict):
        raise errors.bad_request("continue key is not valid: the token is not a JSON object")
    if data.get("v") != "meta.k8s.io/v1":
        raise errors.bad_request(
            f"continue key is not valid: server does not recognize this encoded version "
            f"{json.dumps(str(data.get('v', '')))}"
        )
    rv, start = data.get("rv"), data.get("start")
    if not isinstance(rv, int) or isinstance(rv, bool) or not (0 < rv < 2**63 or rv == LATEST):
        raise errors.bad_request(
            "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)"
        )
    if not isinstance(start, str) or not start:
        raise errors.bad_request("continue key is not valid: encoded start key empty (version meta.k8s.io/v1)")
    return rv, start


def _sort_key(obj: JsonDict) -> tuple[str, str]:
    metadata = meta(obj)
    return (metadata.get("namespace", ""), metadata.get("name", ""))
