"""
Identifiers of handlers.

A handler id names a handler in the persisted progress (annotations, status)
and in the results stored in the status, so it must be stable across operator
restarts: by default, it is the function's name (for methods, with their class: ``MyCls.fn``, as the
published framework names them, so that same-named methods of different classes do not collide);
field handlers add the field (``fn/spec.field``); sub-handlers are prefixed with their parent
(``parent/child``).
"""

import functools
from collections.abc import Callable
from typing import Any, NewType

from kopf._cogs.structs import dicts

HandlerId = NewType("HandlerId", str)

SUBHANDLER_SEPARATOR = "/"


def get_callable_id(fn: Callable[..., Any] | None) -> str:
    """
    Name a callable in a way that is stable across restarts.

    Partials are named after their underlying functions; lambdas and other
    nameless callables get their source location, as they have no better name.
    Methods (and functions of classes) get their qualified name, ``MyCls.fn``; the functions
    nested in other functions get it from the innermost function on (``fn``, or ``MyCls.fn``
    for a class defined in a function): ``<locals>`` does not fit into the annotations' keys.
    """
    while isinstance(fn, functools.partial):
        fn = fn.func
    if fn is None:
        raise ValueError("Cannot build an id for a missing callable.")
    name = getattr(fn, "__name__", None)
    if name is None:
        name = type(fn).__name__
    if name == "<lambda>":
        code = getattr(fn, "__code__", None)
        if code is not None:
            return f"lambda:{code.co_filename}:{code.co_firstlineno}"
    qualname = getattr(fn, "__qualname__", None)
    if isinstance(qualname, str) and qualname.endswith(f".{name}"):
        return qualname.rsplit("<locals>.", 1)[-1]
    return str(name)


def build_handler_id(
    fn: Callable[..., Any] | None,
    *,
    id: str | None = None,
    field: dicts.FieldSpec = None,
    prefix: str | None = None,
) -> HandlerId:
    """
    Compose a handler id from an explicit id or the function, a field, a parent id.

    The field suffix is added only to the implicit ids: an explicit ``id=`` is
    taken as is (apart from the parent prefix), as the developer has chosen it.
    """
    if id is not None:
        real_id = id
    else:
        real_id = get_callable_id(fn)
        if field:
            real_id = f"{real_id}{SUBHANDLER_SEPARATOR}{dicts.render_field(field)}"
    if prefix:
        real_id = f"{prefix}{SUBHANDLER_SEPARATOR}{real_id}"
    return HandlerId(real_id)


# Namespaces are plain strings in the API, but a distinct type in the framework's
# signatures helps to tell them apart from names and other strings.
NamespaceName = NewType("NamespaceName", str)
