"""
In-memory indexing: overviews of the objects, grouped by keys, kept fresh from the watch-streams.

Every indexing handler (``@kopf.index``) makes one index, named by the handler's id.
An index (:class:`Index`) is a read-only mapping of keys to stores (:class:`Store`):
unordered collections of the values that the individual objects produced under that key.
The stores are never empty: a store is removed with its last value.

The indexing function's result is put into the index as follows:

* a ``dict`` (strictly, not a subclass): every key-value pair goes to its key's store;
* ``None``: nothing changes (the object's previous values, if any, are kept);
* anything else: the value goes to the store of the key ``None``.

An object's previous values are replaced by the new ones on every indexing, and are removed
when the object is deleted or stops matching the handler's filters (:func:`discard_object`).

The errors of the indexing functions are never retried immediately (see :func:`index_object`):

* arbitrary errors with ``errors=IGNORED`` (the default): logged; the stale values are kept;
* :class:`kopf.PermanentError` or arbitrary errors with ``errors=PERMANENT``: the object's values
  are removed, and the object is excluded from this index forever (the function is not called);
* :class:`kopf.TemporaryError` or arbitrary errors with ``errors=TEMPORARY``: the object's values
  are removed, and the object is excluded for the error's delay (or ``backoff=``); with ``retries=``
  or ``timeout=`` (since the first failure) exceeded, it is excluded forever. A success resets all that.

The indices must be populated before the handlers of other resources are called: the reactor
declares every indexed resource as pending with :meth:`OperatorIndexers.expect` and marks it as
populated after the initial listing with :meth:`OperatorIndexers.mark_populated`; the handlers'
processing awaits :meth:`OperatorIndexers.wait_populated` (the indexing itself does not wait).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Collection, Hashable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Generic, TypeVar

from kopf._cogs.aiokits.clock import utcnow
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.structs import bodies, ephemera, patches
from kopf._cogs.structs.ids import HandlerId
from kopf._cogs.structs.references import Resource
from kopf._core.actions import execution, invocation
from kopf._core.intents.handlers import IndexingHandler

logger = logging.getLogger(__name__)

_K = TypeVar("_K")
_V = TypeVar("_V")

#: The identity of an indexed object: its uid (or its namespace & name if there is no uid).
ObjectKey = str


class Store(Collection[_V], Generic[_V]):
    """
    A collection of all values under one key of an index; read-only for the handlers.

    Many objects can produce values under the same key: their values are accumulated here.
    The order of the values is not guaranteed; the duplicates are not removed.
    """


class Index(Mapping[_K, Store[_V]], Generic[_K, _V]):
    """
    An index: a read-only mapping of the keys to the collections (stores) of the values under them.

    One index per indexing function (``@kopf.index``), named by the function's id;
    available to all handlers as a kwarg of that name.
    """


class MemoryStore(Store[_V], Generic[_V]):
    """The values under one key, by the objects that produced them (O(1) updates & removals)."""

    __slots__ = ("_items",)

    def __init__(self) -> None:
        super().__init__()
        self._items: dict[ObjectKey, _V] = {}

    def __repr__(self) -> str:
        return repr(list(self._items.values()))

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[_V]:
        return iter(self._items.values())

    def __contains__(self, value: object) -> bool:
        return any(item == value for item in self._items.values())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Collection) and not isinstance(other, str | bytes | Mapping):
            return len(self) == len(other) and all(_count(self, item) == _count(other, item) for item in other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def _replace(self, key: ObjectKey, value: _V) -> None:
        self._items[key] = value

    def _discard(self, key: ObjectKey) -> None:
        self._items.pop(key, None)


def _count(collection: Iterable[Any], value: Any) -> int:
    return sum(1 for item in collection if item == value)


class MemoryIndex(Index[_K, _V], Generic[_K, _V]):
    """The keys of one index with their stores; the empty stores are removed at once."""

    __slots__ = ("_stores",)

    def __init__(self) -> None:
        super().__init__()
        self._stores: dict[_K, MemoryStore[_V]] = {}

    def __repr__(self) -> str:
        return repr(self._stores)

    def __len__(self) -> int:
        return len(self._stores)

    def __iter__(self) -> Iterator[_K]:
        return iter(self._stores)

    def __getitem__(self, key: _K) -> Store[_V]:
        return self._stores[key]

    def __contains__(self, key: object) -> bool:
        try:
            return key in self._stores
        except TypeError:  # unhashable keys are never there.
            return False

    def _replace(self, acckey: ObjectKey, key: _K, value: _V) -> None:
        store = self._stores.get(key)
        if store is None:
            store = self._stores[key] = MemoryStore()
        store._replace(acckey, value)

    def _discard(self, acckey: ObjectKey, key: _K) -> None:
        store = self._stores.get(key)
        if store is not None:
            store._discard(acckey)
            if not store:
                del self._stores[key]


class OperatorIndexer:
    """
    One index with the knowledge of which keys every object has there (to replace/remove them).
    """

    __slots__ = ("_keys", "index", "name")

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name
        self.index: MemoryIndex[Any, Any] = MemoryIndex()
        self._keys: dict[ObjectKey, list[Hashable]] = {}

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}: {self.index!r}>"

    def __contains__(self, acckey: object) -> bool:
        return acckey in self._keys

    def __len__(self) -> int:
        """How many objects have values in the index."""
        return len(self._keys)

    def replace(self, acckey: ObjectKey, result: object) -> None:
        """
        Put the indexing function's result of an object (replacing its previous values, if any).

        ``None`` keeps the previous values; a ``dict`` (not a subclass) is a mapping of keys to values;
        anything else is a value for the key ``None``.
        """
        if result is None:
            return
        pairs: Mapping[Hashable, Any] = result if type(result) is dict else {None: result}
        old_keys = self._keys.get(acckey, ())
        for key in old_keys:
            if key not in pairs:
                self.index._discard(acckey, key)
        for key, value in pairs.items():
            self.index._replace(acckey, key, value)
        if pairs:
            self._keys[acckey] = list(pairs)
        else:
            self._keys.pop(acckey, None)

    def discard(self, acckey: ObjectKey) -> None:
        """Remove all values of the object from the index (if any)."""
        for key in self._keys.pop(acckey, ()):
            self.index._discard(acckey, key)


class OperatorIndices(Mapping[str, Index[Any, Any]]):
    """All the indices of an operator by their names: a read-only live view of the indexers (for kwargs)."""

    def __init__(self, indexers: OperatorIndexers) -> None:
        super().__init__()
        self._indexers = indexers

    def __len__(self) -> int:
        return len(self._indexers)

    def __iter__(self) -> Iterator[str]:
        return iter(self._indexers)

    def __getitem__(self, name: str) -> Index[Any, Any]:
        return self._indexers[name].index


class OperatorIndexers(dict[str, OperatorIndexer]):
    """
    All indexers of an operator by the index names, and whether the indices are populated.

    ``indices`` is what the handlers get as kwargs (``**indexers.indices``): the indices by names.
    """

    def __init__(self) -> None:
        super().__init__()
        self.indices = OperatorIndices(self)
        self._pending: set[Hashable] = set()
        self._populated: asyncio.Event | None = None

    def ensure(self, handlers: Iterable[IndexingHandler]) -> None:
        """Create the (empty) indices of the handlers, so that they exist as kwargs from the start."""
        for handler in handlers:
            if handler.id not in self:
                self[handler.id] = OperatorIndexer(handler.id)

    def expect(self, resource: Hashable) -> None:
        """Declare an indexed resource (or any other marker) whose initial listing is not indexed yet."""
        self._pending.add(resource)
        if self._populated is not None and self._populated.is_set():
            self._populated = None

    def mark_populated(self, resource: Hashable) -> None:
        """Declare that the initial listing of the resource is indexed (a no-op if not expected)."""
        self._pending.discard(resource)
        if not self._pending and self._populated is not None:
            self._populated.set()

    def is_populated(self) -> bool:
        return not self._pending

    async def wait_populated(self) -> None:
        """Wait until all the expected resources are populated (at once if they are already)."""
        if not self._pending:
            return
        if self._populated is None:
            self._populated = asyncio.Event()
        await self._populated.wait()

    def discard(self, acckey: ObjectKey) -> None:
        """Remove the object's values from all indices."""
        for indexer in self.values():
            indexer.discard(acckey)


