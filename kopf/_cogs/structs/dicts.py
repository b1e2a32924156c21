"""
Field paths and nested-dict helpers.

Kubernetes objects are deeply nested JSON-like dicts. Handlers and settings
address their parts with field paths: either dotted strings (``'spec.field'``)
or tuples/lists of keys (``('spec', 'field')``). This module parses such paths
and resolves, ensures, removes and copies the values they point to; it also
provides read-only "views" that follow a path lazily, so that they always show
the latest state of the underlying dict, even if it is replaced as a whole.
"""

import copy
import enum
import functools
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping
from typing import Any, Generic, TypeVar, cast, overload

FieldPath = tuple[str, ...]
FieldSpec = None | str | FieldPath | list[str]

_K = TypeVar("_K")
_V = TypeVar("_V")
_T = TypeVar("_T")


class _UNSET(enum.Enum):
    token = enum.auto()


def parse_field(field: FieldSpec) -> FieldPath:
    """
    Convert any supported form of a field path into a tuple of keys.

    ``None`` and an empty string mean the root (an empty tuple).
    """
    if field is None or field == "":
        return ()
    elif type(field) is str:  # the usual case: parsed once per distinct path (asked on every event)
        return _parse_dotted(field)
    elif isinstance(field, str):
        return tuple(field.split("."))
    elif type(field) is tuple:  # the framework's own paths: the same few, checked once each
        try:
            return _checked_tuple(field)
        except TypeError:  # unhashable keys (not strings either): refused below
            return _checked(field)
    elif isinstance(field, (list, tuple)):
        return _checked(field)
    else:
        raise ValueError(f"Field must be either a str, or a list/tuple. Got {field!r}")


@functools.lru_cache(maxsize=1024)
def _parse_dotted(field: str) -> FieldPath:
    return tuple(field.split("."))


@functools.lru_cache(maxsize=1024)
def _checked_tuple(field: FieldPath) -> FieldPath:
    return _checked(field)


def _checked(field: list[str] | FieldPath) -> FieldPath:
    if not all(isinstance(key, str) for key in field):
        raise ValueError(f"Field path keys must be strings: {field!r}")
    return tuple(field)


def render_field(field: FieldSpec) -> str:
    """Render a field path as a dotted string (e.g. for handler ids and logs)."""
    return ".".join(parse_field(field))


@overload
def resolve(d: Mapping[Any, Any] | None, field: FieldSpec) -> Any: ...


@overload
def resolve(d: Mapping[Any, Any] | None, field: FieldSpec, default: _T, *, assume_empty: bool = False) -> Any | _T: ...


def resolve(
    d: Mapping[Any, Any] | None,
    field: FieldSpec,
    default: Any = _UNSET.token,
    *,
    assume_empty: bool = False,
) -> Any:
    """
    Get a value at the field path, or the default if any part is missing.

    Without a default, missing keys raise :class:`KeyError`, and non-mappings
    in the middle of the path raise :class:`TypeError`. With ``assume_empty``,
    a missing value resolves to an empty dict (useful for views).
    """
    return _resolve_path(d, parse_field(field), default, assume_empty=assume_empty)


def _resolve_path(d: Mapping[Any, Any] | None, path: FieldPath, default: Any, *, assume_empty: bool) -> Any:
    """:func:`resolve` with the path already parsed (for the callers that keep it parsed, e.g. views)."""
    result: Any = unwrap(d) if path else d  # a view: its content once, not resolved again for every key
    for key in path:
        if (type(result) is dict or isinstance(result, Mapping)) and key in result:  # dicts: no slower ABC check
            result = result[key]
        elif assume_empty:
            return {}
        elif default is not _UNSET.token:
            return default
        elif isinstance(result, Mapping) or result is None:
            raise KeyError(key)
        else:
            raise TypeError(f"The structure is not a mapping at {key!r} in {path!r}.")
    if result is None and assume_empty:
        return {}
    return result


def unwrap(d: _T) -> _T:
    """The current content of a view (e.g. the raw object behind a body), or the value itself if not a view."""
    if type(d) is dict or d is None or not isinstance(d, MappingView):
        return d
    return cast(_T, d._resolved())


def ensure(d: MutableMapping[Any, Any], field: FieldSpec, value: Any) -> None:
    """Set the value at the field path, creating the intermediate dicts if absent."""
    path = parse_field(field)
    if not path:
        raise ValueError("Cannot ensure a value at the root of a dict.")
    parent: Any = d
    for key in path[:-1]:
        child = parent.get(key) if isinstance(parent, Mapping) else None
        if child is None:
            child = parent[key] = {}
        elif not isinstance(child, MutableMapping):
            raise TypeError(f"The structure is not a mutable mapping at {key!r} in {path!r}.")
        parent = child
    parent[path[-1]] = value


def remove(d: MutableMapping[Any, Any], field: FieldSpec, *, prune: bool = False) -> None:
    """
    Remove the value at the field path, if it is there; do nothing if it is not.

    With ``prune``, the parent dicts that become empty are removed too, so that
    the structure does not keep meaningless empty stanzas (``{'status': {}}``).
    """
    path = parse_field(field)
    if not path:
        raise ValueError("Cannot remove the root of a dict.")
    parents: list[MutableMapping[Any, Any]] = []
    parent: Any = d
    for key in path[:-1]:
        if not isinstance(parent, MutableMapping) or not isinstance(parent.get(key), MutableMapping):
            return
        parents.append(parent)
        parent = parent[key]
    if not isinstance(parent, MutableMapping) or path[-1] not in parent:
        return
    del parent[path[-1]]
    if prune:
        for ancestor, key in reversed(list(zip(parents, path[:-1], strict=True))):
            if ancestor[key]:
                break
            del ancestor[key]


