"""
Invoking the user-provided callables: handlers of all kinds and the filter callbacks.

Every callable gets the full set of keyword arguments for its occasion (the "cause"):
the framework does not inspect the signatures, so the handlers are expected to accept
``**kwargs`` (or ``**_``) for the keywords they do not use or that are added later.

Async callables are awaited directly in the event loop (in the current task).
Sync callables run in the operator's executor (``settings.execution.executor``, a thread
pool by default), in a copy of the current context: so the context variables that the
framework sets around the call (the current object, the sub-handlers' registry) are
visible to the sync handlers in their threads too.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import dataclasses
import functools
import inspect
import logging
from collections.abc import Callable, Iterator, Mapping, MutableSequence
from typing import Any

from kopf._cogs.aiokits import aiothreads
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.structs import bodies, current, dicts, diffs, ephemera, patches, references

#: Any logger that the handlers can get: a plain one, or a per-object adapter (with extra fields).
LoggerLike = logging.Logger | logging.LoggerAdapter[Any]

_EMPTY: Mapping[str, Any] = {}


@dataclasses.dataclass(frozen=True, kw_only=True)
class BaseCause:
    """
    The occasion of invoking a handler: everything that goes into its keyword arguments.

    ``indices`` are the in-memory indices by their names: every index is a kwarg of its own.
    An index overrides the framework's kwarg of the same name, the per-handler ones too (``retry``,
    ``param``, …): so a kwarg added by a later version never changes what an operator's handlers get.
    """

    logger: LoggerLike
    memo: ephemera.AnyMemo = None
    indices: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    def kwargs(self) -> dict[str, Any]:
        """The keyword arguments for the handlers of this cause (without the per-handler ones)."""
        return {**self.cached_framework_kwargs(), **self.indices}

    def cached_framework_kwargs(self) -> Mapping[str, Any]:
        """
        The framework's kwargs as made on the first call (not to be changed: the callers copy them).

        A cause is frozen, and its values are either fixed (names, ids) or live views (body, spec, status):
        so the kwargs are made once per cause, not for every filter, handler and lifecycle that asks.
        """
        made: Mapping[str, Any] | None = self.__dict__.get("_made_kwargs")
        if made is None:
            made = self.framework_kwargs()
            object.__setattr__(self, "_made_kwargs", made)
        return made

    def framework_kwargs(self) -> dict[str, Any]:
        """The framework's own kwargs of this cause, without the indices (the subclasses add theirs)."""
        return {"logger": self.logger, "memo": self.memo}


@dataclasses.dataclass(frozen=True, kw_only=True)
class ActivityCause(BaseCause):
    """An operator-level activity: startup, cleanup, authentication, probing."""

    activity: str
    settings: OperatorSettings

    def framework_kwargs(self) -> dict[str, Any]:
        return {**super().framework_kwargs(), "activity": self.activity, "settings": self.settings}


@dataclasses.dataclass(frozen=True, kw_only=True)
class ResourceCause(BaseCause):
    """Any occasion related to one resource object: its body and its patch to fill."""

    resource: references.Resource
    patch: patches.Patch
    body: bodies.Body

    def framework_kwargs(self) -> dict[str, Any]:
        body = self.body
        return {
            **super().framework_kwargs(),
            "resource": self.resource,
            "patch": self.patch,
            "body": body,
            "spec": body.spec,
            "meta": body.metadata,
            "status": body.status,
            "uid": body.metadata.uid,
            "name": body.metadata.name,
            "namespace": body.metadata.namespace,
            "labels": body.metadata.labels,
            "annotations": body.metadata.annotations,
        }


@dataclasses.dataclass(frozen=True, kw_only=True)
class WatchingCause(ResourceCause):
    """A raw watch-event of an object (``@kopf.on.event``)."""

    type: str | None
    event: Mapping[str, Any]

    def framework_kwargs(self) -> dict[str, Any]:
        return {**super().framework_kwargs(), "type": self.type, "event": self.event}


@dataclasses.dataclass(frozen=True, kw_only=True)
class ChangingCause(ResourceCause):
    """
    A detected change of an object: creation, update, deletion, resuming (or a field change).

    ``reason`` is one of :class:`kopf.Reason` (a string enum; plain strings are accepted).
    ``old``/``new``/``diff`` are of the whole object; they are reduced to the field
    of the field-handlers for each handler individually (see :func:`reduce_to_field`).
    """

    reason: str
    initial: bool = False
    diff: diffs.Diff = dataclasses.field(default_factory=lambda: diffs.Diff([]))
    old: Any = None
    new: Any = None

    def framework_kwargs(self) -> dict[str, Any]:
        return {
            **super().framework_kwargs(),
            "reason": self.reason,
            "diff": self.diff,
            "old": self.old,
            "new": self.new,
        }


@dataclasses.dataclass(frozen=True, kw_only=True)
class SpawningCause(ResourceCause):
    """The background tasks of an object: daemons & timers (``stopped`` is added per daemon)."""

    reset: bool = False

    def cached_framework_kwargs(self) -> Mapping[str, Any]:
        # Not kept: such a cause lives as long as its daemon or timer (~0.6 KB each, thousands of them at once).
        return self.framework_kwargs()