@dataclasses.dataclass(slots=True)
class IndexingMemory:
    """
    The per-object state of the failed indexing, by index names; successful indexing keeps nothing here.

    The excluded indices (``forever``) never call their functions for this object again.
    """

    states: dict[HandlerId, execution.HandlerState] = dataclasses.field(default_factory=dict)
    forever: set[HandlerId] = dataclasses.field(default_factory=set)


def get_object_key(body: Mapping[str, Any]) -> ObjectKey:
    """The identity of an object in the indices: its uid, or its namespace & name if there is no uid."""
    metadata: Mapping[str, Any] = body.get("metadata") or {}
    uid = metadata.get("uid")
    if uid:
        return str(uid)
    return f"{metadata.get('namespace') or ''}/{metadata.get('name') or ''}"


async def index_object(
    *,
    indexers: OperatorIndexers,
    handlers: Sequence[IndexingHandler],
    body: Mapping[str, Any],
    memory: IndexingMemory,
    resource: Resource,
    logger: invocation.LoggerLike,
    settings: OperatorSettings | None = None,
    memo: ephemera.AnyMemo = None,
    indices: Mapping[str, Any] | None = None,
) -> None:
    """
    Index one object (on every watch-event of it, except deletion) by the handlers that match it now.

    ``handlers`` are the indexing handlers whose filters match the object now
    (e.g. ``registry.indexing.get_handlers(...)``); the object's values are removed
    from all other indices (e.g. when it stops matching the filters).
    The errors are interpreted as described in the module's docs; no errors escape
    except ``asyncio.CancelledError``.
    """
    settings = settings if settings is not None else OperatorSettings()
    acckey = get_object_key(body)
    indexers.ensure(handlers)
    matching = {handler.id for handler in handlers}
    for name, indexer in indexers.items():
        if name not in matching:
            indexer.discard(acckey)

    real_body = body if isinstance(body, bodies.Body) else bodies.Body(body)
    for handler in handlers:
        indexer = indexers[handler.id]
        if handler.id in memory.forever:
            continue
        state = memory.states.get(handler.id)
        if state is not None and state.sleeping(utcnow()):
            continue  # temporarily excluded: the values are already removed.

        cause = invocation.ResourceCause(
            logger=logger,
            memo=memo,
            indices=indices if indices is not None else indexers.indices,
            resource=resource,
            patch=patches.Patch(body=real_body),
            body=real_body,
        )
        outcome = await execution.execute_handler_once(
            handler=handler,
            state=state if state is not None else execution.HandlerState.from_scratch(),
            cause=cause,
            settings=settings,
        )
        if outcome.final and outcome.exception is None:
            memory.states.pop(handler.id, None)  # the success resets the retrying state.
            indexer.replace(acckey, outcome.result)
        elif outcome.final:
            memory.states.pop(handler.id, None)
            memory.forever.add(handler.id)
            indexer.discard(acckey)
        else:
            base = state if state is not None else execution.HandlerState.from_scratch()
            memory.states[handler.id] = base.with_outcome(outcome)
            indexer.discard(acckey)


def discard_object(
    *,
    indexers: OperatorIndexers,
    body: Mapping[str, Any],
    memory: IndexingMemory | None = None,
) -> None:
    """Remove the object's values from all indices (when it is deleted); forget its errors' state."""
    indexers.discard(get_object_key(body))
    if memory is not None:
        memory.states.clear()
        memory.forever.clear()
