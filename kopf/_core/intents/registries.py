"""
Registries of the declared handlers, and the queries that the reactor & engines need.

An operator has one :class:`OperatorRegistry` with a sub-registry per kind of handling
(each served by its own engine). The decorators put the handlers here; the reactor asks
which resources are served, and which handlers apply to an object now. A handler that
applies several times on one occasion (e.g. via overlapping selectors) is used once:
the handlers are deduplicated by their function and their id.
"""

from collections.abc import Collection, Iterable, Iterator, Mapping
from typing import Any, ClassVar, Generic, TypeVar

from kopf._cogs.structs import dicts
from kopf._cogs.structs.references import Resource, Selector
from kopf._core.intents import matching
from kopf._core.intents.causes import Activity, Reason, WebhookType
from kopf._core.intents.handlers import (
    ActivityHandler,
    BaseHandler,
    ChangingHandler,
    DaemonHandler,
    IndexingHandler,
    ResourceHandler,
    SpawningHandler,
    TimerHandler,
    WatchingHandler,
    WebhookHandler,
)

HandlerT = TypeVar("HandlerT", bound=BaseHandler)
ResourceHandlerT = TypeVar("ResourceHandlerT", bound=ResourceHandler)


class GenericRegistry(Generic[HandlerT]):
    """A list of handlers of one kind (with protection against conflicting ids where they would be ambiguous)."""

    #: Whether different functions with the same id in the same scope are refused (see :meth:`append`).
    strict_ids: ClassVar[bool] = False

    def __init__(self) -> None:
        super().__init__()
        self._handlers: list[HandlerT] = []
        self._by_resource: dict[Resource, tuple[HandlerT, ...]] = {}  # selected per resource; reset on changes
        self._extra_fields: dict[Resource, frozenset[dicts.FieldPath]] = {}  # of the changing handlers; reset too

    def __len__(self) -> int:
        return len(self._handlers)

    def __iter__(self) -> Iterator[HandlerT]:
        return iter(self._handlers)

    def append(self, handler: HandlerT) -> None:
        """
        Add a handler; a function re-created from the same source (e.g. a re-imported module) replaces the old one.

        The same function can be registered many times under the same id (stacked decorators).
        Different functions with the same id in the same scope are accepted, as the published framework
        accepts them (an operator that loads there must load here): their progress and results are
        indistinguishable, so e.g. only the first of the change-detecting ones is called (its success
        is theirs), and only the first daemon, as there. Only the registries with ``strict_ids``
        (the webhooks: their ids are their endpoints) refuse them.
        """
        for existing in list(self._handlers):
            if existing.id != handler.id or not self._share_scope(existing, handler):
                continue
            if existing.fn == handler.fn:
                continue
            if _same_source(existing.fn, handler.fn):
                self._handlers.remove(existing)
            elif self.strict_ids:
                raise ValueError(
                    f"Duplicate handler id {handler.id!r}: it is already used by "
                    f"{existing.fn!r}, cannot be used by {handler.fn!r}. Use id=."
                )
        self._handlers.append(handler)
        self._by_resource.clear()
        self._extra_fields.clear()

    def get_all_handlers(self) -> list[HandlerT]:
        return list(self._handlers)

    def _share_scope(self, a: HandlerT, b: HandlerT) -> bool:
        """Whether two handlers can clash in their ids (their state, results, or endpoints)."""
        return True


class ActivityRegistry(GenericRegistry[ActivityHandler]):
    """Operator-level handlers: startup, cleanup, authentication, probes."""

    def get_handlers(self, activity: Activity) -> list[ActivityHandler]:
        return _deduplicated(handler for handler in self._handlers if handler.activity == activity)

    def _share_scope(self, a: ActivityHandler, b: ActivityHandler) -> bool:
        return a.activity == b.activity


