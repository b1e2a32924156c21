"""The object store: objects, resource versions, history, watches, and the writes' semantics.

All operations are synchronous and run to completion without awaiting, so each request is
atomic with respect to others in the same event loop and the order of changes is deterministic.
Deletion, garbage collection and terminations live in :mod:`kopf_sim.store.lifecycle`.
"""

from __future__ import annotations

import collections
import datetime
import functools
import itertools
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Unpack

from kopf_sim.admission.control import AdmissionControl
from kopf_sim.kube import builtin_resources, errors
from kopf_sim.kube.jsoncodec import compact_bytes
from kopf_sim.kube.objects import JsonDict, meta
from kopf_sim.kube.resources import Catalogue, ResourceType, StorageKey
from kopf_sim.kube.selectors import FieldSelector, LabelSelector
from kopf_sim.store import lifecycle, paging, pipeline
from kopf_sim.store.allocations import ServiceAllocations
from kopf_sim.store.buckets import Bucket, ObjectKey
from kopf_sim.store.lagging import Holding
from kopf_sim.store.paging import LATEST, Listing, Selection
from kopf_sim.store.snapshots import Snapshot, Snapshots
from kopf_sim.store.stored import HOT_OBJECTS, HotObjects, Stored
from kopf_sim.store.watching import Change, Subscription, WatchEvent
from kopf_sim.timing.clock import Clock, UidFactory, format_timestamp, random_uids, system_clock
from kopf_sim.writes import preparing

Observer = Callable[[Change], None]
#: Told of each watch event as it is sent to a watcher (its resource type as watched, and the event).
DeliveryObserver = Callable[[ResourceType, WatchEvent], None]
JsonList = list[JsonDict]
#: How many objects a watch's start reads at a time (between them, the store may change: the snapshot holds).
INITIAL_EVENTS_BATCH = 500
#: How many changes the history keeps for watches and continue tokens (etcd's compaction, by count):
#: older versions are 410 Expired. It bounds the memory of long runs (a version kept per change).
HISTORY_WINDOW = 10_000
_SECOND = datetime.timedelta(seconds=1)
_SERVICES = ("", "services")


