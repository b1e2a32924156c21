"""The Kubernetes CEL libraries that rules use, as functions for ``cel.Context``.

The bindings call a registered function by name whether it is written ``f(x, y)`` or ``x.f(y)``, so one
Python function serves both forms, and it dispatches on its arguments' Python types where CEL overloads a
name (``indexOf`` of strings and of lists). Values that Kubernetes adds as types of their own (quantities,
URLs) travel through CEL as tagged strings, since the bindings convert every value to a CEL one (and strings
cross the boundary several times faster than maps). A quantity's tagged text is canonical, so that equal
quantities are equal in CEL too.

A function that fails raises :class:`LibraryError` with the text that the apiserver reports.
"""

from __future__ import annotations

import decimal
import functools
import itertools
import math
import re
import urllib.parse
from collections.abc import Callable
from typing import Any

from kopf_sim.kube.quantities import FORMAT_WRONG, QuantityError, canonical_quantity, parse_quantity

__all__ = ["BUILTINS", "FUNCTIONS", "LibraryError"]

_QUANTITY = "\U000f0000quantity:"  # a private-use character: no JSON string of a real object starts so
_URL = "\U000f0000url:"


class LibraryError(ValueError):
    """A library function's failure, worded as the apiserver's CEL libraries word it."""


# --- strings (cel-go's strings extension, version 2 as in Kubernetes 1.32) -------------------------------


def _char_at(text: str, index: int) -> str:
    if not 0 <= index <= len(text):
        raise LibraryError(f"index out of range: {index}")
    return text[index : index + 1]


def _index_of(haystack: str | list[Any], needle: Any, start: int = 0) -> int:
    if isinstance(haystack, list):
        return next((i for i, item in enumerate(haystack) if item == needle), -1)
    if not 0 <= start <= len(haystack):
        raise LibraryError(f"index out of range: {start}")
    return haystack.find(needle, start)


def _last_index_of(haystack: str | list[Any], needle: Any, end: int | None = None) -> int:
    if isinstance(haystack, list):
        return next((i for i in range(len(haystack) - 1, -1, -1) if haystack[i] == needle), -1)
    if end is not None and not 0 <= end < len(haystack):
        raise LibraryError(f"index out of range: {end}")
    return haystack.rfind(needle, 0, None if end is None else end + len(needle))


def _replace(text: str, old: str, new: str, count: int = -1) -> str:
    return text.replace(old, new, count)


def _split(text: str, separator: str, limit: int = -1) -> list[str]:
    if limit == 0:
        return []
    if separator == "":
        chars = list(text)
        return chars if limit < 0 else [*chars[: limit - 1], "".join(chars[limit - 1 :])]
    return text.split(separator, limit - 1 if limit > 0 else -1)


def _substring(text: str, start: int, end: int | None = None) -> str:
    stop = len(text) if end is None else end
    if not 0 <= start <= len(text) or not start <= stop <= len(text):
        raise LibraryError(f"index out of range: {start if not 0 <= start <= len(text) else stop}")
    return text[start:stop]


def _join(items: list[str], separator: str = "") -> str:
    return separator.join(items)


_VERB = re.compile(r"%(?:\.(\d+))?([sdfeoxXb%])")


def _format(template: str, args: list[Any]) -> str:
    """``"%s of %d".format([a, b])``: the verbs of cel-go's string formatting."""
    remaining = list(args)

    def verb(match: re.Match[str]) -> str:
        precision, kind = match.group(1), match.group(2)
        if kind == "%":
            return "%"
        if not remaining:
            raise LibraryError("index 0 out of range")
        value = remaining.pop(0)
        if kind == "s":
            return _as_text(value)
        if kind in "dfe" and isinstance(value, bool):
            raise LibraryError(
                f"error during formatting: decimal clause can only be used on integers, was given {value}"
            )
        if kind == "d":
            return str(int(value))
        if kind == "f":
            return f"{float(value):.{6 if precision is None else int(precision)}f}"
        if kind == "e":
            return f"{float(value):.{6 if precision is None else int(precision)}e}"
        return format(int(value), {"o": "o", "x": "x", "X": "X", "b": "b"}[kind])

    return _VERB.sub(verb, template)


def _as_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value)) if abs(value) < 1e21 else repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_as_text(item) for item in value) + "]"
    if value is None:
        return "null"
    return str(value)


# --- lists (Kubernetes' list library) ---------------------------------------------------------------------


