"""
The decorators to declare the handlers: ``@kopf.on.create(...)`` and all the others.

Every decorator only registers the function (into the default registry unless
``registry=`` is given) and returns it unchanged, so several decorators can be stacked.
The resource specification and the filters are validated here, at import time,
so that mistakes fail the operator's startup rather than its runtime.

This module is a part of the framework's public interface.
"""

# The parameter names `id`, `type` shadow the builtins on purpose: they are the public API.
from collections.abc import Callable, Collection, Mapping
from typing import Any, Literal

from kopf._cogs.structs import dicts, ids
from kopf._cogs.structs.references import Marker, Selector
from kopf._core.actions.errors import ErrorsMode
from kopf._core.intents import callbacks, filters, handlers, registries, subhandlers
from kopf._core.intents.causes import Activity, Reason, WebhookType

__all__ = [
    "ActivityDecorator",
    "ChangingDecorator",
    "DaemonDecorator",
    "IndexingDecorator",
    "TimerDecorator",
    "WatchingDecorator",
    "WebhookDecorator",
    "cleanup",
    "create",
    "daemon",
    "delete",
    "event",
    "field",
    "index",
    "login",
    "mutate",
    "probe",
    "register",
    "resume",
    "startup",
    "subhandler",
    "this",
    "timer",
    "update",
    "validate",
]

Operation = Literal["CREATE", "UPDATE", "DELETE", "CONNECT"]

# The types of the decorators, per kind of handlers (for the type hints of the operators' own wrappers).
ActivityDecorator = Callable[[callbacks.ActivityFn], callbacks.ActivityFn]
ChangingDecorator = Callable[[callbacks.ChangingFn], callbacks.ChangingFn]
WatchingDecorator = Callable[[callbacks.WatchingFn], callbacks.WatchingFn]
IndexingDecorator = Callable[[callbacks.IndexingFn], callbacks.IndexingFn]
DaemonDecorator = Callable[[callbacks.DaemonFn], callbacks.DaemonFn]
TimerDecorator = Callable[[callbacks.TimerFn], callbacks.TimerFn]
WebhookDecorator = callbacks.WebhookDecorator
MetaFilterArg = Mapping[str, str | filters.MetaFilterToken | callbacks.MetaFilterFn]
ResourceName = str | Marker


# Operator-level (activity) handlers.


def startup(
    *,
    id: str | None = None,
    param: Any | None = None,
    errors: ErrorsMode | None = None,
    timeout: float | None = None,
    retries: int | None = None,
    backoff: float | None = None,
    registry: registries.OperatorRegistry | None = None,
) -> callbacks.Decorator:
    """``@kopf.on.startup()`` handler for the operator's startup (before the resources are served)."""
    return _activity(
        Activity.STARTUP,
        id=id,
        param=param,
        errors=errors,
        timeout=timeout,
        retries=retries,
        backoff=backoff,
        registry=registry,
    )


def cleanup(
    *,
    id: str | None = None,
    param: Any | None = None,
    errors: ErrorsMode | None = None,
    timeout: float | None = None,
    retries: int | None = None,
    backoff: float | None = None,
    registry: registries.OperatorRegistry | None = None,
) -> callbacks.Decorator:
    """``@kopf.on.cleanup()`` handler for the operator's exit."""
    return _activity(
        Activity.CLEANUP,
        id=id,
        param=param,
        errors=errors,
        timeout=timeout,
        retries=retries,
        backoff=backoff,
        registry=registry,
    )


def login(
    *,
    id: str | None = None,
    param: Any | None = None,
    errors: ErrorsMode | None = None,
    timeout: float | None = None,
    retries: int | None = None,
    backoff: float | None = None,
    registry: registries.OperatorRegistry | None = None,
) -> callbacks.Decorator:
    """``@kopf.on.login()`` handler for custom (re-)authentication."""
    return _activity(
        Activity.AUTHENTICATION,
        id=id,
        param=param,
        errors=errors,
        timeout=timeout,
        retries=retries,
        backoff=backoff,
        registry=registry,
    )


