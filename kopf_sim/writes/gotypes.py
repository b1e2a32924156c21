"""Go's typed decoding of JSON, as the apiserver decodes a built-in object into its Go struct.

The apiserver does not store JSON as it comes: it decodes it into a typed struct first, and a value
of the wrong type fails the whole request with Go's own message, e.g.
``json: cannot unmarshal number into Go struct field ConfigMap.data of type string``. The types here
describe the fields that the server and clients rely on (a struct may leave fields undeclared:
those are not checked); :func:`first_error` finds the first mistyped value in document order,
as Go reports the first one it meets.

Go's rules, as followed here: ``null`` is fine anywhere (it leaves the zero value); numbers into
integer fields must be whole and fit the size (else the message names the number); map keys and
list indices are not part of the field path; the struct named is the innermost one. Decoding also
changes what Go writes back differently: nulls among the items of lists and maps, and quantities
(written back in their canonical form, see :mod:`kopf_sim.kube.quantities`).
"""

from __future__ import annotations

import abc
import base64
import binascii
import dataclasses
import json
import re
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from kopf_sim.kube.quantities import FORMAT_WRONG, QuantityError, canonical_quantity

_B64_ALPHABET = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
_RFC3339 = "2006-01-02T15:04:05Z07:00"


@dataclasses.dataclass(frozen=True)
class Failure:
    """Why a value does not decode: Go's error text, without the struct-field context yet."""

    value: str  # "number", "string", "number 1.5", ... (Go's UnmarshalTypeError.Value)
    go_type: str  # "string", "int32", "[]v1.Container", ...
    message: str | None = None  # a complete message instead (base64, time, quantity errors)


class GoType(abc.ABC):
    """A Go type that JSON decodes into."""

    go_name: str

    @abc.abstractmethod
    def failure(self, value: Any) -> Failure | None:
        """Why the value itself does not decode (its parts are checked separately), or None."""


@dataclasses.dataclass(frozen=True)
class Scalar(GoType):
    go_name: str
    accepts: Callable[[Any], bool]

    def failure(self, value: Any) -> Failure | None:
        return None if self.accepts(value) else Failure(json_kind(value), self.go_name)


@dataclasses.dataclass(frozen=True)
class Integer(GoType):
    go_name: str
    low: int
    high: int

    def failure(self, value: Any) -> Failure | None:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return Failure(json_kind(value), self.go_name)
        if isinstance(value, float) or not self.low <= value <= self.high:
            return Failure(f"number {number_text(value)}", self.go_name)
        return None


@dataclasses.dataclass(frozen=True)
class Special(GoType):
    """A type with its own JSON decoder: base64 bytes, times, quantities, int-or-string, raw JSON."""

    go_name: str
    check: Callable[[Any], Failure | None]
    written_back: Callable[[Any], Any] | None = None  # what Go writes for a valid value, if not the same

    def failure(self, value: Any) -> Failure | None:
        return self.check(value)


@dataclasses.dataclass(frozen=True)
class _Collection(GoType):
    item: GoType
    named: str = ""  # a named type of its own, e.g. "v1.ResourceList" (else "[]<item>", "map[string]<item>")
    prefix = ""
    json_type: ClassVar[type] = object

    @property
    def go_name(self) -> str:  # type: ignore[override]
        return self.named or f"{self.prefix}{self.item.go_name}"

    def failure(self, value: Any) -> Failure | None:
        return None if isinstance(value, self.json_type) else Failure(json_kind(value), self.go_name)


class ListOf(_Collection):
    prefix, json_type = "[]", list


class MapOf(_Collection):
    prefix, json_type = "map[string]", dict


@dataclasses.dataclass(frozen=True, eq=False)
class Struct(GoType):
    """A Go struct: ``package.Name`` and its JSON fields (the undeclared ones are not checked)."""

    name: str
    package: str
    fields: Mapping[str, GoType] = dataclasses.field(default_factory=dict)

    @property
    def go_name(self) -> str:  # type: ignore[override]
        return f"{self.package}.{self.name}"

    def failure(self, value: Any) -> Failure | None:
        return None if isinstance(value, dict) else Failure(json_kind(value), self.go_name)

    def extend(self, name: str | None = None, **fields: GoType) -> Struct:
        return Struct(name or self.name, self.package, {**self.fields, **fields})


