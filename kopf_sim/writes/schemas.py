"""CRD structural schemas: what the apiserver does to a custom resource's body.

The apiserver prunes unknown fields, applies defaults and validates the result
against the CRD's ``openAPIV3Schema``, and it reports failures in a fixed textual
form that clients (kubectl, kopf, tests) show or parse. The functions here are pure:
they never mutate their arguments, and they return the apiserver's texts verbatim.

Field paths follow the apiserver: ``spec.items[0].name`` for objects and arrays,
``spec.labels.key`` for additionalProperties (that is how its validator names them).
"""

from __future__ import annotations

import base64
import binascii
import datetime
import ipaddress
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeGuard

from kopf_sim.kube.objects import clone

__all__ = [
    "OBJECT_META_FIELDS",
    "FieldCause",
    "apply_defaults",
    "invalid_message",
    "prune",
    "prune_and_default",
    "strict_decoding_message",
    "unknown_field_warning",
    "unknown_fields",
    "validate",
    "validate_crd_schema",
]

Schema = Mapping[str, Any]

# The fields of ObjectMeta: anything else in `metadata` is dropped like unknown fields.
OBJECT_META_FIELDS = frozenset(
    {
        "name",
        "generateName",
        "namespace",
        "selfLink",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "labels",
        "annotations",
        "ownerReferences",
        "finalizers",
        "managedFields",
    }
)

_TYPES = ("array", "boolean", "integer", "number", "object", "string")


@dataclass(frozen=True)
class FieldCause:
    """One entry of ``Status.details.causes``: the apiserver's ``field.Error`` in wire form."""

    reason: str  # the cause type, e.g. "FieldValueInvalid"
    message: str  # the error body, e.g. 'Invalid value: "x": ...', 'Required value'
    field: str  # e.g. "spec.items[0].name"; "<nil>" for errors not bound to a field

    def __str__(self) -> str:
        return f"{self.field}: {self.message}"

    def as_status_cause(self) -> dict[str, str]:
        """The JSON form for ``Status.details.causes``."""
        return {"reason": self.reason, "message": self.message, "field": self.field}


# --- how the apiserver renders values and errors --------------------------------------------------