def probe(
    *,
    id: str | None = None,
    param: Any | None = None,
    errors: ErrorsMode | None = None,
    timeout: float | None = None,
    retries: int | None = None,
    backoff: float | None = None,
    registry: registries.OperatorRegistry | None = None,
) -> callbacks.Decorator:
    """``@kopf.on.probe()`` handler for arbitrary liveness metrics."""
    return _activity(
        Activity.PROBE,
        id=id,
        param=param,
        errors=errors,
        timeout=timeout,
        retries=retries,
        backoff=backoff,
        registry=registry,
    )


# Admission handlers.


def validate(
    __group_or_groupversion_or_name: ResourceName | None = None,
    __version_or_name: ResourceName | None = None,
    __name: ResourceName | None = None,
    *,
    group: str | None = None,
    version: str | None = None,
    kind: str | None = None,
    plural: str | None = None,
    singular: str | None = None,
    shortcut: str | None = None,
    category: str | None = None,
    id: str | None = None,
    param: Any | None = None,
    operation: Operation | None = None,
    operations: Collection[Operation] | None = None,
    subresource: str | None = None,
    persistent: bool | None = None,
    side_effects: bool | None = None,
    ignore_failures: bool | None = None,
    labels: MetaFilterArg | None = None,
    annotations: MetaFilterArg | None = None,
    when: callbacks.WhenFilterFn | None = None,
    field: dicts.FieldSpec = None,
    value: filters.ValueFilter = None,
    registry: registries.OperatorRegistry | None = None,
) -> callbacks.WebhookDecorator:
    """``@kopf.on.validate()`` handler for validating admission webhooks."""
    selector = Selector(
        __group_or_groupversion_or_name,
        __version_or_name,
        __name,
        group=group,
        version=version,
        kind=kind,
        plural=plural,
        singular=singular,
        shortcut=shortcut,
        category=category,
    )
    return _webhook(
        WebhookType.VALIDATING,
        selector=selector,
        id=id,
        param=param,
        operation=operation,
        operations=operations,
        subresource=subresource,
        persistent=persistent,
        side_effects=side_effects,
        ignore_failures=ignore_failures,
        labels=labels,
        annotations=annotations,
        when=when,
        field=field,
        value=value,
        registry=registry,
    )


def mutate(
    __group_or_groupversion_or_name: ResourceName | None = None,
    __version_or_name: ResourceName | None = None,
    __name: ResourceName | None = None,
    *,
    group: str | None = None,
    version: str | None = None,
    kind: str | None = None,
    plural: str | None = None,
    singular: str | None = None,
    shortcut: str | None = None,
    category: str | None = None,
    id: str | None = None,
    param: Any | None = None,
    operation: Operation | None = None,
    operations: Collection[Operation] | None = None,
    subresource: str | None = None,
    persistent: bool | None = None,
    side_effects: bool | None = None,
    ignore_failures: bool | None = None,
    labels: MetaFilterArg | None = None,
    annotations: MetaFilterArg | None = None,
    when: callbacks.WhenFilterFn | None = None,
    field: dicts.FieldSpec = None,
    value: filters.ValueFilter = None,
    registry: registries.OperatorRegistry | None = None,
) -> callbacks.WebhookDecorator:
    """``@kopf.on.mutate()`` handler for mutating admission webhooks."""
    selector = Selector(
        __group_or_groupversion_or_name,
        __version_or_name,
        __name,
        group=group,
        version=version,
        kind=kind,
        plural=plural,
        singular=singular,
        shortcut=shortcut,
        category=category,
    )
    return _webhook(
        WebhookType.MUTATING,
        selector=selector,
        id=id,
        param=param,
        operation=operation,
        operations=operations,
        subresource=subresource,
        persistent=persistent,
        side_effects=side_effects,
        ignore_failures=ignore_failures,
        labels=labels,
        annotations=annotations,
        when=when,
        field=field,
        value=value,
        registry=registry,
    )