def _is_sorted(items: list[Any]) -> bool:
    return all(a <= b for a, b in itertools.pairwise(items))


def _sum(items: list[Any]) -> Any:
    return sum(items, 0.0 if items and isinstance(items[0], float) else 0)


def _min(items: list[Any]) -> Any:
    if not items:
        raise LibraryError("min called on empty list")
    return min(items)


def _max(items: list[Any]) -> Any:
    if not items:
        raise LibraryError("max called on empty list")
    return max(items)


def _slice(items: list[Any], start: int, end: int) -> list[Any]:
    if not 0 <= start <= end <= len(items):
        raise LibraryError(f"cannot slice({start}, {end}), list is length {len(items)}")
    return items[start:end]


def _flatten(items: list[Any]) -> list[Any]:
    return [inner for item in items for inner in (item if isinstance(item, list) else [item])]


def _distinct(items: list[Any]) -> list[Any]:
    kept: list[Any] = []
    for item in items:
        if item not in kept:
            kept.append(item)
    return kept


def _reverse(value: str | list[Any]) -> str | list[Any]:
    return value[::-1]


# --- regex (Kubernetes' regex library) --------------------------------------------------------------------


@functools.lru_cache(maxsize=1024)
def _pattern(pattern: str) -> re.Pattern[str]:
    """A pattern compiled once; the bindings' own ``matches`` (RE2, as the apiserver's) must accept it too."""
    import cel  # the bindings: present whenever a rule is evaluated

    try:
        cel.evaluate("''.matches(p)", {"p": pattern})
    except (ValueError, RuntimeError) as exc:
        reason = str(exc).split(". Check ")[0].rstrip().rpartition("error: ")[2]
        raise LibraryError(f"error parsing regexp: {reason}") from None
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise LibraryError(f"error parsing regexp: {exc}") from None


def _matches(text: str, pattern: str) -> bool:
    return _pattern(pattern).search(text) is not None


def _find(text: str, pattern: str) -> str:
    match = _pattern(pattern).search(text)
    return match.group(0) if match else ""


def _find_all(text: str, pattern: str, limit: int = -1) -> list[str]:
    found = [match.group(0) for match in _pattern(pattern).finditer(text)]
    return found if limit < 0 else found[:limit]


# --- quantities (Kubernetes' quantity library) ------------------------------------------------------------


@functools.lru_cache(maxsize=1024)
def _quantity(text: str) -> str:
    try:
        return _QUANTITY + canonical_quantity(text)
    except QuantityError as exc:
        raise LibraryError(str(exc) or FORMAT_WRONG) from None


def _is_quantity(text: str) -> bool:
    return bool(text) and _amount_of(_QUANTITY + text) is not None


@functools.lru_cache(maxsize=1024)
def _amount_of(tagged: str) -> decimal.Decimal | None:
    return parse_quantity(tagged[len(_QUANTITY) :]) if tagged.startswith(_QUANTITY) else None


def _amount(value: Any) -> decimal.Decimal:
    if isinstance(value, str):
        amount = _amount_of(value)
        if amount is not None:
            return amount
    if isinstance(value, int) and not isinstance(value, bool):
        return decimal.Decimal(value)
    raise LibraryError("no such overload")


def _compare_to(a: Any, b: Any) -> int:
    left, right = _amount(a), _amount(b)
    return (left > right) - (left < right)


def _is_less_than(a: Any, b: Any) -> bool:
    return _compare_to(a, b) < 0


def _is_greater_than(a: Any, b: Any) -> bool:
    return _compare_to(a, b) > 0


def _add(a: Any, b: Any) -> str:
    return _quantity(str(_amount(a) + _amount(b)))


def _sub(a: Any, b: Any) -> str:
    return _quantity(str(_amount(a) - _amount(b)))


def _as_integer(value: Any) -> int:
    amount = _amount(value)
    if amount != amount.to_integral_value() or abs(amount) > 2**63 - 1:
        raise LibraryError("cannot convert value to integer")
    return int(amount)


def _is_integer(value: Any) -> bool:
    amount = _amount(value)
    return amount == amount.to_integral_value() and abs(amount) <= 2**63 - 1


def _as_approximate_float(value: Any) -> float:
    return float(_amount(value))


def _sign(value: Any) -> int:
    amount = _amount(value)
    return (amount > 0) - (amount < 0)


# --- URLs (Kubernetes' URL library) -----------------------------------------------------------------------


