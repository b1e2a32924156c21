"""
Whether a declared handler is applicable to an object in its current state or transition.

Pure functions: no I/O, no state; the kwargs for the filter callbacks are provided
by the caller (the same kwargs that the handler itself would get).
"""

from collections.abc import Mapping
from typing import Any

from kopf._core.intents import filters
from kopf._core.intents.handlers import ChangingHandler, ResourceHandler


def match(
    handler: ResourceHandler,
    *,
    body: Mapping[str, Any],
    old: Mapping[str, Any] | None = None,
    new: Mapping[str, Any] | None = None,
    kwargs: Mapping[str, Any] | None = None,
) -> bool:
    """
    Check all the filters of a handler, cheapest first, callbacks last.

    For update & field handlers (change-sensitive), the ``field=``/``value=``/``old=``/``new=``
    filters are checked against the old→new transition; for all other handlers — against
    the body as it is now. Labels, annotations, and ``when=`` always check the current body.
    """
    kwargs = {} if kwargs is None else kwargs
    return (
        filters.match_labels(handler.labels, body, kwargs)
        and filters.match_annotations(handler.annotations, body, kwargs)
        and _match_fields(handler, body=body, old=old, new=new, kwargs=kwargs)
        and filters.match_when(handler.when, kwargs)
    )


def prematch(
    handler: ResourceHandler,
    *,
    body: Mapping[str, Any],
    kwargs: Mapping[str, Any] | None = None,
) -> bool:
    """
    Check only the state-related filters, ignoring the change-related ones.

    Used to decide whether an object is "in scope" of the handler at all (e.g. for finalizers),
    regardless of which change happens to it right now.
    """
    kwargs = {} if kwargs is None else kwargs
    return (
        filters.match_labels(handler.labels, body, kwargs)
        and filters.match_annotations(handler.annotations, body, kwargs)
        and (handler.change_sensitive or filters.match_field_state(handler.field, handler.value, body, kwargs))
        and filters.match_when(handler.when, kwargs)
    )


def _match_fields(
    handler: ResourceHandler,
    *,
    body: Mapping[str, Any],
    old: Mapping[str, Any] | None,
    new: Mapping[str, Any] | None,
    kwargs: Mapping[str, Any],
) -> bool:
    if isinstance(handler, ChangingHandler) and handler.change_sensitive:
        return filters.match_field_change(
            handler.field, handler.value, handler.old, handler.new, old, new if new is not None else body, kwargs
        )
    else:
        return filters.match_field_state(handler.field, handler.value, body, kwargs)
