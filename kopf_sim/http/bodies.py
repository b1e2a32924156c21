"""Request bodies parsed with a bounded cost, into plain JSON data that the rest of the server can trust.

Whatever a client sends, the result is made of dicts with string keys, lists, strings (valid Unicode),
finite floats, ints, bools and None, nested at most :data:`MAX_DEPTH` levels deep; anything else is a
:class:`BodyError`, which the server answers with a 400. Parsing never takes more than a few passes
over the body: YAML aliases are counted as they expand (see :mod:`kopf_sim.http.yamlbodies`), deep nesting
is refused before anything recurses over it, and the JSON parser's own recursion is caught.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

#: How deep objects may nest (a real apiserver allows 10,000 in JSON; here, the server's own recursive
#: steps -- copies, schemas, patches, field ownership -- must stay well within Python's recursion limit).
MAX_DEPTH = 100

_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89abcdefABCDEF]")


class BodyError(ValueError):
    """A body that cannot be turned into JSON data; the message is worded as the apiserver's decoder."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def parse_json(raw: bytes | str) -> Any:
    """JSON data from a body: finite numbers, valid strings, bounded depth; else a :class:`BodyError`."""
    try:
        data = json.loads(raw, parse_constant=_refuse_constant, parse_float=_finite_float)
    except RecursionError:
        raise BodyError(f"exceeded max depth of {MAX_DEPTH}") from None
    except BodyError:
        raise
    except ValueError as exc:  # incl. UnicodeDecodeError
        raise BodyError(_json_error(exc)) from None
    encoded = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw
    if encoded.count(b"{") + encoded.count(b"[") > MAX_DEPTH:  # else it cannot nest any deeper
        check_depth(data)
    if b"\\u" in encoded and _SURROGATE_ESCAPE.search(encoded):
        data = valid_strings(data)
    return data


def check_depth(data: Any, limit: int = MAX_DEPTH) -> None:
    """Refuse data nested deeper than the limit; iterative, so that the check itself cannot overflow."""
    if not isinstance(data, dict | list):
        return
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        children = value.values() if isinstance(value, dict) else value
        for child in children:
            if isinstance(child, dict | list):
                if depth + 1 > limit:
                    raise BodyError(f"exceeded max depth of {limit}")
                if child:
                    stack.append((child, depth + 1))


def valid_string(text: str) -> str:
    """The text with lone UTF-16 surrogates replaced by U+FFFD, as Go's decoder does."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def valid_strings(data: Any) -> Any:
    """The data with every string (keys included) made valid Unicode (see :func:`valid_string`)."""
    if isinstance(data, str):
        return valid_string(data)
    if isinstance(data, dict):
        return {valid_string(key): valid_strings(value) for key, value in data.items()}
    if isinstance(data, list):
        return [valid_strings(item) for item in data]
    return data


def _refuse_constant(name: str) -> Any:
    """``NaN`` and ``Infinity`` are not JSON: Go's scanner stops at their first letter."""
    if name.startswith("-"):
        raise BodyError("invalid character 'I' in numeric literal")
    raise BodyError(f"invalid character '{name[0]}' looking for beginning of value")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise BodyError(f"json: cannot unmarshal number {text} into Go value of type float64")
    return value


def _json_error(exc: ValueError) -> str:
    if isinstance(exc, UnicodeDecodeError):
        return "invalid character: the body is not valid UTF-8"
    return str(exc)