@dataclasses.dataclass(frozen=True, kw_only=True)
class WebhookCause(ResourceCause):
    """An admission request for an object (validating or mutating)."""

    dryrun: bool = False
    warnings: MutableSequence[str] = dataclasses.field(default_factory=list)
    subresource: str | None = None
    userinfo: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    headers: Mapping[str, str] = dataclasses.field(default_factory=dict)
    sslpeer: Mapping[str, Any] = dataclasses.field(default_factory=dict)  # empty: no verified client certificate
    operation: str | None = None
    old: Any = None
    new: Any = None
    diff: diffs.Diff | None = None

    def framework_kwargs(self) -> dict[str, Any]:
        return {
            **super().framework_kwargs(),
            "dryrun": self.dryrun,
            "warnings": self.warnings,
            "subresource": self.subresource,
            "userinfo": self.userinfo,
            "headers": self.headers,
            "sslpeer": self.sslpeer,
            "operation": self.operation,
            "old": self.old,
            "new": self.new,
            "diff": self.diff,
        }


def reduce_to_field(kwargs: Mapping[str, Any], field: dicts.FieldSpec) -> dict[str, Any]:
    """
    Narrow the change-related kwargs (``old``, ``new``, ``diff``) to one field, if there is one.

    For the field handlers, ``old``/``new`` are the values of that field, and ``diff``
    is relative to that field; other kwargs (e.g. ``body``) remain about the whole object.
    """
    path = dicts.parse_field(field)
    if not path:
        return dict(kwargs)
    result = dict(kwargs)
    if "old" in result:
        result["old"] = dicts.resolve(result["old"], path, None)
    if "new" in result:
        result["new"] = dicts.resolve(result["new"], path, None)
    if isinstance(result.get("diff"), diffs.Diff):
        result["diff"] = diffs.reduce(result["diff"], path)
    return result


class LazyKwargs(Mapping[str, Any]):
    """
    A cause's kwargs, made on the first read: for the filters of the handlers, which read them only for callbacks.

    Most handlers have no callback filters, and most events cause no handler to run (e.g. the echoes of
    the framework's own patches): the kwargs (views of the body, ~20 keys) are then not made at all.
    """

    __slots__ = ("_cause", "_kwargs")

    def __init__(self, cause: BaseCause) -> None:
        self._cause = cause
        self._kwargs: dict[str, Any] | None = None

    def _made(self) -> dict[str, Any]:
        if self._kwargs is None:
            self._kwargs = self._cause.kwargs()
        return self._kwargs

    def __getitem__(self, key: str) -> Any:
        return self._made()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._made())

    def __len__(self) -> int:
        return len(self._made())


def build_kwargs(cause: BaseCause | None = None, **extra: Any) -> dict[str, Any]:
    """All kwargs for a callable: the cause's ones plus the extra ones (e.g. ``param``, ``retry``), then the indices."""
    if cause is None:
        return dict(extra)
    return {**cause.cached_framework_kwargs(), **extra, **cause.indices}


def is_async_fn(fn: Callable[..., Any] | None) -> bool:
    """Whether the callable is a coroutine function (also via partials & callable objects)."""
    if fn is None:
        return False
    while isinstance(fn, functools.partial):
        fn = fn.func
    if inspect.iscoroutinefunction(fn) or asyncio.iscoroutinefunction(fn):
        return True
    if inspect.isroutine(fn) or not callable(fn):
        return False
    call = type(fn).__call__  # callable objects with an async __call__().
    return inspect.iscoroutinefunction(call) or asyncio.iscoroutinefunction(call)


@contextlib.contextmanager
def _focused(cause: BaseCause | None) -> Iterator[None]:
    """Make the cause's object "current" for the helpers (e.g. ``kopf.adopt()``), if it has one."""
    if isinstance(cause, ResourceCause):
        with current.focused_on(cause.body):
            yield
    else:
        yield


async def invoke(
    fn: Callable[..., Any],
    *,
    cause: BaseCause | None = None,
    settings: OperatorSettings | None = None,
    executor: concurrent.futures.Executor | None = None,
    kwargs: Mapping[str, Any] | None = None,
) -> Any:
    """
    Call a handler or a callback with the kwargs of its cause (and extra ones), sync or async.

    The executor for the sync callables is the explicit one, else the settings' one,
    else the loop's default one. The cause's object is "current" during the call.
    The result is returned as is; the exceptions are propagated as is.
    """
    all_kwargs = build_kwargs(cause, **(kwargs or _EMPTY))
    with _focused(cause):
        if is_async_fn(fn):
            result = await fn(**all_kwargs)
        else:
            context = contextvars.copy_context()
            real_executor = (
                executor if executor is not None else (settings.execution.executor if settings is not None else None)
            )
            call = functools.partial(context.run, functools.partial(fn, **all_kwargs))
            result = await aiothreads.run_in_executor(real_executor, call)
            if inspect.isawaitable(result):  # e.g. a sync lambda that returns a coroutine.
                result = await result
    return result


def invoke_sync(
    fn: Callable[..., Any],
    *,
    cause: BaseCause | None = None,
    kwargs: Mapping[str, Any] | None = None,
) -> Any:
    """
    Call a sync callable in place, in the current thread (e.g. the filters, which must be quick).

    Async callables cannot be called this way: a ``TypeError`` is raised for them.
    """
    if is_async_fn(fn):
        raise TypeError(f"Async callables cannot be invoked synchronously: {fn!r}")
    with _focused(cause):
        return fn(**build_kwargs(cause, **(kwargs or _EMPTY)))
