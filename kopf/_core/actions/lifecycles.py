"""
Lifecycles: which of the due handlers are executed in one handling cycle, and in which order.

A lifecycle is a callable that gets the handlers that are due now (not finished,
not delayed) as ``handlers=``, their states as ``state=`` (a mapping of handler ids
to the handlers' states with ``.retries``), and the cause's kwargs (``body``, etc.),
and returns the handlers to execute now, in the order of execution.
The handlers that are not selected remain for the next cycles: the framework
re-triggers the handling as long as there are unfinished handlers.

The default lifecycle is :func:`asap`: one handler per cycle, so that every
handler's progress and result is persisted before the next handler starts.
"""

import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, TypeVar


class _HasId(Protocol):
    @property
    def id(self) -> str: ...


class _HasRetries(Protocol):
    @property
    def retries(self) -> int: ...


_HandlerT = TypeVar("_HandlerT", bound=_HasId)

#: The signature of the lifecycles: ``(*, handlers, state, **kwargs) -> handlers``.
LifeCycleFn = Callable[..., Sequence[Any]]


def all_at_once(handlers: Sequence[_HandlerT], **_: Any) -> Sequence[_HandlerT]:
    """Execute all the due handlers in one cycle, in the order of declaration."""
    return list(handlers)


def one_by_one(handlers: Sequence[_HandlerT], **_: Any) -> Sequence[_HandlerT]:
    """Execute one handler per cycle, in the order of declaration."""
    return list(handlers[:1])


def randomized(handlers: Sequence[_HandlerT], **_: Any) -> Sequence[_HandlerT]:
    """Execute one random handler per cycle."""
    return [random.choice(handlers)] if handlers else []  # not for security.


def shuffled(handlers: Sequence[_HandlerT], **_: Any) -> Sequence[_HandlerT]:
    """Execute all the due handlers in one cycle, in a random order."""
    return random.sample(list(handlers), k=len(handlers))


def asap(
    handlers: Sequence[_HandlerT],
    *,
    state: Mapping[Any, _HasRetries] | None = None,
    **_: Any,
) -> Sequence[_HandlerT]:
    """
    Execute one handler per cycle: the one with the fewest retries, then in the order of declaration.

    So the handlers that fail and are retried do not block the others that are not tried yet.
    """

    def retries(handler: _HandlerT) -> int:
        handler_state = state.get(handler.id) if state is not None else None
        return handler_state.retries if handler_state is not None else 0

    return sorted(handlers, key=retries)[:1]  # sorting is stable: the declaration order for ties.


_default_lifecycle: LifeCycleFn = asap


def get_default_lifecycle() -> LifeCycleFn:
    """The lifecycle used by the operator (and by the sub-handlers) unless another one is given."""
    return _default_lifecycle


def set_default_lifecycle(lifecycle: LifeCycleFn | None) -> None:
    """Set the lifecycle used unless another one is given; ``None`` resets to the default (``asap``)."""
    global _default_lifecycle
    _default_lifecycle = lifecycle if lifecycle is not None else asap