class ResourceRegistry(GenericRegistry[ResourceHandlerT]):
    """Resource-level handlers: selected by their resource selectors, then by their filters."""

    def get_selectors(self) -> list[Selector]:
        """All distinct selectors, in the order of declaration (sub-handlers have none)."""
        selectors: list[Selector] = []
        for handler in self._handlers:
            if handler.selector is not None and handler.selector not in selectors:
                selectors.append(handler.selector)
        return selectors

    def has_handlers(self, resource: Resource) -> bool:
        return any(_fits(handler, resource) for handler in self._handlers)

    def get_resource_handlers(self, resource: Resource) -> list[ResourceHandlerT]:
        """The handlers for the resource, regardless of the filters (selected once per resource: asked per event)."""
        selected = self._by_resource.get(resource)
        if selected is None:
            selected = tuple(_deduplicated(handler for handler in self._handlers if _fits(handler, resource)))
            self._by_resource[resource] = selected
        return list(selected)

    def get_handlers(
        self,
        resource: Resource,
        *,
        body: Mapping[str, Any],
        old: Mapping[str, Any] | None = None,
        new: Mapping[str, Any] | None = None,
        kwargs: Mapping[str, Any] | None = None,
    ) -> list[ResourceHandlerT]:
        """The handlers for the resource whose filters match the object now."""
        return [
            handler
            for handler in self.get_resource_handlers(resource)
            if matching.match(handler, body=body, old=old, new=new, kwargs=kwargs)
        ]

    def requires_finalizer(
        self,
        resource: Resource,
        *,
        body: Mapping[str, Any],
        kwargs: Mapping[str, Any] | None = None,
    ) -> bool:
        """Whether any handler that blocks deletion is relevant to the object in its state."""
        return any(
            handler.requires_finalizer and matching.prematch(handler, body=body, kwargs=kwargs)
            for handler in self.get_resource_handlers(resource)
        )

    def _share_scope(self, a: ResourceHandlerT, b: ResourceHandlerT) -> bool:
        return a.selector == b.selector


class WatchingRegistry(ResourceRegistry[WatchingHandler]):
    """Silent handlers of raw watch-events (``@kopf.on.event``)."""


class ChangingRegistry(ResourceRegistry[ChangingHandler]):
    """Change-detecting handlers (``@kopf.on.create/update/delete/resume/field``) & sub-handlers."""

    def get_handlers(
        self,
        resource: Resource,
        *,
        body: Mapping[str, Any],
        old: Mapping[str, Any] | None = None,
        new: Mapping[str, Any] | None = None,
        kwargs: Mapping[str, Any] | None = None,
        reason: Reason | None = None,
        resumed: bool = False,
    ) -> list[ChangingHandler]:
        """
        The handlers for a detected cause of an object.

        ``old``/``new`` are the states before/after the change (``new`` defaults to the body);
        for causes with no change (resuming, deletion), pass the same state (or nothing) as both.
        ``resumed`` means that the object is seen for the first time since the operator start:
        then, the resuming handlers are mixed into the creation/update cycles, and into
        the deletion cycle for those declared with ``deleted=True``.
        """
        being_deleted = bool(dicts.resolve(body, ("metadata", "deletionTimestamp"), None))
        if old is None and new is None and reason in (Reason.RESUME, Reason.DELETE, Reason.NOOP):
            old = new = body
        handlers: list[ChangingHandler] = []
        # Deduplicated after the selection by reason: e.g. @on.resume+@on.create on one function (one id)
        # must give the resuming handler when the creation one is not applicable, and vice versa.
        for handler in (handler for handler in self._handlers if _fits(handler, resource)):
            if handler.reason is None:
                pass
            elif handler.reason == Reason.RESUME:
                if being_deleted and not handler.deleted:
                    continue
                if reason != Reason.RESUME and not (resumed and reason in HANDLER_RESUMABLE_REASONS):
                    continue
                if reason == Reason.DELETE and not handler.deleted:
                    continue
            elif handler.reason != reason:
                continue
            if matching.match(handler, body=body, old=old, new=new, kwargs=kwargs):
                handlers.append(handler)
        return _deduplicated(handlers)

    def get_extra_fields(self, resource: Resource) -> frozenset[dicts.FieldPath]:
        """The fields that the handlers track (e.g. for keeping them in the diff-base essence)."""
        # Asked on every event: remembered per resource, along with (and as long as) the resource's handlers.
        extra_fields = self._extra_fields.get(resource)
        if extra_fields is None:
            handlers = self.get_resource_handlers(resource)
            extra_fields = frozenset(handler.field for handler in handlers if handler.field is not None)
            self._extra_fields[resource] = extra_fields
        return extra_fields

    def _share_scope(self, a: ChangingHandler, b: ChangingHandler) -> bool:
        # Handlers of different causes never run in one cycle, so their progress never clashes.
        return a.selector == b.selector and (_run_together(a, b) or _run_together(b, a))


