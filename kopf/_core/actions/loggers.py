"""
Per-object loggers: the ``logger`` kwarg of the resource handlers.

The records of these loggers go to the ``kopf.objects`` logger and carry:

* ``k8s_ref`` — the object's reference (apiVersion, kind, name, uid, namespace),
  a snapshot taken when the logger is created (so that later changes of the body,
  or a background posting of the records, never see a different object);
  the formatters (``kopf._cogs.helpers.loggers``) render it as a ``[namespace/name]``
  prefix and/or put it under the refkey of JSON records;
* ``k8s_skip`` — whether the record must not be posted as a Kubernetes ``Event``;
* ``settings`` — the operator's settings, to decide on the posting (``settings.posting``).

The posting is independent of how the logging is configured (levels, handlers): the adapter hands
the qualifying messages to the operator's event sink (:data:`event_sink_var`, set by the operator to
the posting engine's queue) before and regardless of the logging itself.
:func:`is_postable` is the criterion of which records/levels are to be posted.
"""

import contextvars
import copy
import logging
import sys
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any, TypeVar, cast

from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.structs.bodies import Body, ObjectReference, build_object_reference

__all__ = [
    "OBJECTS_LOGGER_NAME",
    "EventSink",
    "LocalObjectLogger",
    "ObjectLogger",
    "event_sink_var",
    "is_postable",
    "object_logger",
]

OBJECTS_LOGGER_NAME = "kopf.objects"

#: The logger of all object-related messages (the adapters below add the object's identity).
object_logger = logging.getLogger(OBJECTS_LOGGER_NAME)

#: Where the postable messages go: ``sink(ref, type, reason, message)``; set by the operator for its tasks.
EventSink = Callable[[ObjectReference, str, str, str], None]
event_sink_var: contextvars.ContextVar[EventSink | None] = contextvars.ContextVar("kopf_event_sink", default=None)

_LoggerT = TypeVar("_LoggerT", bound="ObjectLogger")


class ObjectLogger(logging.LoggerAdapter[logging.Logger]):
    """
    A logger adapter that carries the object's identity for the formatting and the posting.

    The messages of level ``settings.posting.level`` and above are also posted as
    Kubernetes events about this object (if ``settings.posting.enabled``).
    The extras given to the individual calls are kept (e.g. for the JSON logs).
    """

    def __init__(self, *, body: Body | Mapping[str, Any], settings: OperatorSettings) -> None:
        # A snapshot: the values are usually strings (immutable); anything else is copied deeply.
        ref = cast(
            ObjectReference,
            {key: val if type(val) is str else copy.deepcopy(val) for key, val in build_object_reference(body).items()},
        )
        self._setup(ref=ref, settings=settings)

    def _setup(self, *, ref: ObjectReference, settings: OperatorSettings) -> None:
        super().__init__(
            object_logger,
            dict(
                settings=settings,
                k8s_skip=False,
                k8s_ref=ref,
            ),
        )

    def _sibling(self, cls: type[_LoggerT]) -> _LoggerT:
        """A logger of another kind for the same object, with the same snapshot of its identity (not made twice)."""
        extra = self.extra or {}
        sibling = cls.__new__(cls)
        sibling._setup(ref=self.k8s_ref, settings=cast(OperatorSettings, extra["settings"]))
        return sibling

    def __repr__(self) -> str:
        ref = self.k8s_ref
        ident = f"{ref.get('namespace')}/{ref.get('name')}" if ref.get("namespace") else ref.get("name")
        return f"<{type(self).__name__} {ident!s}>"

    @property
    def k8s_ref(self) -> ObjectReference:
        extra = self.extra or {}
        return cast(ObjectReference, extra["k8s_ref"])

    def log(self, level: int, msg: object, *args: object, **kwargs: Any) -> None:
        self._post(level, msg, args, exc_info=kwargs.get("exc_info"))
        super().log(level, msg, *args, **kwargs)

    def _post(self, level: int, msg: object, args: tuple[object, ...], *, exc_info: Any = None) -> None:
        """Hand a qualifying message to the operator's event sink, whatever the logging levels are."""
        extra = self.extra or {}
        settings = extra.get("settings")
        if extra.get("k8s_skip") or not isinstance(settings, OperatorSettings):
            return
        if not settings.posting.enabled or not settings.posting.loggers or level < settings.posting.level:
            return
        sink = event_sink_var.get()
        if sink is None:
            return
        try:
            message = str(msg) % args if args else str(msg)
        except (TypeError, ValueError):
            message = f"{msg} {args}"
        traceback = _format_exc_info(exc_info)
        if traceback:  # as the published framework posts them: the message & the traceback (cut to fit)
            message = message + ("" if message.endswith("\n") else "\n") + traceback
        type_ = "Error" if level >= logging.ERROR else "Warning" if level >= logging.WARNING else "Normal"
        sink(self.k8s_ref, type_, "Logging", message)

    def process(self, msg: Any, kwargs: MutableMapping[str, Any]) -> tuple[Any, MutableMapping[str, Any]]:
        # Ours go last: a user's extra cannot break the identity of the object or the posting decisions.
        kwargs["extra"] = {**(kwargs.get("extra") or {}), **(self.extra or {})}
        return msg, kwargs


def _format_exc_info(exc_info: Any) -> str:
    """The traceback as the logging would render it for ``exc_info=`` (an exception, a tuple, or true)."""
    if not exc_info:
        return ""
    if isinstance(exc_info, BaseException):
        exc_info = (type(exc_info), exc_info, exc_info.__traceback__)
    elif not isinstance(exc_info, tuple):
        exc_info = sys.exc_info()
    if exc_info[0] is None:
        return ""
    return _FORMATTER.formatException(exc_info)


_FORMATTER = logging.Formatter()


class LocalObjectLogger(ObjectLogger):
    """
    The same as :class:`ObjectLogger`, but the messages are never posted as Kubernetes events.

    Used for the framework's own reports about the handlers' outcomes, which
    would otherwise overload the cluster with too many events.
    """

    def _setup(self, *, ref: ObjectReference, settings: OperatorSettings) -> None:
        super()._setup(ref=ref, settings=settings)
        self.extra = {**(self.extra or {}), "k8s_skip": True}


def is_postable(record: logging.LogRecord) -> bool:
    """Whether the record is to be posted as a Kubernetes event, according to the object's settings."""
    settings = getattr(record, "settings", None)
    if getattr(record, "k8s_skip", True) or not isinstance(settings, OperatorSettings):
        return False
    if not isinstance(getattr(record, "k8s_ref", None), Mapping):
        return False
    return settings.posting.enabled and record.levelno >= settings.posting.level