def deepcopy_json(value: _T) -> _T:
    """
    A deep copy of JSON-like data: dicts, lists and scalars; anything else goes to :func:`copy.deepcopy`.

    Several times faster than :func:`copy.deepcopy` for the decoded objects (copied on every event for the
    change detection). Unlike it, the same sub-structure met twice is copied twice: decoded JSON has none.
    """
    kind = type(value)
    if kind is dict:
        return cast(_T, {key: deepcopy_json(val) for key, val in cast(dict[Any, Any], value).items()})
    if kind is list:
        return cast(_T, [deepcopy_json(val) for val in cast(list[Any], value)])
    if kind is str or kind is int or kind is float or kind is bool or value is None:
        return value
    return copy.deepcopy(value)


def cherrypick(
    src: Mapping[Any, Any],
    dst: MutableMapping[Any, Any],
    fields: Iterable[FieldSpec] | None,
    *,
    picker: Callable[[Any], Any] = deepcopy_json,
) -> None:
    """Copy the existing values of the specified fields from one dict to another."""
    missing = object()
    for field in fields or []:
        path = parse_field(field)
        value = resolve(src, path, missing)
        if value is not missing:
            ensure(dst, path, picker(value))


def walk(
    objs: MutableMapping[Any, Any] | Iterable[MutableMapping[Any, Any]],
    *,
    nested: Iterable[FieldSpec] | str | None = None,
) -> Iterator[MutableMapping[Any, Any]]:
    """
    Iterate over one or several mappings and over their nested sub-mappings.

    A single mapping is yielded as is; any other iterable is iterated. For each
    object, the sub-objects at the ``nested`` paths are yielded too, but only if
    they exist (absent nested structures are ignored, not created).
    """
    nested_paths = (
        [parse_field(nested)] if isinstance(nested, str) else [parse_field(field) for field in (nested or [])]
    )
    items: Iterable[Any] = [objs] if isinstance(objs, Mapping) else cast(Iterable[Any], objs)
    for obj in items:
        yield obj
        for path in nested_paths:
            sub = resolve(obj, path, None)
            if isinstance(sub, MutableMapping):
                yield sub


class MappingView(Mapping[_K, _V], Generic[_K, _V]):
    """
    A read-only mapping that follows a field path in a source mapping lazily.

    Nothing is cached: every access resolves the path again, so the view always
    shows the current content of the source, and is empty when the path is absent.
    """

    def __init__(self, __src: Mapping[Any, Any], __path: FieldSpec = None) -> None:
        super().__init__()
        self._src = __src
        self._path = parse_field(__path)

    @property
    def _src(self) -> Mapping[Any, Any]:
        return self.__src

    @_src.setter
    def _src(self, src: Mapping[Any, Any]) -> None:
        # Checked once here, not on every read (an ABC's isinstance is slow, and views are read a lot).
        self.__src = src
        self.__src_view = src if type(src) is not dict and isinstance(src, MappingView) else None

    def __repr__(self) -> str:
        return repr(dict(self))

    def __len__(self) -> int:
        return len(self._resolved())

    def __iter__(self) -> Iterator[_K]:
        return iter(self._resolved())

    def __getitem__(self, item: _K) -> _V:
        return self._resolved()[item]

    # The same as Mapping's, but with one resolution of the path per call: views are read a lot.
    def __contains__(self, key: object) -> bool:
        return key in self._resolved()

    def get(self, key: _K, default: Any = None) -> Any:
        resolved = self._resolved()
        return resolved.get(key, default) if type(resolved) is dict else Mapping.get(resolved, key, default)

    def _resolved(self) -> Mapping[_K, _V]:
        # A view of a view (e.g. the metadata of a body): start from the source's own resolved mapping.
        view = self.__src_view
        base = self.__src if view is None else view._resolved()
        path = self._path
        if len(path) == 1:  # the most usual case (e.g. the metadata of a body, the labels of the metadata)
            value = base.get(path[0], {}) if type(base) is dict else _resolve_path(base, path, {}, assume_empty=True)
        elif not path:  # the root (e.g. the one that a body shares with its stanzas' views)
            value = base
        else:
            value = _resolve_path(base, path, {}, assume_empty=True)  # parsed once: views are read a lot
        return value if type(value) is dict or isinstance(value, Mapping) else {}


class MutableMappingView(MappingView[_K, _V], MutableMapping[_K, _V], Generic[_K, _V]):
    """
    A mapping view that can also be written to.

    Writes go to the source mapping at the view's path; the intermediate dicts
    are created on the first write, not on reading (reading does not change the source).
    """

    def __init__(self, __src: MutableMapping[Any, Any], __path: FieldSpec = None) -> None:
        super().__init__(__src, __path)
        self._mutable_src = __src

    def __setitem__(self, item: _K, value: _V) -> None:
        ensure(self._mutable_src, (*self._path, cast(str, item)), value)

    def __delitem__(self, item: _K) -> None:
        target = resolve(self._mutable_src, self._path, None)
        if not isinstance(target, MutableMapping):
            raise KeyError(item)
        del target[item]


class ReplaceableMappingView(MappingView[_K, _V], Generic[_K, _V]):
    """
    A mapping view whose whole source can be replaced in place.

    The framework keeps one view per object for the object's lifetime, and replaces
    the underlying content on every new event from the API. All other views that
    were derived from this one (e.g. spec, status) see the new content at once.
    """

    def _replace_from(self, __src: "ReplaceableMappingView[_K, _V]") -> None:
        self._replace_with(__src._src)

    def _replace_with(self, __src: Mapping[Any, Any]) -> None:
        self._src = __src