# Change-detecting handlers.


def resume(
    __group_or_groupversion_or_name: ResourceName | None = None,
    __version_or_name: ResourceName | None = None,
    __name: ResourceName | None = None,
    *,
    group: str | None = None,
    version: str | None = None,
    kind: str | None = None,
    plural: str | None = None,
    singular: str | None = None,
    shortcut: str | None = None,
    category: str | None = None,
    id: str | None = None,
    param: Any | None = None,
    errors: ErrorsMode | None = None,
    timeout: float | None = None,
    retries: int | None = None,
    backoff: float | None = None,
    deleted: bool | None = None,
    labels: MetaFilterArg | None = None,
    annotations: MetaFilterArg | None = None,
    when: callbacks.WhenFilterFn | None = None,
    field: dicts.FieldSpec = None,
    value: filters.ValueFilter = None,
    registry: registries.OperatorRegistry | None = None,
) -> callbacks.Decorator:
    """``@kopf.on.resume()`` handler for the object resuming on operator (re)start."""
    selector = Selector(
        __group_or_groupversion_or_name,
        __version_or_name,
        __name,
        group=group,
        version=version,
        kind=kind,
        plural=plural,
        singular=singular,
        shortcut=shortcut,
        category=category,
    )
    return _changing(
        Reason.RESUME,
        selector=selector,
        id=id,
        param=param,
        errors=errors,
        timeout=timeout,
        retries=retries,
        backoff=backoff,
        deleted=deleted,
        labels=labels,
        annotations=annotations,
        when=when,
        field=field,
        value=value,
        registry=registry,
    )


def create(
    __group_or_groupversion_or_name: ResourceName | None = None,
    __version_or_name: ResourceName | None = None,
    __name: ResourceName | None = None,
    *,
    group: str | None = None,
    version: str | None = None,
    kind: str | None = None,
    plural: str | None = None,
    singular: str | None = None,
    shortcut: str | None = None,
    category: str | None = None,
    id: str | None = None,
    param: Any | None = None,
    errors: ErrorsMode | None = None,
    timeout: float | None = None,
    retries: int | None = None,
    backoff: float | None = None,
    labels: MetaFilterArg | None = None,
    annotations: MetaFilterArg | None = None,
    when: callbacks.WhenFilterFn | None = None,
    field: dicts.FieldSpec = None,
    value: filters.ValueFilter = None,
    registry: registries.OperatorRegistry | None = None,
) -> callbacks.Decorator:
    """``@kopf.on.create()`` handler for the object creation."""
    selector = Selector(
        __group_or_groupversion_or_name,
        __version_or_name,
        __name,
        group=group,
        version=version,
        kind=kind,
        plural=plural,
        singular=singular,
        shortcut=shortcut,
        category=category,
    )
    return _changing(
        Reason.CREATE,
        selector=selector,
        id=id,
        param=param,
        errors=errors,
        timeout=timeout,
        retries=retries,
        backoff=backoff,
        labels=labels,
        annotations=annotations,
        when=when,
        field=field,
        value=value,
        registry=registry,
    )


def update(
    __group_or_groupversion_or_name: ResourceName | None = None,
    __version_or_name: ResourceName | None = None,
    __name: ResourceName | None = None,
    *,
    group: str | None = None,
    version: str | None = None,
    kind: str | None = None,
    plural: str | None = None,
    singular: str | None = None,
    shortcut: str | None = None,
    category: str | None = None,
    id: str | None = None,
    param: Any | None = None,
    errors: ErrorsMode | None = None,
    timeout: float | None = None,
    retries: int | None = None,
    backoff: float | None = None,
    labels: MetaFilterArg | None = None,
    annotations: MetaFilterArg | None = None,
    when: callbacks.WhenFilterFn | None = None,
    field: dicts.FieldSpec = None,
    value: filters.ValueFilter = None,
    old: filters.ValueFilter = None,
    new: filters.ValueFilter = None,
    registry: registries.OperatorRegistry | None = None,
) -> callbacks.Decorator:
    """``@kopf.on.update()`` handler for the object update or change."""
    selector = Selector(
        __group_or_groupversion_or_name,
        __version_or_name,
        __name,
        group=group,
        version=version,
        kind=kind,
        plural=plural,
        singular=singular,
        shortcut=shortcut,
        category=category,
    )
    return _changing(
        Reason.UPDATE,
        selector=selector,
        id=id,
        param=param,
        errors=errors,
        timeout=timeout,
        retries=retries,
        backoff=backoff,
        labels=labels,
        annotations=annotations,
        when=when,
        field=field,
        value=value,
        old=old,
        new=new,
        registry=registry,
    )