def _go_number(value: float | int) -> str:
    """A number as Go's ``%v`` prints float64/int64 (``2`` not ``2.0``, ``1e+21``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if math.isnan(value):
        return "NaN"
    if value == int(value) and abs(value) < 1e21:
        return str(int(value))
    text = repr(value)
    # Go uses a signed two-digit exponent: 1e-07 rather than Python's 1e-07 (same) / 1e+21.
    return re.sub(r"e([+-]?)(\d+)$", lambda m: f"e{m.group(1) or '+'}{int(m.group(2)):02d}", text)


def _go_value(value: Any) -> str:
    """A bad value as ``field.Error`` renders it: quoted strings, bare numbers, JSON otherwise."""
    if value is None:
        return "null"
    if isinstance(value, bool | int | float):
        return _go_number(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, sort_keys=True)


def _field(path: str) -> str:
    return path or "<nil>"


def _invalid(path: str, value: Any, detail: str) -> FieldCause:
    return FieldCause("FieldValueInvalid", f"Invalid value: {_go_value(value)}: {detail}", _field(path))


def _type_invalid(path: str, value: Any, detail: str) -> FieldCause:
    return FieldCause("FieldValueTypeInvalid", f"Invalid value: {_go_value(value)}: {detail}", _field(path))


def _required(path: str, detail: str = "") -> FieldCause:
    message = f"Required value: {detail}" if detail else "Required value"
    return FieldCause("FieldValueRequired", message, _field(path))


def _forbidden(path: str, detail: str) -> FieldCause:
    return FieldCause("FieldValueForbidden", f"Forbidden: {detail}", _field(path))


def _duplicate(path: str, value: Any) -> FieldCause:
    return FieldCause("FieldValueDuplicate", f"Duplicate value: {_go_value(value)}", _field(path))


def _not_supported(path: str, value: Any, allowed: Iterable[Any]) -> FieldCause:
    texts = [v if isinstance(v, str) else json.dumps(v, separators=(",", ":")) for v in allowed]
    detail = ", ".join(json.dumps(t, ensure_ascii=False) for t in texts)
    return FieldCause(
        "FieldValueNotSupported", f"Unsupported value: {_go_value(value)}: supported values: {detail}", _field(path)
    )


def _too_long(path: str, limit: int) -> FieldCause:
    unit = "byte" if limit == 1 else "bytes"
    return FieldCause("FieldValueTooLong", f"Too long: may not be more than {limit} {unit}", _field(path))


def _too_many(path: str, actual: int, limit: int) -> FieldCause:
    unit = "item" if limit == 1 else "items"
    message = f"Too many: {actual}: must have at most {limit} {unit}"
    return FieldCause("FieldValueTooMany", message, _field(path))


def _in_body(path: str, rule: str) -> str:
    return f"{path} in body {rule}"


def invalid_message(kind: str, group: str, name: str, causes: Sequence[FieldCause]) -> str:
    """The message of a 422 Invalid Status, e.g. ``Kind.group "name" is invalid: [a, b]``.

    Identical cause texts are reported once, as the apiserver's error aggregate does.
    """
    qualified = f"{kind}.{group}" if group else kind
    texts = list(dict.fromkeys(str(cause) for cause in causes))
    joined = texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"
    return f"{qualified} {json.dumps(name)} is invalid: {joined}"


def unknown_field_warning(path: str) -> str:
    """The text of a ``Warning`` header for ``?fieldValidation=Warn`` (and the default)."""
    return f"unknown field {json.dumps(path)}"


def strict_decoding_message(kind: str, version: str, paths: Sequence[str]) -> str:
    """The message of the 400 BadRequest for ``?fieldValidation=Strict`` with unknown fields."""
    fields = ", ".join(unknown_field_warning(path) for path in paths)
    return f"{kind} in version {json.dumps(version)} cannot be handled as a {kind}: strict decoding error: {fields}"


# --- paths -----------------------------------------------------------------------------------------


def _child(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _index(path: str, index: int) -> str:
    return f"{path}[{index}]"


# --- pruning ---------------------------------------------------------------------------------------


def prune(obj: dict[str, Any], schema: Schema) -> dict[str, Any]:
    """A copy of the object without the fields that the schema does not specify."""
    result, _ = _prune_root(obj, schema)
    return result


def unknown_fields(obj: dict[str, Any], schema: Schema) -> list[str]:
    """The paths that :func:`prune` drops, e.g. ``["spec.foo", "spec.items[0].bar"]``.

    These are the paths of ``unknown field "spec.foo"`` in warnings and strict errors.
    """
    _, dropped = _prune_root(obj, schema)
    return dropped


def prune_and_default(obj: dict[str, Any], schema: Schema) -> tuple[dict[str, Any], list[str]]:
    """:func:`apply_defaults` of :func:`prune`, and what :func:`unknown_fields` reports, in one pass.

    A write needs all three; the pruned copy is already private, so it is defaulted in place
    instead of being pruned twice and copied once more.
    """
    result, dropped = _prune_root(obj, schema)
    _default(result, schema)
    return result, dropped


def _prune_root(obj: dict[str, Any], schema: Schema) -> tuple[dict[str, Any], list[str]]:
    dropped: list[str] = []
    # The root is always a resource: apiVersion, kind, metadata are implicitly specified.
    result = _prune_object(obj, schema, "", dropped, embedded=True)
    return result, dropped


def _prune_value(value: Any, schema: Schema, path: str, dropped: list[str]) -> Any:
    if schema.get("x-kubernetes-int-or-string"):
        return clone(value)
    if isinstance(value, dict):
        embedded = bool(schema.get("x-kubernetes-embedded-resource"))
        return _prune_object(value, schema, path, dropped, embedded=embedded)
    if isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, Mapping):
            return [_prune_value(item, items, _index(path, i), dropped) for i, item in enumerate(value)]
        return clone(value)
    return value


def _prune_object(
    value: dict[str, Any], schema: Schema, path: str, dropped: list[str], *, embedded: bool
) -> dict[str, Any]:
    properties: Mapping[str, Any] = schema.get("properties") or {}
    additional = schema.get("additionalProperties")
    preserve = schema.get("x-kubernetes-preserve-unknown-fields") is True
    result: dict[str, Any] = {}
    for key, item in value.items():
        child = _child(path, key)
        if embedded and key in ("apiVersion", "kind"):
            result[key] = clone(item)
        elif embedded and key == "metadata" and isinstance(item, dict):
            result[key] = _prune_metadata(item, child, dropped)
        elif key in properties and isinstance(properties[key], Mapping):
            result[key] = _prune_value(item, properties[key], child, dropped)
        elif isinstance(additional, Mapping):
            result[key] = _prune_value(item, additional, child, dropped)
        elif additional is True or preserve:
            result[key] = clone(item)
        else:
            dropped.append(child)
    return result


def _prune_metadata(meta: dict[str, Any], path: str, dropped: list[str]) -> dict[str, Any]:
    """Metadata is ObjectMeta whatever the schema says: its unknown fields are dropped."""
    result: dict[str, Any] = {}
    for key, item in meta.items():
        if key in OBJECT_META_FIELDS:
            result[key] = clone(item)
        else:
            dropped.append(_child(path, key))
    return result


# --- defaulting ------------------------------------------------------------------------------------


def apply_defaults(obj: dict[str, Any], schema: Schema) -> dict[str, Any]:
    """A copy of the object with the schema's defaults for absent fields, at all levels.

    As in the apiserver, a ``null`` of a non-nullable field counts as absent: it is
    replaced by the default if there is one, or removed if there is none.
    Defaults are themselves defaulted deeper (a defaulted ``{}`` gets its own defaults).
    """
    result: dict[str, Any] = clone(obj)
    _default(result, schema)
    return result


def _default(value: Any, schema: Schema) -> None:
    if isinstance(value, dict):
        properties: Mapping[str, Any] = schema.get("properties") or {}
        additional = schema.get("additionalProperties")
        for key in list(value):
            sub = properties.get(key, additional if key not in properties else None)
            if isinstance(sub, Mapping) and value[key] is None and not sub.get("nullable"):
                if "default" in sub:
                    value[key] = clone(sub["default"])
                else:
                    del value[key]
        for key, sub in properties.items():
            if key not in value and isinstance(sub, Mapping) and "default" in sub:
                value[key] = clone(sub["default"])
        for key, item in value.items():
            sub = properties.get(key, additional)
            if isinstance(sub, Mapping):
                _default(item, sub)
    elif isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, Mapping):
            for i, item in enumerate(value):
                if item is None and not items.get("nullable") and "default" in items:
                    value[i] = clone(items["default"])
                _default(value[i], items)


# --- validation ------------------------------------------------------------------------------------


def validate(obj: dict[str, Any], schema: Schema) -> list[FieldCause]:
    """All violations of the schema by the object, as the apiserver reports them.

    Call it on the pruned and defaulted object, as the apiserver does.
    """
    return _validate(obj, schema, "")


def _type_name(value: Any) -> str:
    """The JSON type of a value, as the validator names it in messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _is_number(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _type_matches(value: Any, expected: str) -> bool:
    actual = _type_name(value)
    if expected == "number":
        return actual in ("integer", "number")
    if expected == "integer":  # 2.0 is an integer in JSON, though not 2.5
        return actual == "integer" or (actual == "number" and float(value).is_integer())
    return actual == expected


def _json_equal(a: Any, b: Any) -> bool:
    """JSON equality: booleans are not numbers, and 1 equals 1.0."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if _is_number(a) and _is_number(b):
        return bool(a == b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and bool(a == b)


_INT_OR_STRING = ({"type": "integer"}, {"type": "string"})


def _validate(value: Any, schema: Schema, path: str) -> list[FieldCause]:
    if value is None and schema.get("nullable"):
        return []
    if schema.get("x-kubernetes-int-or-string"):
        # The apiserver validates int-or-string as anyOf: [integer, string].
        if not (_type_matches(value, "integer") or isinstance(value, str)):
            return _validate_any_of(value, _INT_OR_STRING, path)
    elif isinstance(schema.get("type"), str) and not _type_matches(value, schema["type"]):
        kind = _type_name(value)
        rule = f"must be of type {schema['type']}: {json.dumps(kind)}"
        return [_type_invalid(path, kind, _in_body(path, rule))]

    causes: list[FieldCause] = []
    causes += _validate_junctors(value, schema, path)
    if isinstance(value, dict):
        causes += _validate_object(value, schema, path)
    elif isinstance(value, list):
        causes += _validate_array(value, schema, path)
    elif isinstance(value, str):
        causes += _validate_string(value, schema, path)
    elif _is_number(value):
        causes += _validate_number(value, schema, path)
    enum = schema.get("enum")
    if isinstance(enum, list) and not any(_json_equal(value, allowed) for allowed in enum):
        causes.append(_not_supported(path, value, enum))
    return causes


def _validate_junctors(value: Any, schema: Schema, path: str) -> list[FieldCause]:
    causes: list[FieldCause] = []
    all_of = schema.get("allOf")
    if isinstance(all_of, list) and all_of:
        results = [_validate(value, sub, path) for sub in all_of]
        failed = [result for result in results if result]
        for result in failed:
            causes += result
        if failed:
            suffix = ". None validated" if len(failed) == len(all_of) else ""
            rule = f"{json.dumps(path)} must validate all the schemas (allOf){suffix}"
            causes.append(_invalid("", "", rule))
    any_of = schema.get("anyOf")
    if isinstance(any_of, list) and any_of:
        causes += _validate_any_of(value, any_of, path)
    one_of = schema.get("oneOf")
    if isinstance(one_of, list) and one_of:
        results = [_validate(value, sub, path) for sub in one_of]
        valid = sum(1 for result in results if not result)
        if valid != 1:
            found = "Found none valid" if valid == 0 else f"Found {valid} valid alternatives"
            rule = f"{json.dumps(path)} must validate one and only one schema (oneOf). {found}"
            causes.append(_invalid("", "", rule))
            if valid == 0:
                causes += _fewest(results)
    negated = schema.get("not")
    if isinstance(negated, Mapping) and not _validate(value, negated, path):
        causes.append(_invalid("", "", f"{json.dumps(path)} must not validate the schema (not)"))
    return causes


def _validate_any_of(value: Any, branches: Sequence[Schema], path: str) -> list[FieldCause]:
    """Either no errors, or the anyOf error plus those of the branch that failed least."""
    results = [_validate(value, sub, path) for sub in branches]
    if any(not result for result in results):
        return []
    rule = f"{json.dumps(path)} must validate at least one schema (anyOf)"
    return [_invalid("", "", rule), *_fewest(results)]


def _fewest(results: Sequence[list[FieldCause]]) -> list[FieldCause]:
    """The errors of the branch that failed least (the first of equals), reported with anyOf/oneOf."""
    return min(results, key=len)


def _validate_object(value: dict[str, Any], schema: Schema, path: str) -> list[FieldCause]:
    causes: list[FieldCause] = []
    count = len(value)
    max_props = schema.get("maxProperties")
    if isinstance(max_props, int) and count > max_props:
        causes.append(_too_many(path, count, max_props))
    min_props = schema.get("minProperties")
    if isinstance(min_props, int) and count < min_props:
        causes.append(_invalid(path, count, _in_body(path, f"should have at least {min_props} properties")))
    for key in schema.get("required") or ():
        if key not in value:
            causes.append(_required(_child(path, key)))
    if schema.get("x-kubernetes-embedded-resource"):
        for key in ("apiVersion", "kind"):
            if not value.get(key):
                causes.append(_required(_child(path, key), "must not be empty"))
    properties: Mapping[str, Any] = schema.get("properties") or {}
    additional = schema.get("additionalProperties")
    for key, item in value.items():
        sub = properties.get(key)
        if sub is None and isinstance(additional, Mapping):
            sub = additional
        if isinstance(sub, Mapping):
            causes += _validate(item, sub, _child(path, key))
        elif additional is False and key not in properties:
            child = _child(path, key)
            causes.append(_forbidden(child, _in_body(child, "is a forbidden property")))
    return causes


def _validate_array(value: list[Any], schema: Schema, path: str) -> list[FieldCause]:
    causes: list[FieldCause] = []
    max_items = schema.get("maxItems")
    if isinstance(max_items, int) and len(value) > max_items:
        causes.append(_too_many(path, len(value), max_items))
    min_items = schema.get("minItems")
    if isinstance(min_items, int) and len(value) < min_items:
        causes.append(_invalid(path, len(value), _in_body(path, f"should have at least {min_items} items")))
    if schema.get("uniqueItems") and _has_duplicates(value):
        causes.append(_invalid(path, "", _in_body(path, "shouldn't contain duplicates")))
    items = schema.get("items")
    if isinstance(items, Mapping):
        for i, item in enumerate(value):
            causes += _validate(item, items, _index(path, i))
    causes += _validate_list_type(value, schema, path)
    return causes


def _has_duplicates(values: Sequence[Any]) -> bool:
    return any(_json_equal(values[i], values[j]) for i in range(len(values)) for j in range(i))


def _validate_list_type(value: list[Any], schema: Schema, path: str) -> list[FieldCause]:
    """``x-kubernetes-list-type``: a set has unique items, a map has unique key tuples."""
    list_type = schema.get("x-kubernetes-list-type")
    causes: list[FieldCause] = []
    if list_type == "set":
        for i, item in enumerate(value):
            if any(_json_equal(item, earlier) for earlier in value[:i]):
                causes.append(_duplicate(_index(path, i), item))
    elif list_type == "map":
        keys = list(schema.get("x-kubernetes-list-map-keys") or ())
        seen: list[dict[str, Any]] = []
        for i, item in enumerate(value):
            if not isinstance(item, dict):
                continue
            key = {k: item[k] for k in keys if k in item}
            if any(_json_equal(key, earlier) for earlier in seen):
                causes.append(_duplicate(_index(path, i), key))
            seen.append(key)
    return causes


def _validate_string(value: str, schema: Schema, path: str) -> list[FieldCause]:
    causes: list[FieldCause] = []
    max_len = schema.get("maxLength")
    if isinstance(max_len, int) and len(value) > max_len:
        causes.append(_too_long(path, max_len))
    min_len = schema.get("minLength")
    if isinstance(min_len, int) and len(value) < min_len:
        causes.append(_invalid(path, value, _in_body(path, f"should be at least {min_len} chars long")))
    pattern = schema.get("pattern")
    if isinstance(pattern, str) and re.search(pattern, value) is None:
        causes.append(_invalid(path, value, _in_body(path, f"should match '{pattern}'")))
    fmt = schema.get("format")
    if isinstance(fmt, str) and fmt in _FORMATS and not _FORMATS[fmt](value):
        rule = f"must be of type {fmt}: {json.dumps(value)}"
        causes.append(_type_invalid(path, value, _in_body(path, rule)))
    return causes


def _validate_number(value: float | int, schema: Schema, path: str) -> list[FieldCause]:
    causes: list[FieldCause] = []
    maximum = schema.get("maximum")
    if _is_number(maximum):
        if schema.get("exclusiveMaximum") and value >= maximum:
            causes.append(_invalid(path, value, _in_body(path, f"should be less than {_go_number(maximum)}")))
        elif value > maximum:
            rule = f"should be less than or equal to {_go_number(maximum)}"
            causes.append(_invalid(path, value, _in_body(path, rule)))
    minimum = schema.get("minimum")
    if _is_number(minimum):
        if schema.get("exclusiveMinimum") and value <= minimum:
            rule = f"should be greater than {_go_number(minimum)}"
            causes.append(_invalid(path, value, _in_body(path, rule)))
        elif value < minimum:
            rule = f"should be greater than or equal to {_go_number(minimum)}"
            causes.append(_invalid(path, value, _in_body(path, rule)))
    multiple = schema.get("multipleOf")
    if _is_number(multiple) and multiple > 0:
        quotient = value / multiple
        if not math.isclose(quotient, round(quotient), rel_tol=0, abs_tol=1e-9):
            rule = f"should be a multiple of {_go_number(multiple)}"
            causes.append(_invalid(path, value, _in_body(path, rule)))
    return causes


# --- string formats (those the apiserver checks for CRDs; others are accepted as-is) ---------------

_DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:?\d{2})?$")
_UUID = re.compile(r"^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$")
_LABEL = r"[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_HOSTNAME = re.compile(rf"^(?=.{{1,253}}$){_LABEL}(\.{_LABEL})*\.?$")
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+$")
_MAC = re.compile(r"^([0-9A-Fa-f]{2}[:-]){5}[0-9A-Fa-f]{2}$")
_DURATION = re.compile(r"^([+-]?(\d+(\.\d*)?|\.\d+)\s*(ns|us|µs|ms|s|m|h|d|w|[a-z]+)\s*)+$")


def _is_date_time(value: str) -> bool:
    if not _DATE_TIME.match(value):
        return False
    try:
        datetime.datetime.fromisoformat(value.replace("z", "Z").replace("t", "T").replace(" ", "T"))
    except ValueError:
        return False
    return True


def _is_date(value: str) -> bool:
    try:
        datetime.date.fromisoformat(value)
    except ValueError:
        return False
    return re.fullmatch(r"\d{4}-\d{2}-\d{2}", value) is not None


def _is_byte(value: str) -> bool:
    try:
        base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def _is_ip(version: int) -> Any:
    def check(value: str) -> bool:
        try:
            return ipaddress.ip_address(value).version == version
        except ValueError:
            return False

    return check


def _is_cidr(value: str) -> bool:
    try:
        ipaddress.ip_network(value, strict=False)
    except ValueError:
        return False
    return "/" in value


_FORMATS: dict[str, Any] = {
    "date-time": _is_date_time,
    "datetime": _is_date_time,
    "date": _is_date,
    "byte": _is_byte,
    "uuid": lambda v: bool(_UUID.match(v)),
    "hostname": lambda v: bool(_HOSTNAME.match(v)),
    "email": lambda v: bool(_EMAIL.match(v)),
    "ipv4": _is_ip(4),
    "ipv6": _is_ip(6),
    "cidr": _is_cidr,
    "mac": lambda v: bool(_MAC.match(v)),
    "duration": lambda v: bool(_DURATION.match(v)),
}


# --- CRD schema checks -----------------------------------------------------------------------------


def validate_crd_schema(
    schema: Any,
    path: str = "spec.versions[0].schema.openAPIV3Schema",
) -> list[FieldCause]:
    """The basic structural checks of a CRD version's schema, with the apiserver's messages."""
    if schema is None:
        return [_required(path, "schemas are required")]
    if not isinstance(schema, Mapping):
        return [_invalid(path, _type_name(schema), "must be an object")]
    causes: list[FieldCause] = []
    root_type = schema.get("type")
    if not root_type:
        causes.append(_required(_child(path, "type"), "must not be empty at the root"))
    elif root_type != "object":
        causes.append(_invalid(_child(path, "type"), root_type, "must be object at the root"))
    metadata = (schema.get("properties") or {}).get("metadata")
    if isinstance(metadata, Mapping):
        extra = set(metadata.get("properties") or {}) - {"name", "generateName"}
        if extra or set(metadata) - {"type", "properties", "description"}:
            causes.append(
                _forbidden(
                    f"{path}.properties[metadata]",
                    "must not specify anything other than name and generateName, but metadata is implicitly specified",
                )
            )
    causes += _check_node(schema, path)
    return causes


def _check_node(schema: Schema, path: str, *, in_junctor: bool = False) -> list[FieldCause]:
    causes: list[FieldCause] = []
    kind = schema.get("type")
    if kind is not None and kind not in _TYPES:
        causes.append(_not_supported(_child(path, "type"), kind, _TYPES))
    if schema.get("x-kubernetes-preserve-unknown-fields") is False:
        causes.append(
            _invalid(_child(path, "x-kubernetes-preserve-unknown-fields"), False, "must be true or undefined")
        )
    if schema.get("uniqueItems") is True:
        detail = "uniqueItems cannot be set to true since the runtime complexity becomes quadratic"
        causes.append(_forbidden(_child(path, "uniqueItems"), detail))
    if "$ref" in schema:
        causes.append(_forbidden(_child(path, "$ref"), "$ref is not supported"))
    properties = schema.get("properties")
    additional = schema.get("additionalProperties")
    if properties and additional not in (None, False):
        causes.append(
            _forbidden(_child(path, "additionalProperties"), "additionalProperties and properties are mutual exclusive")
        )
    if isinstance(properties, Mapping):
        for key, sub in properties.items():
            sub_path = f"{path}.properties[{key}]"
            if not isinstance(sub, Mapping):
                causes.append(_invalid(sub_path, _type_name(sub), "must be an object"))
                continue
            if not in_junctor and not sub.get("type") and not _is_type_exempt(sub):
                detail = "must not be empty for specified object fields"
                causes.append(_required(_child(sub_path, "type"), detail))
            causes += _check_node(sub, sub_path, in_junctor=in_junctor)
    if kind == "array" and not in_junctor and not isinstance(schema.get("items"), Mapping):
        causes.append(_required(_child(path, "items"), "must be specified"))
    items = schema.get("items")
    if isinstance(items, Mapping):
        if not in_junctor and not items.get("type") and not _is_type_exempt(items):
            detail = "must not be empty for specified array items"
            causes.append(_required(_child(path, "items.type"), detail))
        causes += _check_node(items, _child(path, "items"), in_junctor=in_junctor)
    if isinstance(additional, Mapping):
        if not in_junctor and not additional.get("type") and not _is_type_exempt(additional):
            causes.append(
                _required(
                    _child(path, "additionalProperties.type"), "must not be empty for specified additionalProperties"
                )
            )
        causes += _check_node(additional, _child(path, "additionalProperties"), in_junctor=in_junctor)
    for junctor in ("allOf", "anyOf", "oneOf"):
        for i, sub in enumerate(schema.get(junctor) or ()):
            if isinstance(sub, Mapping):
                causes += _check_node(sub, f"{path}.{junctor}[{i}]", in_junctor=True)
    if isinstance(schema.get("not"), Mapping):
        causes += _check_node(schema["not"], _child(path, "not"), in_junctor=True)
    return causes


def _is_type_exempt(schema: Schema) -> bool:
    """Nodes that may go without a type in a structural schema."""
    return bool(schema.get("x-kubernetes-int-or-string") or schema.get("x-kubernetes-preserve-unknown-fields"))