class Recursive(GoType):
    """A struct that contains itself (a CRD's JSON schema): declared first, then defined."""

    def __init__(self, name: str, package: str) -> None:
        self.name, self.package = name, package
        self.target: Struct | None = None

    @property
    def go_name(self) -> str:  # type: ignore[override]
        return f"{self.package}.{self.name}"

    def define(self, **fields: GoType) -> Recursive:
        self.target = Struct(self.name, self.package, fields)
        return self

    def failure(self, value: Any) -> Failure | None:
        return None if isinstance(value, dict) else Failure(json_kind(value), self.go_name)


def first_error(value: Any, go_type: GoType, *, fill_nulls: bool = False) -> str | None:
    """Go's message for the first value that does not decode, or None if all of it decodes.

    With ``fill_nulls``, the value becomes what Go writes back after decoding it (in place: the value
    must be a private copy): the nulls among the items of lists and maps become the items' zero values
    (``[null]`` of structs is ``[{}]``, a null quantity ``"0"``), the null fields of structs are dropped
    (Go omits the zero values of optional fields, and the defaults fill some in again), and quantities
    get their canonical text.
    Every write goes through here, so the types are compiled into checkers once (see :func:`_checker`).
    """
    if value is None:
        return None
    fault = _checker(go_type, fill_nulls)(value)
    if fault is None:
        return None
    return _message(fault.failure, fault.struct, tuple(reversed(fault.path)))


class _Fault:
    """A value that does not decode, with the way back to it filled in as the checkers return."""

    __slots__ = ("failure", "path", "struct")

    def __init__(self, failure: Failure) -> None:
        self.failure = failure
        self.path: list[str] = []  # the JSON field names, innermost first
        self.struct: str | None = None  # the innermost struct around the value


_Checker = Callable[[Any], "_Fault | None"]
_compiled: dict[tuple[int, bool], _Checker] = {}


def _checker(kind: GoType, fill_nulls: bool) -> _Checker:
    """A function that checks a (non-null) value against the type; made once per type (types are constants)."""
    key = (id(kind), fill_nulls)
    checker = _compiled.get(key)
    if checker is None:
        checker = _compiled[key] = _compile(kind, fill_nulls)
    return checker


def _compile(kind: GoType, fill_nulls: bool) -> _Checker:
    if isinstance(kind, Recursive):

        def recurse(value: Any) -> _Fault | None:
            assert kind.target is not None
            return _checker(kind.target, fill_nulls)(value)

        return recurse
    if isinstance(kind, Struct):
        return _compile_struct(kind, fill_nulls)
    if isinstance(kind, ListOf | MapOf):
        return _compile_collection(kind, fill_nulls)

    def check_scalar(value: Any) -> _Fault | None:
        failure = kind.failure(value)
        return None if failure is None else _Fault(failure)

    return check_scalar


#: How a struct's checker takes a field of strings only (a map of strings, a list of strings: labels, data,
#: finalizers): their items are looked at in the struct's own loop, a call saved for each of the usual ones.
_STRINGS_MAP, _STRINGS_LIST = object(), object()


def _compile_struct(kind: Struct, fill_nulls: bool) -> _Checker:
    plan: dict[str, object] = {name: _plan_of(field) for name, field in kind.fields.items()}
    rewritten = {
        name: write_back for name, field in kind.fields.items() if (write_back := _write_back(field, fill_nulls))
    }
    checkers: dict[str, _Checker] = {}

    def check_struct(value: Any) -> _Fault | None:
        if not isinstance(value, dict):
            return _Fault(Failure(json_kind(value), kind.go_name))
        nulls = False
        for name, item in value.items():
            if item is None:
                nulls = True
                continue
            how = plan.get(name)
            if how is None:
                continue
            if how is STRING:
                if type(item) is str:
                    continue
                fault: _Fault | None = _Fault(Failure(json_kind(item), "string"))
            else:
                if how is _STRINGS_MAP and type(item) is dict:
                    for each in item.values():
                        if type(each) is not str:
                            break
                    else:
                        continue
                elif how is _STRINGS_LIST and type(item) is list:
                    for each in item:
                        if type(each) is not str:
                            break
                    else:
                        continue
                checker = checkers.get(name)
                if checker is None:
                    checker = checkers[name] = _checker(kind.fields[name], fill_nulls)
                fault = checker(item)
            if fault is not None:
                fault.path.append(name)
                if fault.struct is None:
                    fault.struct = kind.name
                return fault
        if nulls and fill_nulls:  # a null field is left at its zero value, which Go omits (or defaults later)
            for name in [name for name, item in value.items() if item is None and name in kind.fields]:
                del value[name]
        for name, write_back in rewritten.items():
            if value.get(name) is not None:
                value[name] = write_back(value[name])
        return None

    return check_struct