class Cluster:
    """The whole simulated cluster's state, with the apiserver's semantics on every write."""

    def __init__(
        self,
        *,
        clock: Clock = system_clock,
        uids: UidFactory = random_uids,
        history_window: int = HISTORY_WINDOW,
        version: str = "v1.32.0",
        hot_objects: int = HOT_OBJECTS,
    ) -> None:
        self.clock = clock
        self.uids = uids
        self.history_window = history_window
        self.version = version
        self.catalogue = Catalogue(builtin_resources.builtin_resources())
        self.rv = 0
        self.compacted_rv = 0
        self.history: collections.deque[Change] = collections.deque()
        self.observers: list[Observer] = []
        #: Told of every object's watch event (ADDED, MODIFIED, DELETED) as a watch stream sends it.
        self.deliveries: list[DeliveryObserver] = []
        #: Asked at every change whether its watchers get its event held back (e.g. by an injected fault).
        self.holding: list[Callable[[Change], Holding | None]] = []
        self._second: tuple[datetime.datetime, datetime.datetime, str] | None = None  # the last second: bounds, text
        self._hot = HotObjects(hot_objects)
        self._objects: dict[StorageKey, Bucket] = {}
        self._snapshots = Snapshots()
        self._by_uid: dict[str, tuple[StorageKey, ObjectKey]] = {}
        self._dependents: dict[str, set[str]] = {}  # owner uid -> dependent uids
        self._allocations = ServiceAllocations()  # the services' cluster IPs and node ports
        self._subscriptions: list[Subscription] = []
        #: The dynamic admission of this cluster's writes (webhooks, served in-process or over HTTPS).
        self.admission = AdmissionControl(self)
        #: The writes, awaited (each prepared, admitted and committed); the methods below run them synchronously.
        self.writes = pipeline.WritePipeline(self, self.admission)
        for name in builtin_resources.INITIAL_NAMESPACES:
            self.create(
                self.resource("", "v1", "namespaces"),
                None,
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}},
            )

    # -- Lookups ---------------------------------------------------------------------------------

    def now(self) -> str:
        """The time as the apiserver writes it (to the second): formatted once a second."""
        moment = self.clock()
        second = self._second
        if second is None or not second[0] <= moment < second[1]:
            start = moment.replace(microsecond=0)
            second = self._second = (start, start + _SECOND, format_timestamp(start))
        return second[2]

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
        stored = self.stored(key, namespace, name)
        return None if stored is None else stored.obj

    def stored(self, key: StorageKey, namespace: str | None, name: str) -> Stored | None:
        """The stored state of an object (its bytes, e.g. to send it) or None."""
        bucket = self._objects.get(key)
        return None if bucket is None else bucket.get((namespace or "", name))

    def cluster_ip_taken(self, address: str) -> bool:
        """Whether a stored service holds this cluster IP (the allocator's question)."""
        return self._allocations.cluster_ip_taken(address)

    def node_port_taken(self, port: int) -> bool:
        """Whether a stored service holds this node port."""
        return self._allocations.node_port_taken(port)

    def by_uid(self, uid: str) -> JsonDict | None:
        where = self._by_uid.get(uid)
        if where is None:
            return None
        stored = self._objects[where[0]].get(where[1])
        return None if stored is None else stored.obj

    def storage_key_of_uid(self, uid: str) -> StorageKey | None:
        where = self._by_uid.get(uid)
        return None if where is None else where[0]

    def dependents_of(self, uid: str) -> JsonList:
        found = [self.by_uid(dep) for dep in self._dependents.get(uid, ())]
        return sorted((obj for obj in found if obj is not None), key=_sort_key)

    def objects(self, key: StorageKey, namespace: str | None = None) -> Iterator[JsonDict]:
        """Stored objects in etcd order (namespace, then name), as they were when first asked; never mutate them."""
        bucket = self._objects.get(key)
        if bucket is not None:
            found = [stored for _, stored in Snapshot(key, bucket, self.rv).items(namespace)]
            for stored in found:
                yield stored.obj

    def everything(self) -> Iterator[tuple[StorageKey, JsonDict]]:
        """Every stored object with its storage key (e.g. the state a recording starts from); never mutate them."""
        for key in list(self._objects):
            for obj in self.objects(key):
                yield key, obj

    def count(self, key: StorageKey | None = None) -> int:
        if key is not None:
            bucket = self._objects.get(key)
            return 0 if bucket is None else len(bucket)
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
        stored = self.snapshot(rtype.storage_key, self.stale_revision(rv)).get((namespace or "", name))
        if stored is None:
            raise errors.not_found(rtype.plural, rtype.group, name)
        return self.present(stored.obj, rtype)

    def revision_before(
        self,
        key: StorageKey,
        namespace: str | None,
        name: str | None = None,
        *,
        changes: int = 1,
        matches: Callable[[JsonDict], bool] | None = None,
    ) -> int:
        """The revision just before the ``changes`` latest changes of an object (or of a collection's objects).

        ``name`` None: any object of the key in the namespace (all namespaces if None too), that ``matches``
        (before or after the change). No older than the history kept; the latest if nothing has changed.
        """
        found = 0
        for change in reversed(self.history):
            if change.key != key:
                continue
            metadata = meta(change.obj)
            if namespace is not None and metadata.get("namespace") != namespace:
                continue
            if name is not None and metadata.get("name") != name:
                continue
            if matches is not None and not (matches(change.obj) or (change.old is not None and matches(change.old))):
                continue
            found += 1
            if found >= changes:
                return self.stale_revision(change.rv - 1)
        return self.stale_revision(self.compacted_rv if found else self.rv)

    def stale_revision(self, rv: int) -> int:
        """The revision that a read of ``rv`` can be served at: never older than the history kept."""
        return max(self.compacted_rv, min(rv, self.rv))

    def snapshot(self, key: StorageKey, rv: int) -> Snapshot:
        """The objects of a resource as they were at revision ``rv`` (no older than the history kept)."""
        bucket = self._objects.get(key)
        if bucket is None:
            bucket = self._objects[key] = Bucket()
        since = rv + 1 - self.history[0].rv if self.history else 0  # the history has one change per revision
        changes = itertools.islice(self.history, max(since, 0), None)
        return self._snapshots.at(key, bucket, rv, changes, latest=self.rv)

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
        listing = self.read_list(
            rtype, namespace, labels=labels, fields=fields, limit=limit, continue_token=continue_token, at_rv=at_rv
        )
        return listing.to_dict()

    def read_list(
        self,
        rtype: ResourceType,
        namespace: str | None,
        *,
        labels: LabelSelector | None = None,
        fields: FieldSelector | None = None,
        limit: int | None = None,
        continue_token: str | None = None,
        at_rv: int | None = None,
    ) -> Listing:
        """A list or a page of it, its objects as stored (to be sent as bytes, or decoded).

        Later pages come from the first page's snapshot, as etcd serves them at the token's revision.
        """
        list_rv = self.rv
        start_after: ObjectKey | None = None
        if at_rv is not None and not continue_token:
            list_rv = self.stale_revision(at_rv)
        if continue_token:
            list_rv, start_after = paging.decode_token(continue_token, compacted_rv=self.compacted_rv)
            if list_rv == LATEST:  # a token handed out with a 410: the rest of the list as it is now
                list_rv = self.rv
        view = self.snapshot(rtype.storage_key, list_rv)
        selection = Selection(namespace, labels, fields)
        page = paging.read_page(view, selection, limit=limit, after=start_after)
        list_meta: JsonDict = {"resourceVersion": str(list_rv)}
        if page.last is not None:
            list_meta["continue"] = paging.encode_token(list_rv, page.last)
            if page.remaining is not None:
                list_meta["remainingItemCount"] = page.remaining
        return Listing(rtype, list_meta, page.items)

    # -- Writes (synchronous; the HTTP layer and the controllers await ``self.writes``) -----------------

    def create(
        self, rtype: ResourceType, namespace: str | None, body: Any, **options: Unpack[pipeline.WriteOptions]
    ) -> JsonDict:
        return self.writes.create_now(rtype, namespace, body, **options)

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
        **write_options: Unpack[pipeline.DeleteOptions],
    ) -> JsonDict:
        return pipeline.run_now(self.writes.delete(rtype, namespace, name, options, **write_options))

    def delete_collection(
        self, rtype: ResourceType, namespace: str | None, **collection: Unpack[pipeline.CollectionOptions]
    ) -> JsonDict:
        return pipeline.run_now(self.writes.delete_collection(rtype, namespace, **collection))

    # -- Commits: the only places where the stored state changes -----------------------------------

    def commit_new(self, rtype: ResourceType, new: JsonDict, *, limit_size: bool = False) -> JsonDict:
        """Store a new object (a 409 if its name is taken); ``limit_size``: a 413 if it is too large to store."""
        metadata = new["metadata"]
        bucket = self._objects.get(rtype.storage_key)
        if bucket is None:
            bucket = self._objects[rtype.storage_key] = Bucket()
        key = (sys.intern(metadata.get("namespace", "")), metadata["name"])  # a namespace is shared by many keys
        if key in bucket:
            raise errors.already_exists(rtype.plural, rtype.group, metadata["name"])
        raw = self._encoded(new, limit_size=limit_size)
        self.rv += 1
        stored = Stored(new, self._hot, raw=raw)
        bucket.put(key, stored, None)
        self._index(rtype.storage_key, key, None, new)
        self._record(Change(self.rv, rtype.storage_key, "ADDED", stored, None, key))
        lifecycle.after_create(self, rtype, new)
        return new

    def replace(
        self, rtype: ResourceType, old: JsonDict, new: JsonDict, *, dry_run: bool = False, limit_size: bool = False
    ) -> JsonDict:
        """Store ``new`` in place of ``old``: a no-op when nothing changed; deletes emptied finalizers.

        ``limit_size``: a 413 if the new state is too large to store (a request's write; the store's own are not).
        """
        if preparing.same_content(old, new):
            return old
        metadata = new["metadata"]
        if metadata.get("deletionTimestamp") and not preparing.held(rtype, new):
            if dry_run:
                return new
            return self.remove(rtype.storage_key, old, final=new)
        if dry_run:
            if limit_size:
                preparing.check_size(new)
            return new
        raw = self._encoded(new, limit_size=limit_size)
        self.rv += 1
        key = (metadata.get("namespace", ""), metadata["name"])
        bucket = self._objects[rtype.storage_key]
        previous = bucket.get(key)
        stored = Stored(new, self._hot, raw=raw)
        bucket.put(key, stored, previous)
        self._index(rtype.storage_key, key, old, new)
        self._record(Change(self.rv, rtype.storage_key, "MODIFIED", stored, previous, key))
        lifecycle.after_update(self, rtype, old, new)
        return new

    def remove(self, key: StorageKey, old: JsonDict, *, final: JsonDict | None = None) -> JsonDict:
        """Remove an object for good: the DELETED event carries its last state with a new version."""
        last = dict(final if final is not None else old)
        last["metadata"] = dict(meta(last))
        self.rv += 1
        last["metadata"]["resourceVersion"] = str(self.rv)
        object_key = (last["metadata"].get("namespace", ""), last["metadata"]["name"])
        previous = self._objects[key].pop(object_key)
        self._index(key, object_key, old, None)
        self._record(Change(self.rv, key, "DELETED", Stored(last, self._hot), previous, object_key))
        lifecycle.after_removal(self, key, last)
        return last

    def _encoded(self, new: JsonDict, *, limit_size: bool) -> bytes | None:
        """Give ``new`` the next resourceVersion; with ``limit_size``, its bytes, checked against etcd's limit.

        A request's write is encoded here once for the check and for all its readers; the store's own writes
        (e.g. a fresh cluster's objects) are encoded when first served, if ever.
        """
        new["metadata"]["resourceVersion"] = str(self.rv + 1)
        if not limit_size:
            return None
        raw = compact_bytes(new)
        preparing.check_stored_size(raw, new["metadata"])
        return raw

    def _index(self, key: StorageKey, object_key: ObjectKey, old: JsonDict | None, new: JsonDict | None) -> None:
        """Keep the lookups by uid and by owner up to date (stored objects always have their metadata)."""
        if key == _SERVICES:
            self._allocations.update(old, new)
        if old is not None and (old_uid := old["metadata"].get("uid")):
            for ref in old["metadata"].get("ownerReferences") or ():
                deps = self._dependents.get(ref.get("uid", ""))
                if deps is not None:
                    deps.discard(old_uid)
                    if not deps:
                        del self._dependents[ref.get("uid", "")]
            if new is None:
                self._by_uid.pop(old_uid, None)
        if new is not None:
            metadata = new["metadata"]
            uid = metadata["uid"]
            self._by_uid[uid] = (key, object_key)
            references = metadata.get("ownerReferences")
            if references:  # (most objects have none: a load's hundred thousand come here)
                for ref in references:
                    if ref.get("uid"):
                        self._dependents.setdefault(ref["uid"], set()).add(uid)

    def _record(self, change: Change) -> None:
        self.history.append(change)
        if len(self.history) > self.history_window:
            while len(self.history) > self.history_window:
                self.compacted_rv = self.history.popleft().rv
            self._snapshots.forget_before(self.compacted_rv)
        self._snapshots.note(change)
        # (most changes, e.g. a load's, have no fault to hold them, no watcher and no observer: no copies made)
        holding = None
        if self.holding:
            holding = next((how for decide in list(self.holding) if (how := decide(change)) is not None), None)
        if self._subscriptions:
            for subscription in list(self._subscriptions):
                subscription.offer(change, holding)
        if self.observers:
            for observer in list(self.observers):
                observer(change)

    def skip_revisions(self, count: int) -> None:
        """Go ``count`` revisions on with no change here, as a real cluster's etcd does for what else it stores.

        The history so far is compacted (a watch from an older version gets 410 Expired): it has one change per
        revision. Two clusters whose objects are the same then give them other resourceVersions.
        """
        self.compact()
        self.rv += count
        self.compacted_rv = self.rv
        self._snapshots.forget_before(self.compacted_rv)

    def compact(self, upto: int | None = None) -> None:
        """Forget the history up to ``upto`` (default: all of it): older versions then get 410 Expired."""
        limit = self.rv if upto is None else upto
        while self.history and self.history[0].rv <= limit:
            self.history.popleft()
        self.compacted_rv = max(self.compacted_rv, limit)
        self._snapshots.forget_before(self.compacted_rv)

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
        if start is None:  # the objects now, then the changes: the objects are read from a snapshot as sent
            snapshot = self.snapshot(rtype.storage_key, self.rv)
            self._snapshots.hold(snapshot)
            selection = Selection(namespace, labels, fields)
            subscription.start_with(
                paging.InitialEvents(
                    snapshot,
                    selection,
                    batch=INITIAL_EVENTS_BATCH,
                    on_done=functools.partial(self._snapshots.release, snapshot),
                )
            )
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
        return list(self.writes.create_each_now(self._creates(documents)))

    def load(self, documents: Iterable[Any]) -> int:
        """Create every object of the documents, as :meth:`apply_manifests`; how many (none is kept here).

        The documents become the store's (e.g. freshly read from a manifest): they are changed and stored as
        they are, not copied first. Each is created as a create request would be, admission included.
        """
        count = 0
        for _ in self.writes.create_each_now(self._creates(documents), copied=True):
            count += 1
        for bucket in self._objects.values():
            bucket.sort_in()
        return count

    def _creates(self, documents: Iterable[Any]) -> Iterator[tuple[ResourceType, str | None, JsonDict]]:
        """What to create of the documents, one at a time (each looked up after the previous one is created)."""
        rtypes: dict[tuple[str, str], ResourceType] = {}  # by apiVersion and kind, at the catalogue's revision:
        revision = self.catalogue.revision
        for doc in documents:
            if not doc:
                continue
            if type(doc) is not dict:
                if not isinstance(doc, Mapping):
                    raise errors.bad_request(f"a manifest must be a mapping, got {type(doc).__name__}")
                doc = dict(doc)
            api_version, kind = doc.get("apiVersion", ""), doc.get("kind", "")
            if isinstance(kind, str) and kind.endswith("List") and "items" in doc:
                yield from self._creates(doc["items"])
                continue
            if revision != self.catalogue.revision:  # (e.g. a CRD was loaded: its kinds are served now)
                revision = self.catalogue.revision
                rtypes.clear()
            cache_key = (str(api_version), str(kind))
            rtype = rtypes.get(cache_key)
            if rtype is None:
                rtype = rtypes[cache_key] = self.resource_for(*cache_key)
            yield rtype, meta(doc).get("namespace", "default") if rtype.namespaced else None, doc


def _sort_key(obj: JsonDict) -> tuple[str, str]:
    metadata = meta(obj)
    return (metadata.get("namespace", ""), metadata.get("name", ""))