def _run_together(a: ChangingHandler, b: ChangingHandler) -> bool:
    """Whether two change-detecting handlers can be executed in one handling cycle."""
    return (
        a.reason is None
        or b.reason is None
        or a.reason == b.reason
        or (a.reason == Reason.RESUME and b.reason == Reason.UPDATE)
        or (a.reason == Reason.RESUME and b.reason == Reason.DELETE and a.deleted)
    )


# Which causes can be accompanied by the resuming handlers on the first sight of an object.
# Not the creation: a new object is created, not resumed (and @on.create+@on.resume on one function
# must be called once), as the published framework does it.
HANDLER_RESUMABLE_REASONS = (Reason.UPDATE, Reason.DELETE)


class SpawningRegistry(ResourceRegistry[SpawningHandler]):
    """Background handlers per object: daemons & timers."""

    def get_daemons(self, resource: Resource) -> list[DaemonHandler]:
        return [h for h in self.get_resource_handlers(resource) if isinstance(h, DaemonHandler)]

    def get_timers(self, resource: Resource) -> list[TimerHandler]:
        return [h for h in self.get_resource_handlers(resource) if isinstance(h, TimerHandler)]


class IndexingRegistry(ResourceRegistry[IndexingHandler]):
    """In-memory indexers; their ids are the index names, so they must be unique globally."""

    def get_index_names(self) -> list[str]:
        return list(dict.fromkeys(handler.id for handler in self._handlers))

    def _share_scope(self, a: IndexingHandler, b: IndexingHandler) -> bool:
        return True


class WebhooksRegistry(ResourceRegistry[WebhookHandler]):
    """Admission handlers; their ids are their endpoints, so they must be unique globally."""

    strict_ids = True  # not verified against the published framework (the others are): kept as it was

    def get_handlers(
        self,
        resource: Resource,
        *,
        body: Mapping[str, Any],
        old: Mapping[str, Any] | None = None,
        new: Mapping[str, Any] | None = None,
        kwargs: Mapping[str, Any] | None = None,
        type: WebhookType | None = None,
        id: str | None = None,
        operation: str | None = None,
        subresource: str | None = None,
    ) -> list[WebhookHandler]:
        """The admission handlers for a request (optionally, only for one webhook endpoint)."""
        return [
            handler
            for handler in self.get_resource_handlers(resource)
            if (type is None or handler.type == type)
            and (id is None or handler.id == id)
            and handler.check_operation(operation)
            and handler.check_subresource(subresource)
            and matching.match(handler, body=body, old=old, new=new, kwargs=kwargs)
        ]

    def _share_scope(self, a: WebhookHandler, b: WebhookHandler) -> bool:
        return True