def _plan_of(field: GoType) -> object:
    """How :func:`_compile_struct`'s checker takes a field: a string, strings, or by the field's own checker."""
    if isinstance(field, MapOf | ListOf) and field.item is STRING:
        return _STRINGS_MAP if isinstance(field, MapOf) else _STRINGS_LIST
    return field


def _write_back(kind: GoType, fill_nulls: bool) -> Callable[[Any], Any] | None:
    """How decoding (with ``fill_nulls``) changes the valid values of the type (e.g. quantities), if it does."""
    return kind.written_back if fill_nulls and isinstance(kind, Special) else None


def _compile_collection(kind: ListOf | MapOf, fill_nulls: bool) -> _Checker:
    item_type = kind.item
    is_list = isinstance(kind, ListOf)
    only_strings = item_type is STRING
    zero = zero_value(item_type)
    mutable_zero = isinstance(zero, dict | list)
    write_back = _write_back(item_type, fill_nulls)

    def check_collection(given: Any) -> _Fault | None:
        if not isinstance(given, list if is_list else dict):
            return _Fault(Failure(json_kind(given), kind.go_name))
        value: Any = given
        items: Any = value if is_list else value.values()
        if only_strings:
            for item in items:
                if type(item) is not str:
                    break
            else:
                return None  # the usual map or list of strings: nothing to look into
        if fill_nulls and None in items:
            if is_list:
                value[:] = [(zero.copy() if mutable_zero else zero) if item is None else item for item in value]
            else:
                for key in [key for key, item in value.items() if item is None]:
                    value[key] = zero.copy() if mutable_zero else zero
            items = value if is_list else value.values()
        checker = _checker(item_type, fill_nulls)
        for item in items:
            if item is not None and (fault := checker(item)) is not None:
                return fault
        if write_back is not None:
            if is_list:
                value[:] = [write_back(item) for item in value]
            else:
                for key, item in value.items():
                    value[key] = write_back(item)
        return None

    return check_collection


def zero_value(kind: GoType) -> Any:
    """What Go decodes a JSON null into, as JSON: an empty struct, list or map, a zero, an empty string."""
    if isinstance(kind, Struct | Recursive | MapOf):
        return {}
    if isinstance(kind, ListOf):
        return []
    if isinstance(kind, Integer):
        return 0
    if kind is BOOL:
        return False
    if kind is FLOAT64:
        return 0.0
    if (isinstance(kind, Scalar) and kind.accepts is _is_string) or kind is BYTES:
        return ""
    if kind is QUANTITY:
        return canonical_quantity(None)  # Go's zero quantity is written as "0"
    return None  # times, raw JSON: null stays null


def _message(failure: Failure, struct: str | None, path: tuple[str, ...]) -> str:
    if failure.message is not None:
        return failure.message
    if struct is None or not path:
        return f"json: cannot unmarshal {failure.value} into Go value of type {failure.go_type}"
    return (
        f"json: cannot unmarshal {failure.value} into Go struct field {struct}.{'.'.join(path)} "
        f"of type {failure.go_type}"
    )


def json_kind(value: Any) -> str:
    """How Go's decoder names a JSON value in its errors."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def number_text(value: int | float) -> str:
    """A number as it would have been written in JSON (Python's float text, without Go's literal)."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e16:
        return f"{value:.1f}"
    return str(value) if isinstance(value, int) else repr(value)