def delete(
    __group_or_groupversion_or_name: ResourceName | None = None,
    __version_or_name: ResourceName | None = None,
    __name: ResourceName | None = None,
    *,
    group: str | None = None,
    version: str | None = None,
    kind: str | None = None,
    plural: str | None = None,
    singular: str | None = None,
    shortcut: str | None = None,
    category: str | None = None,
    id: str | None = None,
    param: Any | None = None,
    errors: ErrorsMode | None = None,
    timeout: float | None = None,
    retries: int | None = None,
    backoff: float | None = None,
    optional: bool | None = None,
    labels: MetaFilterArg | None = None,
    annotations: MetaFilterArg | None = None,
    when: callbacks.WhenFilterFn | None = None,
    field: dicts.FieldSpec = None,
    value: filters.ValueFilter = None,
    registry: registries.OperatorRegistry | None = None,
) -> callbacks.Decorator:
    """``@kopf.on.delete()`` handler for the object deletion."""
    selector = Selector(
        __group_or_groupversion_or_name,
        __version_or_name,
        __name,
        group=group,
        version=version,
        kind=kind,
        plural=plural,
        singular=singular,
        shortcut=shortcut,
        category=category,
    )
    return _changing(
        Reason.DELETE,
        selector=selector,
        id=id,
        param=param,
        errors=errors,
        timeout=timeout,
        retries=retries,
        backoff=backoff,
        optional=optional,
        labels=labels,
        annotations=annotations,
        when=when,
        field=field,
        value=value,
        registry=registry,
    )


def field(
    __group_or_groupversion_or_name: ResourceName | None = None,
    __version_or_name: ResourceName | None = None,
    __name: ResourceName | None = None,
    *,
    group: str | None = None,
    version: str | None = None,
    kind: str | None = None,
    plural: str | None = None,
    singular: str | None = None,
    shortcut: str | None = None,
    category: str | None = None,
    id: str | None = None,
    param: Any | None = None,
    errors: ErrorsMode | None = None,
    timeout: float | None = None,
    retries: int | None = None,
    backoff: float | None = None,
    labels: MetaFilterArg | None = None,
    annotations: MetaFilterArg | None = None,
    when: callbacks.WhenFilterFn | None = None,
    field: dicts.FieldSpec,
    value: filters.ValueFilter = None,
    old: filters.ValueFilter = None,
    new: filters.ValueFilter = None,
    registry: registries.OperatorRegistry | None = None,
) -> callbacks.Decorator:
    """``@kopf.on.field()`` handler for the individual field changes."""
    if not dicts.parse_field(field):
        raise TypeError("A field is required for the field handlers: field='spec.something'.")
    selector = Selector(
        __group_or_groupversion_or_name,
        __version_or_name,
        __name,
        group=group,
        version=version,
        kind=kind,
        plural=plural,
        singular=singular,
        shortcut=shortcut,
        category=category,
    )
    return _changing(
        None,
        selector=selector,
        id=id,
        param=param,
        errors=errors,
        timeout=timeout,
        retries=retries,
        backoff=backoff,
        labels=labels,
        annotations=annotations,
        when=when,
        field=field,
        value=value,
        old=old,
        new=new,
        registry=registry,
    )


# Other resource-level handlers.