@functools.lru_cache(maxsize=1024)
def _parsed_url(text: str) -> urllib.parse.SplitResult | None:
    """A URL as Go's ``url.ParseRequestURI`` accepts it: absolute, or an absolute path."""
    if not text or any(ch.isspace() for ch in text):
        return None
    try:
        parts = urllib.parse.urlsplit(text)
        _ = parts.port
    except ValueError:
        return None
    if not parts.scheme and not text.startswith("/"):
        return None
    return parts


def _url(text: str) -> str:
    if _parsed_url(text) is None:
        raise LibraryError(f"URL parse error during conversion from string: parse {text!r}: invalid URI for request")
    return _URL + text


def _is_url(text: str) -> bool:
    return _parsed_url(text) is not None


def _url_part(value: Any) -> urllib.parse.SplitResult:
    if isinstance(value, str) and value.startswith(_URL):
        parts = _parsed_url(value[len(_URL) :])
        if parts is not None:
            return parts
    raise LibraryError("no such overload")


def _get_scheme(value: Any) -> str:
    return _url_part(value).scheme


def _get_host(value: Any) -> str:
    return _url_part(value).netloc.rpartition("@")[2]


def _get_hostname(value: Any) -> str:
    host = _get_host(value)
    if host.startswith("["):
        return host[1 : host.find("]")]
    return host.rpartition(":")[0] if ":" in host else host


def _get_port(value: Any) -> str:
    host = _get_host(value)
    tail = host[host.find("]") + 1 :] if host.startswith("[") else host
    return tail.rpartition(":")[2] if ":" in tail else ""


def _get_escaped_path(value: Any) -> str:
    return _url_part(value).path


def _get_query(value: Any) -> dict[str, list[str]]:
    return urllib.parse.parse_qs(_url_part(value).query, keep_blank_values=True)


# --- math helpers the bindings lack -----------------------------------------------------------------------


def _ceil(value: float) -> float:
    return float(math.ceil(value))


def _floor(value: float) -> float:
    return float(math.floor(value))


def _lower_ascii(text: str) -> str:
    return "".join(ch.lower() if ch.isascii() else ch for ch in text)


def _upper_ascii(text: str) -> str:
    return "".join(ch.upper() if ch.isascii() else ch for ch in text)


def _trim(text: str) -> str:
    return text.strip()


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "charAt": _char_at,
    "indexOf": _index_of,
    "lastIndexOf": _last_index_of,
    "lowerAscii": _lower_ascii,
    "upperAscii": _upper_ascii,
    "replace": _replace,
    "split": _split,
    "substring": _substring,
    "trim": _trim,
    "join": _join,
    "format": _format,
    "reverse": _reverse,
    "isSorted": _is_sorted,
    "sum": _sum,
    "min": _min,
    "max": _max,
    "slice": _slice,
    "flatten": _flatten,
    "distinct": _distinct,
    "kopfMatches": _matches,  # `matches`, as kopf_sim.cel.programs.for_evaluation rewrites it
    "find": _find,
    "findAll": _find_all,
    "quantity": _quantity,
    "isQuantity": _is_quantity,
    "compareTo": _compare_to,
    "isLessThan": _is_less_than,
    "isGreaterThan": _is_greater_than,
    "add": _add,
    "sub": _sub,
    "asInteger": _as_integer,
    "isInteger": _is_integer,
    "asApproximateFloat": _as_approximate_float,
    "sign": _sign,
    "url": _url,
    "isURL": _is_url,
    "getScheme": _get_scheme,
    "getHost": _get_host,
    "getHostname": _get_hostname,
    "getPort": _get_port,
    "getEscapedPath": _get_escaped_path,
    "getQuery": _get_query,
    "ceil": _ceil,
    "floor": _floor,
}

# The functions that the bindings know themselves (and the macros): a rule may call these too.
BUILTINS: frozenset[str] = frozenset(
    {
        "size", "has", "matches", "contains", "startsWith", "endsWith", "all", "exists", "exists_one", "map",
        "filter", "int", "uint", "double", "string", "bytes", "bool", "dyn", "type", "duration", "timestamp",
        "getFullYear", "getMonth", "getDayOfYear", "getDayOfMonth", "getDate", "getDayOfWeek", "getHours",
        "getMinutes", "getSeconds", "getMilliseconds", "optional.of", "optional.none", "optional.ofNonZeroValue",
        "hasValue", "value", "orValue", "or", "of", "none",
    }
)  # fmt: skip
