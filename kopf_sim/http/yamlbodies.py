"""YAML bodies turned into JSON data as the apiserver does it, event by event, with bounded cost.

The apiserver converts YAML to JSON (``sigs.k8s.io/yaml``), so only what JSON can hold comes out:
string keys (numbers and booleans as keys are printed), timestamps stay the strings they were written as,
``!!binary`` becomes the decoded text, ``!!set`` a map of nulls; infinities and NaNs are refused.

The document is built here from the parser's events, without recursion and without PyYAML's
constructor, so that three limits hold while it is read rather than after:

* depth: collections nest at most :data:`~kopf_sim.http.bodies.MAX_DEPTH` levels, aliases included;
* aliasing: an alias counts as many nodes as it expands to; a document whose nodes come mostly from
  aliases is refused as "excessive aliasing" (the rule of Go's YAML decoder), so that a few hundred bytes
  of nested aliases (a "billion laughs") cost nothing, instead of billions of nodes downstream;
* recursion: an alias to an anchor that is still open is refused.

Aliased values are shared, not copied, as PyYAML shares them: the store copies bodies before it changes them.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import re
from typing import Any

import yaml

from kopf_sim.http.bodies import MAX_DEPTH, BodyError, valid_string

_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # the parser only (libyaml if present)

# Which plain scalars are not strings: YAML 1.1 as Go's decoder reads it (no sexagesimal numbers;
# timestamps are kept as written).
_NULLS = frozenset({"", "~", "null", "Null", "NULL"})
_TRUE = frozenset({"yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"})
_FALSE = frozenset({"no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"})
_INT = re.compile(r"[-+]?(?:0b[01_]+|0o[0-7_]+|0x[0-9a-fA-F_]+|[0-9][0-9_]*)")
_FLOAT = re.compile(r"[-+]?(?:\.[0-9_]+|[0-9][0-9_]*(?:\.[0-9_]*)?)(?:[eE][-+]?[0-9]+)?")
_SPECIAL_FLOATS = frozenset(
    {".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF", ".nan", ".NaN", ".NAN"}
)
_NUMERIC_START = frozenset("0123456789+-.")
_INT64 = (-(2**63), 2**64 - 1)

_TAG = "tag:yaml.org,2002:"
_MERGE = object()  # the value of a "<<" key


def parse_yaml(raw: bytes | str) -> Any:
    """The first YAML document of a body as JSON data (None if there is none); a :class:`BodyError` if bad."""
    loader = _Loader(raw)
    try:
        return _Builder(loader).document()
    except yaml.MarkedYAMLError as exc:
        if exc.problem and "maximum nesting depth" in exc.problem:
            # libyaml >= 0.2.6 (PyYAML >= 6.0.4) refuses 1,000 levels while scanning ahead of the events:
            # deeper than ours anyway, so the same answer as when the builder counts them.
            raise BodyError(f"exceeded max depth of {MAX_DEPTH}") from None
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}: " if mark is not None else ""
        raise BodyError(f"yaml: {where}{exc.problem or exc.context}") from None
    except yaml.YAMLError as exc:
        raise BodyError(f"yaml: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None
    finally:
        loader.dispose()


def allowed_alias_ratio(nodes: int) -> float:
    """How much of a document may come from aliases: almost all of a small one, a tenth of a huge one."""
    if nodes <= 400_000:
        return 0.99
    if nodes >= 4_000_000:
        return 0.10
    return 0.99 - 0.89 * (nodes - 400_000) / 3_600_000


class _Open:
    """A collection being built: its value, where its anchor goes, and what it has counted so far."""

    __slots__ = ("anchor", "has_key", "is_map", "key", "levels", "merges", "nodes", "own_keys", "tag", "value")

    def __init__(self, value: Any, *, is_map: bool, anchor: str | None, tag: str | None) -> None:
        self.value = value
        self.is_map = is_map
        self.anchor = anchor
        self.tag = tag
        self.levels = 1  # the levels of collections in this subtree, itself included
        self.nodes = 1  # the nodes of this subtree, aliases expanded
        self.key: Any = None  # a map's key waiting for its value
        self.has_key = False
        self.merges: list[Any] = []
        self.own_keys: set[str] = set()


class _Builder:
    def __init__(self, loader: Any) -> None:
        self.loader = loader
        self.anchors: dict[str, tuple[Any, int, int]] = {}  # name -> (value, nodes, levels)
        self.open_anchors: set[str] = set()
        self.nodes = 0  # all nodes so far, aliases expanded (Go's "decode count")
        self.aliased = 0  # of them, those that came from aliases

    def document(self) -> Any:
        get = self.loader.get_event
        event = get()
        if isinstance(event, yaml.StreamStartEvent):
            event = get()
        if isinstance(event, yaml.StreamEndEvent):
            return None
        if not isinstance(event, yaml.DocumentStartEvent):  # pragma: no cover - the parser guarantees it
            raise BodyError("yaml: expected a document")
        stack: list[_Open] = []
        result: Any = None
        while True:
            event = get()
            if isinstance(event, yaml.ScalarEvent):
                value, levels, nodes = self._scalar(event), 0, 1
                self._count(1)
                self._remember(event.anchor, value, 1, 0)
            elif isinstance(event, yaml.AliasEvent):
                value, nodes, levels = self._alias(str(event.anchor))
                self.aliased += nodes
                self._count(nodes)
                if len(stack) + levels > MAX_DEPTH:
                    raise BodyError(f"exceeded max depth of {MAX_DEPTH}")
            elif isinstance(event, yaml.MappingStartEvent | yaml.SequenceStartEvent):
                is_map = isinstance(event, yaml.MappingStartEvent)
                tag = _collection_tag(event.tag, is_map)
                if len(stack) >= MAX_DEPTH:
                    raise BodyError(f"exceeded max depth of {MAX_DEPTH}")
                if event.anchor is not None:
                    self.open_anchors.add(event.anchor)
                stack.append(_Open({} if is_map else [], is_map=is_map, anchor=event.anchor, tag=tag))
                self._count(1)
                continue
            elif isinstance(event, yaml.MappingEndEvent | yaml.SequenceEndEvent):
                done = stack.pop()
                value, nodes, levels = self._finish(done), done.nodes, done.levels
                if done.anchor is not None:
                    self.open_anchors.discard(done.anchor)
                    self._remember(done.anchor, value, nodes, levels)
            elif isinstance(event, yaml.DocumentEndEvent):
                return result
            else:  # pragma: no cover - the parser guarantees the order of events
                raise BodyError(f"yaml: unexpected {type(event).__name__}")
            if not stack:
                result = value
                continue
            parent = stack[-1]
            parent.nodes += nodes
            parent.levels = max(parent.levels, levels + 1)
            if not parent.is_map:
                parent.value.append(value)
            elif not parent.has_key:
                parent.key, parent.has_key = value, True
            else:
                self._put(parent, parent.key, value)
                parent.key, parent.has_key = None, False

    # -- the parts -----------------------------------------------------------------------------------

    def _count(self, nodes: int) -> None:
        self.nodes += nodes
        if self.aliased > 100 and self.nodes > 1000 and self.aliased / self.nodes > allowed_alias_ratio(self.nodes):
            raise BodyError("yaml: document contains excessive aliasing")

    def _remember(self, anchor: str | None, value: Any, nodes: int, levels: int) -> None:
        if anchor is not None:
            self.anchors[anchor] = (value, nodes, levels)

    def _alias(self, anchor: str) -> tuple[Any, int, int]:
        if anchor in self.open_anchors:
            raise BodyError(f"yaml: anchor '{anchor}' value contains itself")
        if anchor not in self.anchors:
            raise BodyError(f"yaml: unknown anchor '{anchor}' referenced")
        return self.anchors[anchor]

    def _put(self, parent: _Open, key: Any, value: Any) -> None:
        if key is _MERGE:
            parent.merges.append(value)
            return
        name = _key_string(key)
        parent.value[name] = value
        parent.own_keys.add(name)

    def _finish(self, done: _Open) -> Any:
        if done.is_map and done.has_key:  # pragma: no cover - the parser always pairs keys and values
            raise BodyError("yaml: a mapping key without a value")
        value = done.value
        if done.is_map and done.merges:
            for merged in done.merges:  # "<<: *a" or "<<: [*a, *b]": earlier ones win, own keys win over all
                sources = merged if isinstance(merged, list) else [merged]
                for source in sources:
                    if not isinstance(source, dict):
                        raise BodyError("yaml: map merge requires map or sequence of maps as the value")
                    for key, item in source.items():
                        if key not in done.own_keys and key not in value:
                            value[key] = item
        if done.tag == "set":
            value = {key: None for key in value}
        return value

    def _scalar(self, event: Any) -> Any:
        tag, text = event.tag, event.value
        if tag is None and event.implicit[0]:
            return _plain(text)
        if tag is None or tag == "!" or tag == _TAG + "str":
            return valid_string(text)
        if not tag.startswith(_TAG):
            raise BodyError(f"yaml: cannot decode the tag {tag!r}")
        kind = tag[len(_TAG) :]
        if kind == "binary":
            try:
                return base64.b64decode("".join(text.split()), validate=True).decode("utf-8", "replace")
            except (binascii.Error, ValueError):
                raise BodyError("yaml: !!binary value contains invalid base64 data") from None
        if kind == "timestamp":
            return _timestamp(text)
        if kind == "merge":
            return _MERGE
        value = _plain(text)
        expected = {"int": int, "float": float, "bool": bool, "null": type(None)}.get(kind)
        if expected is float and isinstance(value, int) and not isinstance(value, bool):
            return float(value)
        if expected is None or not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
            raise BodyError(f"yaml: cannot decode {text!r} as a !!{kind}")
        return value


def _collection_tag(tag: str | None, is_map: bool) -> str | None:
    if tag is None or tag == "!":
        return None
    if tag in (_TAG + "map", _TAG + "seq"):
        return None
    if is_map and tag == _TAG + "set":
        return "set"
    if not is_map and tag in (_TAG + "omap", _TAG + "pairs"):
        return None
    raise BodyError(f"yaml: cannot decode the tag {tag!r}")


def _plain(text: str) -> Any:
    """A plain (unquoted, untagged) scalar: null, bool, int, float, or the text itself."""
    if text in _NULLS:
        return None
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    if text == "<<":
        return _MERGE
    if text and text[0] in _NUMERIC_START:
        if _INT.fullmatch(text):
            return _integer(text)
        if _FLOAT.fullmatch(text) and any(c.isdigit() for c in text):
            return _finite(float(text.replace("_", "")), text)
        if text in _SPECIAL_FLOATS:
            special = "NaN" if text.lower().endswith("nan") else "-Inf" if text.startswith("-") else "+Inf"
            raise BodyError(f"json: unsupported value: {special}")
    return valid_string(text)


def _integer(text: str) -> int | float:
    digits = text.replace("_", "")
    sign = -1 if digits.startswith("-") else 1
    body = digits.lstrip("+-")
    try:
        if body[:2] in ("0b", "0o", "0x"):
            value = sign * int(body, 0)
        elif len(body) > 1 and body.startswith("0") and body.isdigit() and set(body) <= set("01234567"):
            value = sign * int(body, 8)
        elif len(body) > 4300:
            return _finite(float(digits), text)
        else:
            value = sign * int(body)
    except ValueError:
        return _finite(float(digits), text)
    if _INT64[0] <= value <= _INT64[1]:
        return value
    return _finite(float(value), text)


def _finite(value: float, text: str) -> float:
    if value != value or value in (float("inf"), float("-inf")):
        raise BodyError(f"json: unsupported value: {'NaN' if value != value else '+Inf' if value > 0 else '-Inf'}")
    return value


def _timestamp(text: str) -> str:
    """An explicit ``!!timestamp`` as the RFC 3339 text that Go's JSON encoder makes of it."""
    try:
        stamp = datetime.datetime.fromisoformat(text.strip().replace(" ", "T", 1) if "T" not in text else text)
    except ValueError:
        raise BodyError(f"yaml: cannot decode {text!r} as a !!timestamp") from None
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=datetime.UTC)
    rendered = stamp.isoformat()
    return rendered.replace("+00:00", "Z")


def _key_string(key: Any) -> str:
    """A map key as JSON needs it: numbers and booleans printed, anything else refused (as Go's converter)."""
    if isinstance(key, str):
        return valid_string(key)
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, int):
        return str(key)
    if isinstance(key, float):
        return repr(key).removesuffix(".0") if key.is_integer() and abs(key) < 1e21 else repr(key)
    kind = "<nil>" if key is None else "[]interface {}" if isinstance(key, list) else "map[string]interface {}"
    raise BodyError(f"error converting YAML to JSON: unsupported map key of type: {kind}")
