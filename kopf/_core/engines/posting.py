"""
Posting the k8s-events (``kind: Event``) about the objects, in the background.

``kopf.event()`` & co. can be called from anywhere in an operator: from async handlers
in the operator's loop, and from sync handlers in the executor's threads. They only put
the events into the operator's queue (found via a context variable, which is inherited
by the threads of the sync handlers); the :func:`poster` task of the operator posts
them one by one. Outside of an operator (no queue in the context), they do nothing
but log a warning: there is nowhere to post to.

Besides the explicit events, the messages of the per-object loggers that qualify
for posting (see ``settings.posting``) are turned into events by :class:`K8sPoster`,
a logging handler installed on the objects' logger.
"""
from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import logging
import sys
import threading
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from kopf._cogs.clients import events
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.structs.bodies import ObjectReference, build_object_reference
from kopf._cogs.structs.credentials import Vault
from kopf._core.actions import loggers

logger = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class K8sEvent:
    """One event to be posted: about whom, of which type, for which reason, with which message."""
    ref: ObjectReference
    type: str
    reason: str
    message: str


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
event_queue_var: contextvars.ContextVar[EventQueue] = contextvars.ContextVar('event_queue_var')


def make_event_queue() -> EventQueue:
    return EventQueue(queue=asyncio.Queue(), loop=asyncio.get_running_loop())


def _as_mapping(obj: Any) -> Mapping[str, Any]:
    """The raw body of a dict-like object, or of a 3rd-party client's object (kubernetes, pykube)."""
    if isinstance(obj, Mapping):
        return obj
    raw = getattr(obj, 'obj', None)  # pykube-ng objects
    if isinstance(raw, Mapping):
        return raw
    to_dict = getattr(obj, 'to_dict', None)  # the official client's models
    if callable(to_dict):
        data = to_dict()
        if isinstance(data, Mapping):
            data = dict(data)
            if 'api_version' in data and 'apiVersion' not in data:
                data['apiVersion'] = data.pop('api_version')
            return data
    raise TypeError(f"Cannot post events about {type(obj).__name__}: it is not an object body.")


def _iter_objs(objs: Any) -> Iterator[Mapping[str, Any]]:
    if isinstance(objs, Mapping) or not isinstance(objs, Iterable) or isinstance(objs, (str, bytes)):
        yield _as_mapping(objs)
    else:
        for obj in objs:
            yield _as_mapping(obj)


def enqueue(*, ref: ObjectReference, type: str, reason: str, message: str = '') -> None:
    """Queue an event for posting by the current operator (or warn that there is no operator)."""
    try:
        queue = event_queue_var.get()
    except LookupError:
        logger.warning(f"An event cannot be posted outside of an operator: "
                       f"type={type!r}, reason={reason!r}, message={message!r}")
        return
    queue.put(K8sEvent(ref=ref, type=type, reason=reason, message=message))


def event(objs: Any, *, type: str, reason: str, message: str = '') -> None:
    """Post a k8s-event about the object(s), in the background."""
    for obj in _iter_objs(objs):
        enqueue(ref=build_object_reference(obj), type=type, reason=reason, message=message)


def info(objs: Any, *, reason: str, message: str = '') -> None:
    """Post a ``Normal`` k8s-event about the object(s)."""
    event(objs, type='Normal', reason=reason, message=message)


def warn(objs: Any, *, reason: str, message: str = '') -> None:
    """Post a ``Warning`` k8s-event about the object(s)."""
    event(objs, type='Warning', reason=reason, message=message)


def exception(objs: Any, *, reason: str = '', message: str = '', exc: BaseException | None = None) -> None:
    """Post an ``Error`` k8s-event about the object(s), with the current (or given) exception's text."""
    if exc is None:
        exc = sys.exc_info()[1]
    exc_text = f"{exc}" if exc is not None else ''
    full_message = f"{message} {exc_text}".strip() if message else exc_text
    event(objs, type='Error', reason=reason, message=full_message)


class K8sPoster(logging.Handler):
    """A logging handler that queues the qualifying per-object messages as k8s-events."""

    def filter(self, record: logging.LogRecord) -> bool:
        return loggers.is_postable(record) and super().filter(record)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            queue = event_queue_var.get()
        except LookupError:
            return  # not in an operator: nowhere to post to.
        try:
            level = record.levelno
            type_ = 'Error' if level >= logging.ERROR else 'Warning' if level >= logging.WARNING else 'Normal'
            ref: ObjectReference = getattr(record, 'k8s_ref')  # noqa: B009
            queue.put(K8sEvent(ref=ref, type=type_, reason='Logging', message=self.format(record)))
        except Exception:
            self.handleError(record)


_poster_lock = threading.Lock()


def install_k8s_poster(settings: OperatorSettings | None = None) -> None:
    """Add the posting handler to the objects' logger, once per process (idempotent).

    Posting must not depend on how the application configured its logging: if the objects' logger
    would drop the records of the posting level (e.g. Python's default WARNING when nothing was
    configured, as in an embedded ``kopf.operator()``), it is lowered to that level.
    """
    with _poster_lock:
        target = loggers.object_logger
        if not any(isinstance(handler, K8sPoster) for handler in target.handlers):
            handler = K8sPoster()
            handler.setFormatter(logging.Formatter('%(message)s'))
            target.addHandler(handler)
        if settings is not None and settings.posting.enabled and target.getEffectiveLevel() > settings.posting.level:
            target.setLevel(settings.posting.level)


async def poster(
        *,
        event_queue: EventQueue,
        settings: OperatorSettings,
        vault: Vault | None = None,
) -> None:
    """Post the queued events one by one, forever (until cancelled); never fail on posting errors."""
    install_k8s_poster(settings)
    while True:
        posted = await event_queue.queue.get()
        await events.post_event(ref=posted.ref, type=posted.type, reason=posted.reason,
                                message=posted.message, settings=settings, vault=vault)