def index(
    __group_or_groupversion_or_name: ResourceName | None = None,
    __version_or_name: ResourceName | None = None,
    __name: ResourceName | None = None,
    *,
    group: str | None = None,
    version: str | None = None,
    kind: str | None = None,
    plural: str | None = None,
    singular: str | None = None,
    shortcut: str | None = None,
    category: str | None = None,
    id: str | None = None,
    param: Any | None = None,
    errors: ErrorsMode | None = None,
    timeout: float | None = None,
    retries: int | None = None,
    backoff: float | None = None,
    labels: MetaFilterArg | None = None,
    annotations: MetaFilterArg | None = None,
    when: callbacks.WhenFilterFn | None = None,
    field: dicts.FieldSpec = None,
    value: filters.ValueFilter = None,
    registry: registries.OperatorRegistry | None = None,
) -> callbacks.Decorator:
    """``@kopf.index()`` handler for the indexing callbacks."""
    selector = Selector(
        __group_or_groupversion_or_name,
        __version_or_name,
        __name,
        group=group,
        version=version,
        kind=kind,
        plural=plural,
        singular=singular,
        shortcut=shortcut,
        category=category,
    )
    real_registry = registry if registry is not None else registries.get_default_registry()
    common = _resource_filters(labels=labels, annotations=annotations, when=when, field=field, value=value)

    def decorator(fn: callbacks.HandlerFn) -> callbacks.HandlerFn:
        # The id is the index name (a kwarg of other handlers): no field suffixes.
        real_id = ids.build_handler_id(fn, id=id)
        handler = handlers.IndexingHandler(
            fn=fn,
            id=real_id,
            param=param,
            selector=selector,
            **common,
            errors=ErrorsMode.IGNORED if errors is None else errors,
            timeout=timeout,
            retries=retries,
            backoff=backoff,
        )
        real_registry.indexing.append(handler)
        return fn

    return decorator


def event(
    __group_or_groupversion_or_name: ResourceName | None = None,
    __version_or_name: ResourceName | None = None,
    __name: ResourceName | None = None,
    *,
    group: str | None = None,
    version: str | None = None,
    kind: str | None = None,
    plural: str | None = None,
    singular: str | None = None,
    shortcut: str | None = None,
    category: str | None = None,
    id: str | None = None,
    param: Any | None = None,
    labels: MetaFilterArg | None = None,
    annotations: MetaFilterArg | None = None,
    when: callbacks.WhenFilterFn | None = None,
    field: dicts.FieldSpec = None,
    value: filters.ValueFilter = None,
    registry: registries.OperatorRegistry | None = None,
) -> callbacks.Decorator:
    """``@kopf.on.event()`` handler for the silent spies on the events."""
    selector = Selector(
        __group_or_groupversion_or_name,
        __version_or_name,
        __name,
        group=group,
        version=version,
        kind=kind,
        plural=plural,
        singular=singular,
        shortcut=shortcut,
        category=category,
    )
    real_registry = registry if registry is not None else registries.get_default_registry()
    common = _resource_filters(labels=labels, annotations=annotations, when=when, field=field, value=value)

    def decorator(fn: callbacks.HandlerFn) -> callbacks.HandlerFn:
        real_id = ids.build_handler_id(fn, id=id, field=common["field"])
        handler = handlers.WatchingHandler(
            fn=fn,
            id=real_id,
            param=param,
            selector=selector,
            **common,
            errors=ErrorsMode.IGNORED,
            timeout=None,
            retries=None,
            backoff=None,
        )
        real_registry.watching.append(handler)
        return fn

    return decorator


