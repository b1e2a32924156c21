"""Lists as the apiserver serves them from etcd: selected, in pages of ``limit`` objects, with continue tokens.

A page is read from its start key in a snapshot of the resource (:mod:`.snapshots`), so it costs the
page, not the resource: the objects are visited in key order from there, or, for a selective label
selector, its matches from the label index are sorted and read. The page's objects stay encoded: a
served list is their bytes spliced into the list's envelope.

Continue tokens are opaque to clients (base64 of a small JSON document, as the apiserver's are): the
version of the first page's snapshot, and the key that the next page starts after.
"""

from __future__ import annotations

import base64
import collections
import dataclasses
import itertools
import json
from collections.abc import Callable, Iterator

from kopf_sim.kube import errors
from kopf_sim.kube.jsoncodec import compact_bytes
from kopf_sim.kube.objects import JsonDict, compact_json, meta
from kopf_sim.kube.resources import ResourceType
from kopf_sim.kube.selectors import FieldSelector, LabelSelector
from kopf_sim.store.buckets import ObjectKey
from kopf_sim.store.snapshots import Snapshot
from kopf_sim.store.stored import Stored
from kopf_sim.store.watching import WatchEvent

LATEST = -1  # the version of a continue token that goes on at the latest version (handed out with a 410)
_MAX_CONTINUE_TOKEN = 4096  # ours are a few dozen bytes


@dataclasses.dataclass(frozen=True)
class Selection:
    """What a list or a watch selects: a namespace (or all), labels, fields; empty selectors select all."""

    namespace: str | None = None
    labels: LabelSelector | None = None
    fields: FieldSelector | None = None

    @property
    def labelled(self) -> LabelSelector | None:
        return self.labels if self.labels is not None and not self.labels.empty else None

    @property
    def fielded(self) -> FieldSelector | None:
        return self.fields if self.fields is not None and not self.fields.empty else None

    def matches(self, obj: JsonDict) -> bool:
        labels, fields = self.labelled, self.fielded
        if labels is not None and not labels.matches(meta(obj).get("labels")):
            return False
        return fields is None or fields.matches(obj)


@dataclasses.dataclass(frozen=True)
class Page:
    """The objects of one page, and where the next one starts (None: this is the last page)."""

    items: list[Stored]
    last: ObjectKey | None
    remaining: int | None  # how many objects follow (unknown with selectors, as the apiserver says)


def read_page(view: Snapshot, selection: Selection, *, limit: int | None, after: ObjectKey | None) -> Page:
    items: list[Stored] = []
    last: ObjectKey | None = None
    for key, stored in select(view, selection, limit=limit, after=after):
        if limit and len(items) >= limit:
            selective = selection.labelled is not None or selection.fielded is not None
            remaining = None if selective else view.count(selection.namespace, after=last)
            return Page(items, last, remaining)
        items.append(stored)
        last = key
    return Page(items, None, None)


