"""
Posting the k8s-events (``kind: Event``) about the objects, in the background.

``kopf.event()`` & co. can be called from anywhere in an operator: from async handlers
in the operator's loop, and from sync handlers in the executor's threads. They only put
the events into the operator's queue (found via a context variable, which is inherited
by the threads of the sync handlers); the :func:`poster` task of the operator posts
them one by one. Outside of an operator (no queue in the context), they do nothing
but log a warning: there is nowhere to post to.

Besides the explicit events, the messages of the per-object loggers that qualify
for posting (see ``settings.posting``) are queued by :func:`queue_logged_event`, the sink that
the operator gives to the loggers (regardless of the logging levels and handlers).
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import logging
import sys
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from kopf._cogs.clients import auth, events
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.structs.bodies import ObjectReference, build_object_reference
from kopf._cogs.structs.credentials import Vault

logger = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True, slots=True)  # thousands wait while the objects' own requests go first
class K8sEvent:
    """One event to be posted: about whom, of which type, for which reason, with which message."""

    ref: ObjectReference
    type: str
    reason: str
    message: str
    backoffs: tuple[float, ...] | None = None  # None: the settings' ones for the explicit/logged events
    logged: bool = False
    level: int | None = None  # of kopf.info/warn/exception, for settings.posting.level; None: always posted


@dataclasses.dataclass(frozen=True)
class EventQueue:
    """The operator's queue of events and the loop it belongs to (to put into it from other threads)."""

    queue: asyncio.Queue[K8sEvent]
    loop: asyncio.AbstractEventLoop

    def put(self, event: K8sEvent) -> None:
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self.loop:
            self.queue.put_nowait(event)
        elif not self.loop.is_closed():
            self.loop.call_soon_threadsafe(self.queue.put_nowait, event)


#: The events queue of the current operator (set by the operator for all its tasks & threads).
event_queue_var: contextvars.ContextVar[EventQueue] = contextvars.ContextVar("event_queue_var")


def make_event_queue() -> EventQueue:
    return EventQueue(queue=asyncio.Queue(), loop=asyncio.get_running_loop())


def _as_mapping(obj: Any) -> Mapping[str, Any]:
    """The raw body of a dict-like object, or of a 3rd-party client's object (kubernetes, pykube)."""
    if isinstance(obj, Mapping):
        return obj
    raw = getattr(obj, "obj", None)  # pykube-ng objects
    if isinstance(raw, Mapping):
        return raw
    to_dict = getattr(obj, "to_dict", None)  # the official client's models
    if callable(to_dict):
        data = to_dict()
        if isinstance(data, Mapping):
            data = dict(data)
            if "api_version" in data and "apiVersion" not in data:
                data["apiVersion"] = data.pop("api_version")
            return data
    raise TypeError(f"Cannot post events about {type(obj).__name__}: it is not an object body.")


def _iter_objs(objs: Any) -> Iterator[Mapping[str, Any]]:
    if isinstance(objs, Mapping) or not isinstance(objs, Iterable) or isinstance(objs, (str, bytes)):
        yield _as_mapping(objs)
    else:
        for obj in objs:
            yield _as_mapping(obj)


def enqueue(
    *,
    ref: ObjectReference,
    type: str,
    reason: str,
    message: str = "",
    backoffs: float | Iterable[float] | None = None,
    level: int | None = None,
) -> None:
    """Queue an event for posting by the current operator (or warn that there is no operator)."""
    try:
        queue = event_queue_var.get()
    except LookupError:
        logger.warning(
            f"An event cannot be posted outside of an operator: type={type!r}, reason={reason!r}, message={message!r}"
        )
        return
    delays = (backoffs,) if isinstance(backoffs, (int, float)) else tuple(backoffs) if backoffs is not None else None
    queue.put(K8sEvent(ref=ref, type=type, reason=reason, message=message, backoffs=delays, level=level))


def event(
    objs: Any, *, type: str, reason: str, message: str = "", backoffs: float | Iterable[float] | None = None
) -> None:
    """
    Post a k8s-event about the object(s), in the background (retried with ``backoffs`` on failures).

    Of any type, it has no logging level: ``settings.posting.level`` does not filter it (as in the
    published framework); the shortcuts below have their levels and are filtered.
    """
    _post(objs, type=type, reason=reason, message=message, backoffs=backoffs, level=None)


def _post(
    objs: Any, *, type: str, reason: str, message: str, backoffs: float | Iterable[float] | None, level: int | None
) -> None:
    for obj in _iter_objs(objs):
        enqueue(
            ref=build_object_reference(obj), type=type, reason=reason, message=message, backoffs=backoffs, level=level
        )


def info(objs: Any, *, reason: str, message: str = "", backoffs: float | Iterable[float] | None = None) -> None:
    """Post a ``Normal`` k8s-event about the object(s), unless ``settings.posting.level`` is above INFO."""
    _post(objs, type="Normal", reason=reason, message=message, backoffs=backoffs, level=logging.INFO)


def warn(objs: Any, *, reason: str, message: str = "", backoffs: float | Iterable[float] | None = None) -> None:
    """Post a ``Warning`` k8s-event about the object(s), unless ``settings.posting.level`` is above WARNING."""
    _post(objs, type="Warning", reason=reason, message=message, backoffs=backoffs, level=logging.WARNING)


def exception(
    objs: Any,
    *,
    reason: str = "",
    message: str = "",
    exc: BaseException | None = None,
    backoffs: float | Iterable[float] | None = None,
) -> None:
    """Post an ``Error`` k8s-event about the object(s), with the current (or given) exception's text."""
    if exc is None:
        exc = sys.exc_info()[1]
    exc_text = f"{exc}" if exc is not None else ""
    full_message = f"{message} {exc_text}".strip() if message else exc_text
    _post(objs, type="Error", reason=reason, message=full_message, backoffs=backoffs, level=logging.ERROR)


def queue_logged_event(ref: ObjectReference, type: str, reason: str, message: str) -> None:
    """The per-object loggers' sink: queue the message as an event of the current operator (if any)."""
    try:
        queue = event_queue_var.get()
    except LookupError:
        return  # not in an operator: nowhere to post to.
    # The framework's messages repeat for every object (e.g. "Handler 'x' succeeded."): one copy for all that wait.
    queue.put(K8sEvent(ref=ref, type=type, reason=reason, message=sys.intern(message), logged=True))


async def poster(
    *,
    event_queue: EventQueue,
    settings: OperatorSettings,
    vault: Vault | None = None,
) -> None:
    """
    Post the queued events one by one, forever (until cancelled); never fail on posting errors.

    One at a time, in the order of queueing: so ``settings.posting.worker_limit`` (any) holds,
    and ``settings.posting.idle_timeout`` has nothing to time out (the poster never idles out).
    Under load, the events wait until the objects' own requests are sent (see ``auth.BACKGROUND_ORDER``).
    """
    auth.request_order.set(auth.BACKGROUND_ORDER)  # (in this task's own context)
    while True:
        posted = await event_queue.queue.get()
        if posted.level is not None and posted.level < settings.posting.level:
            continue  # e.g. kopf.info() with posting.level=WARNING: filtered as the logged messages are
        backoffs = posted.backoffs
        if backoffs is None:
            backoffs = tuple(settings.posting.logging_backoffs if posted.logged else settings.posting.default_backoffs)
        await events.post_event(
            ref=posted.ref,
            type=posted.type,
            reason=posted.reason,
            message=posted.message,
            settings=settings,
            vault=vault,
            backoffs=backoffs,
        )