def daemon(
    __group_or_groupversion_or_name: ResourceName | None = None,
    __version_or_name: ResourceName | None = None,
    __name: ResourceName | None = None,
    *,
    group: str | None = None,
    version: str | None = None,
    kind: str | None = None,
    plural: str | None = None,
    singular: str | None = None,
    shortcut: str | None = None,
    category: str | None = None,
    id: str | None = None,
    param: Any | None = None,
    errors: ErrorsMode | None = None,
    timeout: float | None = None,
    retries: int | None = None,
    backoff: float | None = None,
    initial_delay: float | None = None,
    cancellation_backoff: float | None = None,
    cancellation_timeout: float | None = None,
    cancellation_polling: float | None = None,
    labels: MetaFilterArg | None = None,
    annotations: MetaFilterArg | None = None,
    when: callbacks.WhenFilterFn | None = None,
    field: dicts.FieldSpec = None,
    value: filters.ValueFilter = None,
    registry: registries.OperatorRegistry | None = None,
) -> callbacks.Decorator:
    """``@kopf.daemon()`` decorator for the background threads/tasks."""
    selector = Selector(
        __group_or_groupversion_or_name,
        __version_or_name,
        __name,
        group=group,
        version=version,
        kind=kind,
        plural=plural,
        singular=singular,
        shortcut=shortcut,
        category=category,
    )
    real_registry = registry if registry is not None else registries.get_default_registry()
    common = _resource_filters(labels=labels, annotations=annotations, when=when, field=field, value=value)

    def decorator(fn: callbacks.HandlerFn) -> callbacks.HandlerFn:
        real_id = ids.build_handler_id(fn, id=id, field=common["field"])
        handler = handlers.DaemonHandler(
            fn=fn,
            id=real_id,
            param=param,
            selector=selector,
            **common,
            errors=ErrorsMode.TEMPORARY if errors is None else errors,
            timeout=timeout,
            retries=retries,
            backoff=backoff,
            initial_delay=initial_delay,
            cancellation_backoff=cancellation_backoff,
            cancellation_timeout=cancellation_timeout,
            cancellation_polling=cancellation_polling,
        )
        real_registry.spawning.append(handler)
        return fn

    return decorator


def timer(
    __group_or_groupversion_or_name: ResourceName | None = None,
    __version_or_name: ResourceName | None = None,
    __name: ResourceName | None = None,
    *,
    group: str | None = None,
    version: str | None = None,
    kind: str | None = None,
    plural: str | None = None,
    singular: str | None = None,
    shortcut: str | None = None,
    category: str | None = None,
    id: str | None = None,
    param: Any | None = None,
    errors: ErrorsMode | None = None,
    timeout: float | None = None,
    retries: int | None = None,
    backoff: float | None = None,
    interval: float | None = None,
    initial_delay: float | None = None,
    sharp: bool | None = None,
    idle: float | None = None,
    labels: MetaFilterArg | None = None,
    annotations: MetaFilterArg | None = None,
    when: callbacks.WhenFilterFn | None = None,
    field: dicts.FieldSpec = None,
    value: filters.ValueFilter = None,
    registry: registries.OperatorRegistry | None = None,
) -> callbacks.Decorator:
    """``@kopf.timer()`` handler for the regular events."""
    selector = Selector(
        __group_or_groupversion_or_name,
        __version_or_name,
        __name,
        group=group,
        version=version,
        kind=kind,
        plural=plural,
        singular=singular,
        shortcut=shortcut,
        category=category,
    )
    real_registry = registry if registry is not None else registries.get_default_registry()
    common = _resource_filters(labels=labels, annotations=annotations, when=when, field=field, value=value)

    def decorator(fn: callbacks.HandlerFn) -> callbacks.HandlerFn:
        real_id = ids.build_handler_id(fn, id=id, field=common["field"])
        handler = handlers.TimerHandler(
            fn=fn,
            id=real_id,
            param=param,
            selector=selector,
            **common,
            errors=ErrorsMode.TEMPORARY if errors is None else errors,
            timeout=timeout,
            retries=retries,
            backoff=backoff,
            initial_delay=initial_delay,
            interval=interval,
            sharp=bool(sharp),
            idle=idle,
        )
        real_registry.spawning.append(handler)
        return fn

    return decorator


# Sub-handlers of the currently executed handler.