def select(
    view: Snapshot, selection: Selection, *, limit: int | None = None, after: ObjectKey | None = None
) -> Iterator[tuple[ObjectKey, Stored]]:
    """The selected objects of the snapshot in key order, after a key (or from the first).

    ``limit`` is a hint of how many will be read (a page and one more): it chooses between reading the
    label index's matches and visiting the keys in order. Read to the end before the store changes.
    """
    namespace = selection.namespace
    labels, fields = selection.labelled, selection.fielded
    name = fields.exact_name() if fields is not None else None
    if name is not None:  # one object per namespace at most: no scan of the others' contents
        if namespace is not None:
            keys = [(namespace, name)] if after is None or (namespace, name) > after else []
        else:
            keys = [key for key, _ in view.items(None, after=after) if key[1] == name]
        for key in keys:
            stored = view.get(key)
            if stored is not None and selection.matches(stored.obj):
                yield key, stored
        return
    found = view.bucket.labelled(labels) if labels is not None else None
    if found is not None:
        candidates, exact = found
        changed = view.changed
        if changed:
            candidates = candidates | changed  # their states at the snapshot are checked one by one
        exact = exact and fields is None
        visits = (
            len(view.bucket)
            if not limit
            else min(len(view.bucket), (limit + 1) * len(view.bucket) // max(len(candidates), 1))
        )
        if _cheaper_to_sort(len(candidates), visits):
            for key in view.ordered(candidates, namespace, after):
                stored = view.get(key)
                if stored is not None and ((exact and key not in changed) or selection.matches(stored.obj)):
                    yield key, stored
            return
        for key, stored in view.items(namespace, after=after):
            if key in candidates and ((exact and key not in changed) or selection.matches(stored.obj)):
                yield key, stored
        return
    for key, stored in view.items(namespace, after=after):
        if (labels is None and fields is None) or selection.matches(stored.obj):
            yield key, stored


def _cheaper_to_sort(candidates: int, visits: int) -> bool:
    """Whether sorting the candidates costs less than visiting keys in order until the page is full (estimates)."""
    return candidates * (candidates.bit_length() + 3) < visits * 12


class InitialEvents:
    """A watch's ADDED events for the objects at its start, read in batches from a snapshot as they are sent.

    The store may change between batches: the snapshot holds (its owner keeps it up to date until ``on_done``).
    """

    def __init__(self, view: Snapshot, selection: Selection, *, batch: int, on_done: Callable[[], None]) -> None:
        self._view = view
        self._selection = selection
        self._batch_size = batch
        self._batch: collections.deque[tuple[ObjectKey, Stored]] = collections.deque()
        self._after: ObjectKey | None = None
        self._on_done: Callable[[], None] | None = on_done

    def __iter__(self) -> Iterator[WatchEvent]:
        return self

    def __next__(self) -> WatchEvent:
        if not self._batch and self._on_done is not None:
            found = select(self._view, self._selection, limit=self._batch_size, after=self._after)
            self._batch.extend(itertools.islice(found, self._batch_size))
            if len(self._batch) < self._batch_size:
                self.close()  # the last batch: the snapshot is not needed any more
            if self._batch:
                self._after = self._batch[-1][0]
        if not self._batch:
            raise StopIteration
        _, stored = self._batch.popleft()
        return WatchEvent("ADDED", stored, self._view.rv)

    def close(self) -> None:
        """Stop reading (what is read is still sent); the snapshot is let go."""
        if self._on_done is not None:
            on_done, self._on_done = self._on_done, None
            on_done()


@dataclasses.dataclass(frozen=True)
class Listing:
    """A list as served: its envelope, and its objects (encoded as stored, or as served at another version)."""

    rtype: ResourceType
    metadata: JsonDict
    items: list[Stored]

    def objects(self) -> list[JsonDict]:
        """The objects as served at the list's version (never mutate them)."""
        api_version = self.rtype.api_version
        return [
            stored.obj if stored.api_version == api_version else {**stored.obj, "apiVersion": api_version}
            for stored in self.items
        ]

    def raws(self) -> list[bytes]:
        """The objects as served at the list's version, as compact JSON (:meth:`objects`, encoded)."""
        api_version = self.rtype.api_version
        return [
            stored.raw
            if stored.api_version == api_version
            else compact_bytes({**stored.obj, "apiVersion": api_version})
            for stored in self.items
        ]

    def to_dict(self) -> JsonDict:
        rtype = self.rtype
        return {
            "kind": rtype.list_kind,
            "apiVersion": rtype.api_version,
            "metadata": self.metadata,
            "items": self.objects(),
        }

    def to_json(self) -> bytes:
        """The list as compact JSON (as the dict would encode), its objects' bytes spliced in."""
        rtype = self.rtype
        api_version = rtype.api_version
        envelope = compact_json({"kind": rtype.list_kind, "apiVersion": api_version, "metadata": self.metadata})
        items = b",".join(self.raws())
        return b"".join((envelope[:-1].encode(), b',"items":[', items, b"]}"))


def encode_token(rv: int, key: ObjectKey) -> str:
    raw = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": f"{key[0]}/{key[1]}"})
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_token(token: str, *, compacted_rv: int) -> tuple[int, ObjectKey]:
    """The version and the start key of a continue token: a 400 if it is not one of ours, a 410 if expired."""
    rv, start = _parse_token(token)
    namespace, _, name = start.partition("/")
    if rv != LATEST and rv < compacted_rv:
        # As the apiserver does: a token for the same start key at "the latest version" comes with the 410.
        raise errors.expired(
            "The provided continue parameter is too old to display a consistent list result. "
            "You can start a new list without the continue parameter, or use the continue token "
            "in this response to retrieve the remainder of the results. Continuing with the "
            "provided token results in an inconsistent list - objects that were created, modified, "
            "or deleted between the time the first chunk was returned and now may show up in the list.",
            continue_token=encode_token(LATEST, (namespace, name)),
        )
    return rv, (namespace, name)


def _parse_token(token: str) -> tuple[int, str]:
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
