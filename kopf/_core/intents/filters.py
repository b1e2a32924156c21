"""
Filtering criteria of the handlers and the pure checks of values against them.

A criterion is either a literal value (compared for equality), a presence marker
(``kopf.PRESENT``/``kopf.ABSENT``), or a callback that gets the value positionally
plus the same kwargs as the handler. ``None`` means "not specified" (always matches).
The callback helpers (``not_``, ``all_``, ``any_``, ``none_``) combine callbacks
of either kind — whole-body ``when=`` callbacks or per-value callbacks — since they
pass all positional and keyword arguments through.
"""

import enum
import warnings
from collections.abc import Callable, Collection, Mapping
from typing import Any, TypeVar, cast

from kopf._cogs.structs import dicts
from kopf._core.intents.callbacks import MetaFilterFn, WhenFilterFn


class MetaFilterToken(enum.Enum):
    """Markers for the presence or absence of a value (labels, annotations, fields)."""

    PRESENT = enum.auto()
    ABSENT = enum.auto()

    def __repr__(self) -> str:
        return f"kopf.{self.name}"


PRESENT = MetaFilterToken.PRESENT
ABSENT = MetaFilterToken.ABSENT

# A criterion for one value: a literal, a marker, or a per-value callback (or None: unspecified).
ValueFilter = Any | MetaFilterToken | MetaFilterFn | None

# Criteria for labels/annotations by their keys.
MetaFilter = Mapping[str, str | MetaFilterToken | MetaFilterFn]

_FnT = TypeVar("_FnT", bound=Callable[..., bool])


def not_(fn: _FnT) -> _FnT:
    """A callback that passes when the wrapped one fails."""

    def not_fn(*args: Any, **kwargs: Any) -> bool:
        return not fn(*args, **kwargs)

    return cast(_FnT, not_fn)


def all_(fns: Collection[_FnT]) -> _FnT:
    """A callback that passes when all of the wrapped ones pass (short-circuiting)."""

    def all_fn(*args: Any, **kwargs: Any) -> bool:
        return all(fn(*args, **kwargs) for fn in fns)

    return cast(_FnT, all_fn)


def any_(fns: Collection[_FnT]) -> _FnT:
    """A callback that passes when at least one of the wrapped ones passes (short-circuiting)."""

    def any_fn(*args: Any, **kwargs: Any) -> bool:
        return any(fn(*args, **kwargs) for fn in fns)

    return cast(_FnT, any_fn)


def none_(fns: Collection[_FnT]) -> _FnT:
    """A callback that passes when none of the wrapped ones pass (short-circuiting)."""

    def none_fn(*args: Any, **kwargs: Any) -> bool:
        return not any(fn(*args, **kwargs) for fn in fns)

    return cast(_FnT, none_fn)


def normalize_meta_filter(meta_filter: Mapping[str, Any] | None, *, what: str) -> MetaFilter | None:
    """
    Validate the labels/annotations criteria at registration time.

    ``None`` as a value meant "present" in the earliest versions of the framework;
    it is still accepted, but with a deprecation warning towards ``kopf.PRESENT``.
    """
    if meta_filter is None:
        return None
    if not isinstance(meta_filter, Mapping):
        raise TypeError(f"The {what} filter must be a mapping, got {meta_filter!r}.")
    normalized: dict[str, str | MetaFilterToken | MetaFilterFn] = {}
    for key, criterion in meta_filter.items():
        if criterion is None:
            warnings.warn(
                f"{what}={{{key!r}: None}} is deprecated; use kopf.PRESENT instead.", DeprecationWarning, stacklevel=4
            )
            criterion = PRESENT
        normalized[key] = criterion
    return normalized


def match_value(criterion: ValueFilter, value: Any, kwargs: Mapping[str, Any]) -> bool:
    """Check one value (``None`` if absent) against one criterion."""
    if criterion is None:
        return True
    elif criterion is PRESENT:
        return value is not None
    elif criterion is ABSENT:
        return value is None
    elif callable(criterion):
        return bool(criterion(value, **kwargs))
    else:
        return bool(value == criterion)


def match_meta(
    meta_filter: MetaFilter | None,
    values: Mapping[str, str] | None,
    kwargs: Mapping[str, Any],
) -> bool:
    """Check the labels or annotations of an object against their criteria (all must pass)."""
    if not meta_filter:
        return True
    actual = values if values is not None else {}
    return all(match_value(criterion, actual.get(key), kwargs) for key, criterion in meta_filter.items())


def match_labels(meta_filter: MetaFilter | None, body: Mapping[str, Any], kwargs: Mapping[str, Any]) -> bool:
    return match_meta(meta_filter, dicts.resolve(body, ("metadata", "labels"), None), kwargs)


def match_annotations(meta_filter: MetaFilter | None, body: Mapping[str, Any], kwargs: Mapping[str, Any]) -> bool:
    return match_meta(meta_filter, dicts.resolve(body, ("metadata", "annotations"), None), kwargs)


def match_when(when: WhenFilterFn | None, kwargs: Mapping[str, Any]) -> bool:
    """Check the whole-body callback with the handler's kwargs."""
    return when is None or bool(when(**kwargs))


def match_field_state(
    field: dicts.FieldPath | None,
    value: ValueFilter,
    body: Mapping[str, Any] | None,
    kwargs: Mapping[str, Any],
) -> bool:
    """
    Check a field of the current (and the only) state of an object.

    With a field but with no value criterion, the field must be present.
    """
    if field is None:
        return match_value(value, body, kwargs)
    actual = dicts.resolve(body, field, None)
    return match_value(PRESENT if value is None else value, actual, kwargs)


def match_field_change(
    field: dicts.FieldPath | None,
    value: ValueFilter,
    old_criterion: ValueFilter,
    new_criterion: ValueFilter,
    old: Mapping[str, Any] | None,
    new: Mapping[str, Any] | None,
    kwargs: Mapping[str, Any],
) -> bool:
    """
    Check a field in the transition from the old to the new state (for the update handlers).

    The field must be affected: changed, added, or removed (presence changes count).
    The ``value=`` criterion must fit either the old or the new value; ``old=``/``new=``
    must fit their respective sides. With no field, the whole object is the value.
    """
    old_value = dicts.resolve(old, field or (), None)
    new_value = dicts.resolve(new, field or (), None)
    if field is not None and old_value == new_value:
        return False
    if value is not None and not (match_value(value, old_value, kwargs) or match_value(value, new_value, kwargs)):
        return False
    return match_value(old_criterion, old_value, kwargs) and match_value(new_criterion, new_value, kwargs)