def subhandler(
    *,
    id: str | None = None,
    param: Any | None = None,
    errors: ErrorsMode | None = None,
    timeout: float | None = None,
    retries: int | None = None,
    backoff: float | None = None,
    labels: MetaFilterArg | None = None,
    annotations: MetaFilterArg | None = None,
    when: callbacks.WhenFilterFn | None = None,
    field: dicts.FieldSpec = None,
    value: filters.ValueFilter = None,
    old: filters.ValueFilter = None,
    new: filters.ValueFilter = None,
) -> callbacks.Decorator:
    """
    ``@kopf.subhandler()`` decorator for the dynamically generated sub-handlers.

    Usable only inside of a change-detecting handler: the sub-handlers are put into
    the parent handler's own registry, with ids prefixed by the parent's id.
    """
    parent_registry = subhandlers.get_current_subregistry()
    parent_id = subhandlers.get_current_handler_id()
    common = _resource_filters(labels=labels, annotations=annotations, when=when, field=field, value=value)
    _check_change_filters(value=value, old=old, new=new)

    def decorator(fn: callbacks.HandlerFn) -> callbacks.HandlerFn:
        real_id = ids.build_handler_id(fn, id=id, field=common["field"], prefix=parent_id)
        handler = handlers.ChangingHandler(
            fn=fn,
            id=real_id,
            param=param,
            selector=None,
            **common,
            reason=None,
            errors=ErrorsMode.TEMPORARY if errors is None else errors,
            timeout=timeout,
            retries=retries,
            backoff=backoff,
            old=old,
            new=new,
        )
        parent_registry.append(handler)
        return fn

    return decorator


# A legacy name of `subhandler`, as used in the earliest documentation: `@kopf.on.this(...)`.
this = subhandler


def register(
    fn: callbacks.HandlerFn,
    *,
    id: str | None = None,
    param: Any | None = None,
    errors: ErrorsMode | None = None,
    timeout: float | None = None,
    retries: int | None = None,
    backoff: float | None = None,
    labels: MetaFilterArg | None = None,
    annotations: MetaFilterArg | None = None,
    when: callbacks.WhenFilterFn | None = None,
) -> callbacks.HandlerFn:
    """Register a function as a sub-handler of the currently executed handler."""
    decorator = subhandler(
        id=id,
        param=param,
        errors=errors,
        timeout=timeout,
        retries=retries,
        backoff=backoff,
        labels=labels,
        annotations=annotations,
        when=when,
    )
    return decorator(fn)


# Shared plumbing of the decorators.


def _activity(
    activity: Activity,
    *,
    id: str | None,
    param: Any,
    errors: ErrorsMode | None,
    timeout: float | None,
    retries: int | None,
    backoff: float | None,
    registry: registries.OperatorRegistry | None,
) -> callbacks.Decorator:
    real_registry = registry if registry is not None else registries.get_default_registry()

    def decorator(fn: callbacks.HandlerFn) -> callbacks.HandlerFn:
        handler = handlers.ActivityHandler(
            fn=fn,
            id=ids.build_handler_id(fn, id=id),
            param=param,
            activity=activity,
            errors=ErrorsMode.TEMPORARY if errors is None else errors,
            timeout=timeout,
            retries=retries,
            backoff=backoff,
        )
        real_registry.activities.append(handler)
        return fn

    return decorator


