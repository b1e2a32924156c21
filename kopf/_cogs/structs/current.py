"""
The object being handled in the current context (task or thread).

Some helpers for operator developers, such as the hierarchy kit, default to
"the object being processed at the moment" when no object is passed explicitly.
The framework's core sets it around each handler invocation (contextvars follow
the asyncio tasks, and are copied into the executor threads of sync handlers).
"""

import contextlib
import contextvars
from collections.abc import Iterator, Mapping
from typing import Any

from kopf._cogs.structs import bodies

current_body: contextvars.ContextVar[bodies.Body] = contextvars.ContextVar("current_body")


def get_current_body() -> bodies.Body | None:
    """The object of the handler being executed now, or ``None`` outside of handlers."""
    return current_body.get(None)


@contextlib.contextmanager
def focused_on(body: Mapping[str, Any]) -> Iterator[bodies.Body]:
    """Make the object current for the duration of the block (e.g. of a handler call)."""
    view = body if isinstance(body, bodies.Body) else bodies.Body(body)
    token = current_body.set(view)
    try:
        yield view
    finally:
        current_body.reset(token)
