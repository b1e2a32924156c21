"""
The types of the user-provided callables: handlers of every kind and filter callbacks.

All handlers accept keyword arguments only (with ``**kwargs`` for forward compatibility),
so their types are loose: any callable that returns a value or a coroutine of it.
"""

from collections.abc import Callable, Coroutine
from typing import Any

# What handlers return: a result for the status, or a coroutine of it for async handlers.
HandlerResult = object | None | Coroutine[None, None, object | None]

# A generic handler of any kind (used in the decorators' signatures, as documented).
HandlerFn = Callable[..., HandlerResult]

ActivityFn = Callable[..., HandlerResult]
WatchingFn = Callable[..., HandlerResult]
ChangingFn = Callable[..., HandlerResult]
IndexingFn = Callable[..., HandlerResult]
DaemonFn = Callable[..., HandlerResult]
TimerFn = Callable[..., HandlerResult]
SpawningFn = DaemonFn | TimerFn

# Admission handlers return nothing: they modify the patch or raise an admission error.
WebhookHandlerFn = Callable[..., Coroutine[None, None, None] | None]

# Whole-body filters: `when=` — called with the same kwargs as the handlers.
WhenFilterFn = Callable[..., bool]

# Per-value filters: called with one positional value plus the handlers' kwargs.
MetaFilterFn = Callable[..., bool]

# A decorator as returned by `@kopf.on.…(…)`: it registers a function and returns it as is.
Decorator = Callable[[HandlerFn], HandlerFn]
WebhookDecorator = Callable[[WebhookHandlerFn], WebhookHandlerFn]

# Anything else that the callbacks might be (kept for loose internal signatures).
AnyCallable = Callable[..., Any]