class OperatorRegistry:
    """
    All the handlers of one operator, by the kind of handling.

    Populated by the ``@kopf.on…`` decorators (into the default registry unless ``registry=``
    is passed), or explicitly for embedded operators.
    """

    def __init__(self) -> None:
        super().__init__()
        self._activities = ActivityRegistry()
        self._watching = WatchingRegistry()
        self._changing = ChangingRegistry()
        self._spawning = SpawningRegistry()
        self._indexing = IndexingRegistry()
        self._webhooks = WebhooksRegistry()

    @property
    def activities(self) -> ActivityRegistry:
        return self._activities

    @property
    def watching(self) -> WatchingRegistry:
        return self._watching

    @property
    def changing(self) -> ChangingRegistry:
        return self._changing

    @property
    def spawning(self) -> SpawningRegistry:
        return self._spawning

    @property
    def indexing(self) -> IndexingRegistry:
        return self._indexing

    @property
    def webhooks(self) -> WebhooksRegistry:
        return self._webhooks

    @property
    def resource_registries(self) -> tuple[ResourceRegistry[Any], ...]:
        return (self._watching, self._changing, self._spawning, self._indexing, self._webhooks)

    def get_selectors(self) -> list[Selector]:
        """All distinct selectors of all resource handlers, in the order of declaration."""
        selectors: list[Selector] = []
        for registry in self.resource_registries:
            for selector in registry.get_selectors():
                if selector not in selectors:
                    selectors.append(selector)
        return selectors

    def get_resources(self, resources: Collection[Resource]) -> frozenset[Resource]:
        """Which of the discovered resources are served by this operator (by any handler)."""
        return frozenset().union(*(selector.select(resources) for selector in self.get_selectors()))

    def get_ambiguities(self, resources: Collection[Resource]) -> dict[Selector, frozenset[Resource]]:
        """The selectors that match several resources in different groups (to be warned about)."""
        ambiguities = {selector: selector.ambiguities(resources) for selector in self.get_selectors()}
        return {selector: found for selector, found in ambiguities.items() if found}

    def has_handlers(self, resource: Resource) -> bool:
        return any(registry.has_handlers(resource) for registry in self.resource_registries)

    def requires_finalizer(
        self,
        resource: Resource,
        *,
        body: Mapping[str, Any],
        kwargs: Mapping[str, Any] | None = None,
    ) -> bool:
        """Whether the object must be blocked from deletion: deletion handlers, daemons, timers."""
        return self._changing.requires_finalizer(
            resource, body=body, kwargs=kwargs
        ) or self._spawning.requires_finalizer(resource, body=body, kwargs=kwargs)


def _fits(handler: ResourceHandler, resource: Resource) -> bool:
    return handler.selector is None or handler.selector.check_resource(resource)


def _deduplicated(handlers: Iterable[HandlerT]) -> list[HandlerT]:
    """Keep only the first handler per function & id; compare by equality (fns can be unhashable)."""
    result: list[HandlerT] = []
    for handler in handlers:
        if not any(seen.id == handler.id and seen.fn == handler.fn for seen in result):
            result.append(handler)
    return result


def _same_source(fn1: object, fn2: object) -> bool:
    """
    Whether two functions are the same code, e.g. after re-importing a module.

    Closures and functions with different defaults (e.g. created in a loop) are not the same:
    they are different functions from the same source, and they must have different ids.
    """
    code1, code2 = getattr(fn1, "__code__", None), getattr(fn2, "__code__", None)
    return (
        code1 is not None
        and code2 is not None
        and getattr(fn1, "__closure__", None) is None
        and getattr(fn2, "__closure__", None) is None
        and getattr(fn1, "__defaults__", None) == getattr(fn2, "__defaults__", None)
        and getattr(fn1, "__kwdefaults__", None) == getattr(fn2, "__kwdefaults__", None)
        and getattr(fn1, "__module__", None) == getattr(fn2, "__module__", None)
        and getattr(fn1, "__qualname__", None) == getattr(fn2, "__qualname__", None)
        and code1.co_filename == code2.co_filename
        and code1.co_firstlineno == code2.co_firstlineno
    )


_default_registry: OperatorRegistry = OperatorRegistry()


def get_default_registry() -> OperatorRegistry:
    """Get the registry used by the decorators and the reactor unless another one is given."""
    return _default_registry


def set_default_registry(registry: OperatorRegistry) -> None:
    """Set the registry used by the decorators and the reactor unless another one is given."""
    global _default_registry
    _default_registry = registry