def _changing(
    reason: Reason | None,
    *,
    selector: Selector,
    id: str | None,
    param: Any,
    errors: ErrorsMode | None,
    timeout: float | None,
    retries: int | None,
    backoff: float | None,
    labels: MetaFilterArg | None,
    annotations: MetaFilterArg | None,
    when: callbacks.WhenFilterFn | None,
    field: dicts.FieldSpec,
    value: filters.ValueFilter,
    old: filters.ValueFilter = None,
    new: filters.ValueFilter = None,
    deleted: bool | None = None,
    optional: bool | None = None,
    registry: registries.OperatorRegistry | None,
) -> callbacks.Decorator:
    real_registry = registry if registry is not None else registries.get_default_registry()
    common = _resource_filters(labels=labels, annotations=annotations, when=when, field=field, value=value)
    _check_change_filters(value=value, old=old, new=new)

    def decorator(fn: callbacks.HandlerFn) -> callbacks.HandlerFn:
        real_id = ids.build_handler_id(fn, id=id, field=common["field"])
        handler = handlers.ChangingHandler(
            fn=fn,
            id=real_id,
            param=param,
            selector=selector,
            **common,
            reason=reason,
            errors=ErrorsMode.TEMPORARY if errors is None else errors,
            timeout=timeout,
            retries=retries,
            backoff=backoff,
            old=old,
            new=new,
            deleted=bool(deleted),
            optional=bool(optional),
        )
        real_registry.changing.append(handler)
        return fn

    return decorator


def _webhook(
    type: WebhookType,
    *,
    selector: Selector,
    id: str | None,
    param: Any,
    operation: Operation | None,
    operations: Collection[Operation] | None,
    subresource: str | None,
    persistent: bool | None,
    side_effects: bool | None,
    ignore_failures: bool | None,
    labels: MetaFilterArg | None,
    annotations: MetaFilterArg | None,
    when: callbacks.WhenFilterFn | None,
    field: dicts.FieldSpec,
    value: filters.ValueFilter,
    registry: registries.OperatorRegistry | None,
) -> callbacks.WebhookDecorator:
    real_registry = registry if registry is not None else registries.get_default_registry()
    common = _resource_filters(labels=labels, annotations=annotations, when=when, field=field, value=value)
    real_operations = _parse_operations(operation=operation, operations=operations)

    def decorator(fn: callbacks.WebhookHandlerFn) -> callbacks.WebhookHandlerFn:
        # The id is a part of the webhook's URL & name: no field suffixes with slashes.
        handler = handlers.WebhookHandler(
            fn=fn,
            id=ids.build_handler_id(fn, id=id),
            param=param,
            selector=selector,
            **common,
            errors=None,
            timeout=None,
            retries=None,
            backoff=None,
            type=type,
            operations=real_operations,
            subresource=subresource,
            persistent=bool(persistent),
            side_effects=bool(side_effects),
            ignore_failures=bool(ignore_failures),
        )
        real_registry.webhooks.append(handler)
        return fn

    return decorator


def _resource_filters(
    *,
    labels: MetaFilterArg | None,
    annotations: MetaFilterArg | None,
    when: callbacks.WhenFilterFn | None,
    field: dicts.FieldSpec,
    value: filters.ValueFilter,
) -> dict[str, Any]:
    """Validate & normalize the filters common to all resource handlers."""
    if when is not None and not callable(when):
        raise TypeError(f"when= must be a callable, got {when!r}.")
    return dict(
        labels=filters.normalize_meta_filter(labels, what="labels"),
        annotations=filters.normalize_meta_filter(annotations, what="annotations"),
        when=when,
        field=dicts.parse_field(field) or None,
        value=value,
    )


def _check_change_filters(*, value: filters.ValueFilter, old: filters.ValueFilter, new: filters.ValueFilter) -> None:
    if value is not None and (old is not None or new is not None):
        raise TypeError("Either value= or old=/new= can be used in the filters, not both: it would be ambiguous.")


def _parse_operations(
    *,
    operation: Operation | None,
    operations: Collection[Operation] | None,
) -> frozenset[str] | None:
    if operation is not None and operations is not None:
        raise TypeError("Either operation= or operations= can be used, not both.")
    if isinstance(operations, str):
        raise TypeError(f"operations= must be a collection of strings, got {operations!r}.")
    values = [operation] if operation is not None else list(operations or [])
    if "*" in values or (operations is None and operation is None):
        return None
    unknown = set(values) - handlers.OPERATIONS
    if unknown:
        raise ValueError(f"Unsupported operations: {sorted(unknown)!r}. Use some of {sorted(handlers.OPERATIONS)!r}.")
    return frozenset(values)
