"""Values for an OpenAPI v3 schema of a CRD: edge values first, and misoperations.

Every value drawn is valid for the schema as the simulated apiserver checks it (types, enums, formats,
patterns, minimum/maximum, lengths, item & property counts, required fields, ``nullable``,
``x-kubernetes-int-or-string``, ``allOf``/``anyOf``/``oneOf``/``not``, ``additionalProperties``,
``x-kubernetes-list-type`` sets and maps, embedded resources). The edge values come first, as the
simplest to shrink to and drawn often: absent optional fields, empty strings & lists, the bounds
that the schema declares, the ends of an enum. :func:`misoperations` draws values that are valid for
the schema too, but that an operator should refuse or survive (zero, negative, empty, long, oddly
spelled): what a careless user writes, and what a careless operator chokes on.

:func:`replacing` turns a value into a JSON merge patch that makes a field exactly that value,
whatever (valid) value it had before: a patch drawn without knowing the object keeps it valid.
CEL rules (``x-kubernetes-validations``) are not looked at: pass your own strategy for such fields.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from hypothesis import strategies as st

from kopf_sim.writes.schemas import validate

__all__ = ["KEYS", "from_schema", "misoperations", "replacing"]

_T = TypeVar("_T")
Schema = Mapping[str, Any]

#: Bounds of the values where the schema gives none: small enough to read, enough to vary.
MAX_ITEMS = 3
MAX_STRING = 8
INT_BOUND = 100
#: The longest string drawn as the edge of a ``maxLength`` (a longer limit is an edge at this length).
LONG_STRING = 256
#: The keys of maps (``additionalProperties``, unknown fields preserved): few, so that patches meet them again.
KEYS = ("a", "b", "c", "d")
_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789-"
_TEXT = st.text(alphabet=_ALPHABET, max_size=MAX_STRING)
_SCALARS = st.one_of(st.booleans(), st.integers(-INT_BOUND, INT_BOUND), _TEXT)

#: Valid values of the formats that the apiserver checks (and a few it does not), the simplest first.
FORMATS: Mapping[str, Sequence[str]] = {
    "date-time": ("2026-01-01T00:00:00Z", "2026-06-30T12:30:00Z", "1970-01-01T00:00:00Z"),
    "datetime": ("2026-01-01T00:00:00Z", "2026-06-30T12:30:00Z"),
    "date": ("2026-01-01", "2026-06-30", "1970-01-01"),
    "byte": ("", "aGVsbG8=", "AA=="),
    "uri": ("http://example.com/", "https://example.com/a"),
    "hostname": ("example.com", "a.example.com", "localhost"),
    "email": ("a@example.com",),
    "uuid": ("00000000-0000-4000-8000-000000000000", "ffffffff-ffff-4fff-bfff-ffffffffffff"),
    "duration": ("1s", "1m", "1h", "0s"),
    "ipv4": ("10.0.0.1", "127.0.0.1", "0.0.0.0"),
    "ipv6": ("::1", "fd00::1"),
    "cidr": ("10.0.0.0/8", "192.168.0.0/24", "fd00::/64"),
    "mac": ("00:00:00:00:00:00", "02:42:ac:11:00:02"),
    "int-or-string": ("1", "50%"),
}
#: Valid where the schema says no more, but often mishandled: empty, blank, upper case, path-like, dotted,
#: non-ASCII, longer than a DNS label (63) -- e.g. when used as a child's name.
HAZARDOUS_STRINGS = ("", " ", "UPPER", "a/b", "a.b", "ünï", "x" * 64, "-", "0")
#: Valid for an int-or-string (whose strings are usually numbers or percentages), but not a number.
HAZARDOUS_INT_STRINGS = ("", "abc", "-1%", "1000%")
#: Valid where the schema gives no bounds, but often mishandled: zero and negative counts.
HAZARDOUS_INTEGERS = (0, -1)


@dataclasses.dataclass(frozen=True)
class _Draw:
    """How to draw: ``misuse``: the leaves from the misoperations; ``nulls``: null where ``nullable``."""

    misuse: bool = False
    nulls: bool = True


def from_schema(schema: Schema) -> st.SearchStrategy[Any]:
    """Values valid for an OpenAPI v3 schema (as of CRDs: structural, with the ``x-kubernetes-*`` extensions).

    The edge values first: the simplest to shrink to, and drawn often.
    """
    return _strategy(schema, _Draw())


def misoperations(schema: Schema) -> st.SearchStrategy[Any]:
    """Values valid for the schema that an operator should refuse or survive: its leaves zero, negative,
    empty, blank, upper-case, dotted or too long for a name where the schema does not forbid it, at the
    schema's bounds where it declares them; lists with duplicates; objects with only their required fields.
    """
    return _strategy(schema, _Draw(misuse=True))


def patch_values(schema: Schema, *, misuse: bool = False) -> st.SearchStrategy[Any]:
    """Values for a merge patch (see :func:`replacing`): never null (a null in a patch removes the field)."""
    return _strategy(schema, _Draw(misuse=misuse, nulls=False)).map(lambda value: replacing(schema, value))


def replacing(schema: Schema, value: Any) -> Any:
    """The JSON merge patch of a field that makes it exactly ``value``, whatever valid value it had.

    A merge patch merges objects key by key: the keys that the field may have had and ``value`` has not
    (its schema's properties; the map keys that the strategies draw) are set to null, i.e. removed.
    """
    if not isinstance(value, dict):
        return value
    patch = {key: replacing(_sub_schema(schema, key), item) for key, item in value.items()}
    for key in _possible_keys(schema):
        patch.setdefault(key, None)
    return patch


def _sub_schema(schema: Schema, key: str) -> Schema:
    for node in _nodes(schema):
        properties = node.get("properties") or {}
        if key in properties:
            return properties[key]  # type: ignore[no-any-return]
        if isinstance(node.get("additionalProperties"), Mapping):
            return node["additionalProperties"]  # type: ignore[no-any-return]
    return {}


def _possible_keys(schema: Schema) -> list[str]:
    keys: dict[str, None] = {}
    for node in _nodes(schema):
        keys.update(dict.fromkeys(node.get("properties") or {}))
        extra = node.get("additionalProperties")
        preserved = node.get("x-kubernetes-preserve-unknown-fields") and not node.get("properties")
        if isinstance(extra, Mapping) or extra is True or preserved:
            keys.update(dict.fromkeys(KEYS))  # the map keys that the strategies draw
    return list(keys)


def _nodes(schema: Schema) -> list[Schema]:
    """The schema and the branches of its junctors (where properties may be declared too), recursively."""
    found = [schema]
    for key in ("allOf", "anyOf", "oneOf"):
        for branch in schema.get(key) or ():
            if isinstance(branch, Mapping):
                found.extend(_nodes(branch))
    return found


# -- the strategies ---------------------------------------------------------------------------------


def _strategy(schema: Schema, draw: _Draw) -> st.SearchStrategy[Any]:
    strategy = _constrained(schema, draw)
    if schema.get("nullable") and draw.nulls:
        strategy = st.one_of(st.none(), strategy)  # null first: as good as absent, the simplest
    return strategy


#: The keywords whose constraints span alternatives or a whole object: values drawn for them are checked.
_CHECKED = ("allOf", "anyOf", "oneOf", "not", "minProperties", "maxProperties")


def _constrained(schema: Schema, draw: _Draw) -> st.SearchStrategy[Any]:
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        ends = [enum[0], enum[-1]]
        return st.one_of(st.sampled_from(ends), st.sampled_from(enum))
    if schema.get("x-kubernetes-int-or-string"):
        return _int_or_string(schema, draw)
    alternatives = _alternatives(schema)
    strategy = st.one_of(*(_typed(alternative, draw) for alternative in alternatives))
    if any(key in schema for key in _CHECKED):
        strategy = strategy.filter(_valid_for(schema))
    return strategy


def _valid_for(schema: Schema) -> Callable[[Any], bool]:
    """Whether a value is valid for the schema, as the simulated apiserver validates it."""

    def valid(value: Any) -> bool:
        return not validate(value, schema)

    return valid


def _alternatives(schema: Schema) -> list[Schema]:
    """The schema with its ``allOf`` merged in, once per branch of its ``anyOf``/``oneOf`` (and per both)."""
    node: Schema = {key: value for key, value in schema.items() if key not in ("allOf", "anyOf", "oneOf")}
    for branch in schema.get("allOf") or ():
        node = _merged(node, branch)
    options = [node]
    for key in ("anyOf", "oneOf"):
        branches = [branch for branch in schema.get(key) or () if isinstance(branch, Mapping)]
        if branches:
            options = [_merged(option, branch) for option in options for branch in branches]
    return options


_LOWER_BOUNDS = ("minimum", "minLength", "minItems", "minProperties")
_UPPER_BOUNDS = ("maximum", "maxLength", "maxItems", "maxProperties")


def _merged(base: Schema, extra: Schema) -> Schema:
    """A schema whose values are valid for both (as far as drawing goes; what is left, the filter checks)."""
    result = dict(base)
    for key, value in extra.items():
        if key not in result:
            result[key] = value
        elif key == "properties" and isinstance(value, Mapping):
            mine = result[key]
            result[key] = {**mine, **{name: _merged(mine.get(name) or {}, sub) for name, sub in value.items()}}
        elif key == "required":
            result[key] = list(dict.fromkeys([*result[key], *value]))
        elif key in _LOWER_BOUNDS:
            result[key] = max(result[key], value)
        elif key in _UPPER_BOUNDS:
            result[key] = min(result[key], value)
        elif key == "enum":
            result[key] = [item for item in result[key] if item in value] or result[key]
        elif key in ("items", "additionalProperties") and isinstance(value, Mapping):
            result[key] = _merged(result[key] if isinstance(result[key], Mapping) else {}, value)
        elif key in ("allOf", "anyOf", "oneOf"):
            result[key] = [*result[key], *value] if key == "allOf" else result[key]
        else:
            result[key] = value
    return result


def _typed(schema: Schema, draw: _Draw) -> st.SearchStrategy[Any]:
    kind = schema.get("type")
    if kind == "object" or (kind is None and ("properties" in schema or "additionalProperties" in schema)):
        return _objects(schema, draw)
    if kind == "array":
        return _arrays(schema, draw)
    if kind == "string":
        return _strings(schema, draw)
    if kind == "integer":
        return _integers(schema, draw)
    if kind == "number":
        return _numbers(schema, draw)
    if kind == "boolean":
        return st.sampled_from([False, True])
    return _SCALARS  # no type: unknown fields preserved, or anything


def _edges_first(
    edges: Sequence[_T], general: st.SearchStrategy[_T], draw: _Draw | None = None
) -> st.SearchStrategy[_T]:
    """The edge values first (drawn half the time); for misoperations, only they (when there are any)."""
    unique = list(dict.fromkeys(edges))
    if not unique:
        return general
    if draw is not None and draw.misuse:
        return st.sampled_from(unique)
    return st.one_of(st.sampled_from(unique), general)


def _objects(schema: Schema, draw: _Draw) -> st.SearchStrategy[dict[str, Any]]:
    properties: dict[str, Any] = dict(schema.get("properties") or {})
    required = [str(name) for name in schema.get("required") or ()]
    if schema.get("x-kubernetes-embedded-resource"):
        properties = {**_EMBEDDED, **properties}
        required = list(dict.fromkeys([*required, "apiVersion", "kind"]))
    for name in required:
        properties.setdefault(name, {})  # required, but not declared (unknown fields preserved): any scalar
    if properties:
        needed = {name: _strategy(properties[name], draw) for name in properties if name in required}
        optional = {name: _strategy(sub, draw) for name, sub in properties.items() if name not in required}
        if not optional:
            return st.fixed_dictionaries(needed)
        return st.one_of(
            st.fixed_dictionaries(needed),  # every optional field absent: the edge, and the simplest
            st.fixed_dictionaries(needed, optional=optional),
            st.fixed_dictionaries({**needed, **optional}),  # every optional field present
        )
    low, high = _counts(schema, "minProperties", "maxProperties")
    extra = schema.get("additionalProperties")
    if isinstance(extra, Mapping):
        values = _strategy(extra, draw)
    elif extra is True or schema.get("x-kubernetes-preserve-unknown-fields"):
        values = _SCALARS
    else:
        return st.just({})
    keys = st.sampled_from(KEYS)
    low, high = min(low, len(KEYS)), min(high, len(KEYS))
    return st.one_of(
        st.dictionaries(keys, values, min_size=low, max_size=low),  # the fewest: empty, or the minimum
        st.dictionaries(keys, values, min_size=low, max_size=high),
    )


#: What an embedded resource needs whatever its schema declares: apiVersion, kind and a name.
_EMBEDDED: Mapping[str, Any] = {
    "apiVersion": {"type": "string", "enum": ["v1"]},
    "kind": {"type": "string", "enum": ["ConfigMap"]},
    "metadata": {"type": "object", "properties": {"name": {"type": "string", "enum": ["embedded"]}}},
}


def _counts(schema: Schema, low_key: str, high_key: str) -> tuple[int, int]:
    """The least and the most items to draw: the schema's bounds, at most :data:`MAX_ITEMS` beyond the least."""
    low = int(schema.get(low_key) or 0)
    declared = schema.get(high_key)
    high = max(low, MAX_ITEMS) if declared is None else min(int(declared), max(low, MAX_ITEMS))
    return low, max(low, high)


def _arrays(schema: Schema, draw: _Draw) -> st.SearchStrategy[list[Any]]:
    items: dict[str, Any] = dict(schema.get("items") or {})
    low, high = _counts(schema, "minItems", "maxItems")
    unique: Callable[[Any], Any] | None = None
    list_type = schema.get("x-kubernetes-list-type")
    if list_type == "map":
        keys = [str(key) for key in schema.get("x-kubernetes-list-map-keys") or ()]
        items["required"] = list(dict.fromkeys([*(items.get("required") or ()), *keys]))  # keys must be there
        unique = _map_key(keys)
    elif list_type == "set" or schema.get("uniqueItems"):
        unique = _json_key
    element = _strategy(items, draw)
    lists = [
        st.lists(element, min_size=low, max_size=low, unique_by=unique),  # the fewest: empty, or the minimum
        st.lists(element, min_size=low, max_size=high, unique_by=unique),
        st.lists(element, min_size=high, max_size=high, unique_by=unique),  # the most
    ]
    if draw.misuse and unique is None and low <= 2 <= high:
        lists.insert(0, element.map(lambda item: [item, item]))  # the same item twice
    return st.one_of(*lists)


def _map_key(keys: Sequence[str]) -> Callable[[Any], str]:
    """The identity of an item of a list-type map: its keys' values."""
    return lambda item: _json_key([item.get(key) for key in keys] if isinstance(item, dict) else item)


def _json_key(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _strings(schema: Schema, draw: _Draw) -> st.SearchStrategy[str]:
    low = int(schema.get("minLength") or 0)
    declared = schema.get("maxLength")
    high = None if declared is None else int(declared)

    def fits(text: str) -> bool:
        return low <= len(text) <= (high if high is not None else len(text))

    fmt = schema.get("format")
    pattern = schema.get("pattern")
    if isinstance(fmt, str) and fmt in FORMATS:
        values = [value for value in FORMATS[fmt] if fits(value)]
        if isinstance(pattern, str):
            values = [value for value in values if re.search(pattern, value)]
        if values:
            return st.sampled_from(values)
    if isinstance(pattern, str):
        return _matching(pattern).filter(fits)
    short = min(high, max(low, MAX_STRING)) if high is not None else max(low, MAX_STRING)
    general = st.text(alphabet=_ALPHABET, min_size=low, max_size=short)
    edges = ["a" * low]
    if high is not None:
        edges.append("a" * min(high, LONG_STRING))
    if draw.misuse:
        edges.extend(text for text in HAZARDOUS_STRINGS if fits(text))
    return _edges_first(edges, general, draw)


def _matching(pattern: str) -> st.SearchStrategy[str]:
    try:
        re.compile(pattern)
    except re.error as exc:
        raise ValueError(
            f"The schema's pattern {pattern!r} is not a regular expression that Python can draw strings from "
            f"({exc}); pass your own strategy for this resource's spec (specs=...)."
        ) from None
    return st.from_regex(pattern, fullmatch=True)


def _bounds(schema: Schema) -> tuple[float | None, float | None]:
    """The declared bounds, as the closed interval (exclusive bounds moved in by one, for integers)."""
    low, high = schema.get("minimum"), schema.get("maximum")
    if low is not None and schema.get("exclusiveMinimum") is True:
        low = math.floor(low) + 1 if schema.get("type") != "number" else low
    if high is not None and schema.get("exclusiveMaximum") is True:
        high = math.ceil(high) - 1 if schema.get("type") != "number" else high
    return low, high


def _integers(schema: Schema, draw: _Draw) -> st.SearchStrategy[int]:
    declared = [
        None if bound is None else int(math.ceil(bound) if i == 0 else math.floor(bound))
        for i, bound in enumerate(_bounds(schema))
    ]
    low, high = declared
    if low is None:
        low = -INT_BOUND if high is None else high - 2 * INT_BOUND
    if high is None:
        high = low + 2 * INT_BOUND
    step = schema.get("multipleOf")
    step = step if isinstance(step, int) and step > 0 else 1
    general = st.integers(math.ceil(low / step), math.floor(high / step)).map(lambda n: n * step)
    candidates = [*declared, 0, *(HAZARDOUS_INTEGERS if draw.misuse else ())]
    edges = [n for n in candidates if n is not None and low <= n <= high and n % step == 0]
    return _edges_first(edges, general, draw)


def _numbers(schema: Schema, draw: _Draw) -> st.SearchStrategy[float]:
    low, high = _bounds(schema)
    lowest = low if low is not None else (high - 2 * INT_BOUND if high is not None else -INT_BOUND)
    highest = high if high is not None else lowest + 2 * INT_BOUND
    exclusive_low = low is not None and schema.get("exclusiveMinimum") is True
    exclusive_high = high is not None and schema.get("exclusiveMaximum") is True
    # Halves: readable, and enough to tell 0.5 from 0 and 1.
    general = (
        st.integers(math.ceil(lowest * 2), math.floor(highest * 2))
        .map(lambda n: n / 2)
        .filter(lambda x: not (exclusive_low and x <= lowest) and not (exclusive_high and x >= highest))
    )
    edges = [float(x) for x in (low, high) if x is not None]
    edges = [x for x in edges if not (exclusive_low and x == low) and not (exclusive_high and x == high)]
    edges += [0.0] if lowest <= 0 <= highest else []
    edges += [-1.0] if draw.misuse and lowest <= -1 <= highest else []
    return _edges_first(edges, general, draw)


def _int_or_string(schema: Schema, draw: _Draw) -> st.SearchStrategy[int | str]:
    strings: st.SearchStrategy[str]
    if isinstance(schema.get("pattern"), str):
        strings = _strings(schema, draw)
    else:
        texts = [*FORMATS["int-or-string"], "0%", "100%", *(HAZARDOUS_INT_STRINGS if draw.misuse else ())]
        strings = st.sampled_from(texts)
    bounded = {"minimum": 0, **schema} if not draw.misuse else dict(schema)  # counts & ports: not negative
    integers = _integers({**bounded, "type": "integer"}, draw)
    return st.one_of(integers, strings).filter(_valid_for(schema))