# --- the scalar types -------------------------------------------------------------------------------


def _is_string(value: Any) -> bool:
    return isinstance(value, str)


def named_string(name: str) -> Scalar:
    """A Go string type of its own (``v1.ServiceType``): named so in the errors."""
    return Scalar(name, _is_string)


STRING = Scalar("string", _is_string)
BOOL = Scalar("bool", lambda v: isinstance(v, bool))
FLOAT64 = Scalar("float64", lambda v: isinstance(v, int | float) and not isinstance(v, bool))
INT32 = Integer("int32", -(2**31), 2**31 - 1)
INT64 = Integer("int64", -(2**63), 2**63 - 1)


def _bytes(value: Any) -> Failure | None:
    """``[]byte``: a base64 string (standard alphabet, padded; line breaks are skipped, as in Go)."""
    if not isinstance(value, str):
        return Failure(json_kind(value), "[]uint8")
    text = value.replace("\r", "").replace("\n", "")
    for index, char in enumerate(text):
        if char not in _B64_ALPHABET and char != "=":
            return Failure("", "", f"illegal base64 data at input byte {index}")
    try:
        base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return Failure("", "", f"illegal base64 data at input byte {len(text) - len(text) % 4}")
    return None


def _time(layout: str) -> Callable[[Any], Failure | None]:
    def check(value: Any) -> Failure | None:
        if not isinstance(value, str):
            return Failure(json_kind(value), "string")
        problem = time_problem(value)
        if problem is not None:
            return Failure("", "", f"parsing time {json.dumps(value)} as {json.dumps(layout)}: {problem}")
        return None

    return check


# The elements of Go's RFC 3339 layout, with what each accepts; the fraction of seconds is optional.
_TIME_ELEMENTS = tuple(
    (element, re.compile(pattern))
    for element, pattern in (
        ("2006", r"\d{4}"),
        ("-", "-"),
        ("01", r"\d{2}"),
        ("-", "-"),
        ("02", r"\d{2}"),
        ("T", "[Tt]"),
        ("15", r"\d{2}"),
        (":", ":"),
        ("04", r"\d{2}"),
        (":", ":"),
        ("05", r"\d{2}(?:\.\d+)?"),
        ("Z07:00", r"(?:[Zz]|[+-]\d{2}:\d{2})"),
    )
)
_RFC3339_TEXT = re.compile(r"\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[Zz]|[+-]\d{2}:\d{2})")


def time_problem(text: str) -> str | None:
    """What Go's ``time.Parse(time.RFC3339, ...)`` says of the text (None if it parses)."""
    if not _RFC3339_TEXT.fullmatch(text):
        position = 0
        for element, pattern in _TIME_ELEMENTS:
            match = pattern.match(text, position)
            if match is None:
                return f"cannot parse {json.dumps(text[position:])} as {json.dumps(element)}"
            position = match.end()
        return f"extra text: {json.dumps(text[position:])}"
    month, day = int(text[5:7]), int(text[8:10])
    hour, minute, second = int(text[11:13]), int(text[14:16]), int(text[17:19])
    if not 1 <= month <= 12:
        return "month out of range"
    if not 1 <= day <= 31:
        return "day out of range"
    if hour > 23:
        return "hour out of range"
    if minute > 59:
        return "minute out of range"
    if second > 59:
        return "second out of range"
    return None


def _quantity(value: Any) -> Failure | None:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return Failure("", "", FORMAT_WRONG)
    try:
        canonical_quantity(value)
    except QuantityError as exc:
        return Failure("", "", str(exc))
    return None


def _int_or_string(value: Any) -> Failure | None:
    if isinstance(value, str):
        return None
    return INT32.failure(value)


BYTES = Special("[]uint8", _bytes)
TIME = Special("v1.Time", _time(_RFC3339))
MICRO_TIME = Special("v1.MicroTime", _time("2006-01-02T15:04:05.000000Z07:00"))
QUANTITY = Special("resource.Quantity", _quantity, written_back=canonical_quantity)
INT_OR_STRING = Special("int32", _int_or_string)
RAW = Special("runtime.RawExtension", lambda value: None)
