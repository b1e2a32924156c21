"""The Swagger 2.0 document in the protobuf form that kubectl asks ``/openapi/v2`` for.

client-go requests ``application/com.github.proto-openapi.spec.v2@v1.0+protobuf`` and decodes the
body as the ``openapi.v2.Document`` message of the gnostic project's OpenAPI v2 schema (no JSON
fallback). This encoder writes that message from the JSON form of :mod:`kopf_sim.http.swagger`: the
parts that kubectl reads (definitions with their vendor extensions, paths, operations, parameters,
responses, security). Values of free form (defaults, examples, enums, vendor extensions) travel as
YAML text in ``openapi.v2.Any``, as gnostic encodes them.
"""

from __future__ import annotations

import functools
import json
import struct
from collections.abc import Iterable, Mapping
from typing import Any

import yaml

__all__ = ["CONTENT_TYPE", "encode_document"]

CONTENT_TYPE = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
ACCEPTED = "application/com.github.proto-openapi.spec.v2"

_VARINT, _FIXED64, _BYTES = 0, 1, 2


# -- The wire format -------------------------------------------------------------------------------------


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # negative int64s as ten bytes of two's complement
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _key(number: int, wire_type: int) -> bytes:
    return _varint(number << 3 | wire_type)


def _message(number: int, data: bytes) -> bytes:
    """A length-delimited field (messages, strings), present even when empty."""
    return _key(number, _BYTES) + _varint(len(data)) + data


def _string(number: int, value: Any) -> bytes:
    return _message(number, str(value).encode()) if value not in (None, "") else b""


def _strings(number: int, values: Iterable[Any] | None) -> bytes:
    return b"".join(_message(number, str(v).encode()) for v in values or ())


def _bool(number: int, value: Any) -> bytes:
    return _key(number, _VARINT) + b"\x01" if value else b""


def _int(number: int, value: Any) -> bytes:
    return _key(number, _VARINT) + _varint(int(value)) if isinstance(value, int) and value else b""


def _double(number: int, value: Any) -> bytes:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value:
        return b""
    return _key(number, _FIXED64) + struct.pack("<d", float(value))


def _any(value: Any) -> bytes:
    """``openapi.v2.Any``: the value as YAML text (field 2)."""
    return _any_of_json(json.dumps(value))


@functools.lru_cache(maxsize=1024)
def _any_of_json(text: str) -> bytes:
    """The same values recur throughout a document (group-version-kinds, patch strategies): YAML them once."""
    return _string(2, yaml.safe_dump(json.loads(text), default_flow_style=False, sort_keys=False))


def _extensions(number: int, obj: Mapping[str, Any]) -> bytes:
    """The ``x-`` keys as repeated ``NamedAny`` (name 1, value 2)."""
    return b"".join(
        _message(number, _string(1, k) + _message(2, _any(v))) for k, v in obj.items() if k.startswith("x-")
    )


def _named(number: int, mapping: Mapping[str, Any], encode: Any) -> bytes:
    """A map as repeated ``Named*`` messages (name 1, value 2), in the map's order."""
    return b"".join(_message(number, _string(1, name) + _message(2, encode(value))) for name, value in mapping.items())


# -- The messages ----------------------------------------------------------------------------------------


def encode_document(doc: Mapping[str, Any]) -> bytes:
    """``openapi.v2.Document``."""
    info = doc.get("info") or {}
    out = _string(1, doc.get("swagger", "2.0"))
    out += _message(
        2, _string(1, info.get("title")) + _string(2, info.get("version")) + _string(3, info.get("description"))
    )
    out += _message(8, _named(2, doc.get("paths") or {}, _path_item))
    out += _message(9, _named(1, doc.get("definitions") or {}, _schema))
    for requirement in doc.get("security") or []:
        out += _message(12, _named(1, requirement, lambda scopes: _strings(1, scopes)))
    if doc.get("securityDefinitions"):
        out += _message(13, _named(1, doc["securityDefinitions"], _security_definition))
    out += _extensions(16, doc)
    return out


def _security_definition(definition: Mapping[str, Any]) -> bytes:
    api_key = (
        _string(1, definition.get("type"))
        + _string(2, definition.get("name"))
        + _string(3, definition.get("in"))
        + _string(4, definition.get("description"))
    )
    return _message(2, api_key)  # the apiKey member of the oneof


def _path_item(item: Mapping[str, Any]) -> bytes:
    out = b""
    for number, method in (
        (2, "get"),
        (3, "put"),
        (4, "post"),
        (5, "delete"),
        (6, "options"),
        (7, "head"),
        (8, "patch"),
    ):
        if method in item:
            out += _message(number, _operation(item[method]))
    out += b"".join(_message(9, _parameters_item(p)) for p in item.get("parameters") or [])
    return out + _extensions(10, item)


def _operation(operation: Mapping[str, Any]) -> bytes:
    out = (
        _strings(1, operation.get("tags"))
        + _string(2, operation.get("summary"))
        + _string(3, operation.get("description"))
        + _string(5, operation.get("operationId"))
        + _strings(6, operation.get("produces"))
        + _strings(7, operation.get("consumes"))
    )
    out += b"".join(_message(8, _parameters_item(p)) for p in operation.get("parameters") or [])
    out += _message(9, _named(1, operation.get("responses") or {}, _response_value))
    out += _strings(10, operation.get("schemes")) + _bool(11, operation.get("deprecated"))
    return out + _extensions(13, operation)


def _parameters_item(parameter: Mapping[str, Any]) -> bytes:
    """``ParametersItem`` -> ``Parameter`` -> a body parameter, or a query/path parameter."""
    if parameter.get("in") == "body":
        body = (
            _string(1, parameter.get("description"))
            + _string(2, parameter.get("name"))
            + _string(3, "body")
            + _bool(4, parameter.get("required"))
            + _message(5, _schema(parameter.get("schema") or {}))
            + _extensions(6, parameter)
        )
        return _message(1, _message(1, body))
    if parameter.get("in") == "path":
        sub = (
            _bool(1, parameter.get("required"))
            + _string(2, "path")
            + _string(3, parameter.get("description"))
            + _string(4, parameter.get("name"))
            + _string(5, parameter.get("type"))
            + _bool(19, parameter.get("uniqueItems"))
            + _extensions(22, parameter)
        )
        return _message(1, _message(2, _message(4, sub)))
    sub = (
        _bool(1, parameter.get("required"))
        + _string(2, parameter.get("in"))
        + _string(3, parameter.get("description"))
        + _string(4, parameter.get("name"))
        + _string(6, parameter.get("type"))
        + _bool(20, parameter.get("uniqueItems"))
        + _extensions(23, parameter)
    )
    return _message(1, _message(2, _message(3, sub)))


def _response_value(response: Mapping[str, Any]) -> bytes:
    """``ResponseValue`` -> ``Response`` (description 1, schema 2 as ``SchemaItem``)."""
    out = _string(1, response.get("description"))
    if "schema" in response:
        out += _message(2, _message(1, _schema(response["schema"])))
    return _message(1, out + _extensions(5, response))


def _schema(schema: Mapping[str, Any]) -> bytes:
    """``openapi.v2.Schema``."""
    out = (
        _string(1, schema.get("$ref"))
        + _string(2, schema.get("format"))
        + _string(3, schema.get("title"))
        + _string(4, schema.get("description"))
    )
    if "default" in schema:
        out += _message(5, _any(schema["default"]))
    out += (
        _double(6, schema.get("multipleOf"))
        + _double(7, schema.get("maximum"))
        + _bool(8, schema.get("exclusiveMaximum"))
        + _double(9, schema.get("minimum"))
        + _bool(10, schema.get("exclusiveMinimum"))
        + _int(11, schema.get("maxLength"))
        + _int(12, schema.get("minLength"))
        + _string(13, schema.get("pattern"))
        + _int(14, schema.get("maxItems"))
        + _int(15, schema.get("minItems"))
        + _bool(16, schema.get("uniqueItems"))
        + _int(17, schema.get("maxProperties"))
        + _int(18, schema.get("minProperties"))
        + _strings(19, schema.get("required"))
    )
    out += b"".join(_message(20, _any(value)) for value in schema.get("enum") or [])
    additional = schema.get("additionalProperties")
    if isinstance(additional, Mapping):
        out += _message(21, _message(1, _schema(additional)))
    elif isinstance(additional, bool):
        out += _message(21, _key(2, _VARINT) + (b"\x01" if additional else b"\x00"))
    kind = schema.get("type")
    if kind:
        out += _message(22, _strings(1, kind if isinstance(kind, list) else [kind]))
    items = schema.get("items")
    if isinstance(items, Mapping):
        out += _message(23, _message(1, _schema(items)))
    out += b"".join(_message(24, _schema(sub)) for sub in schema.get("allOf") or [])
    if "properties" in schema:
        out += _message(25, _named(1, schema["properties"], _schema))
    out += _string(26, schema.get("discriminator")) + _bool(27, schema.get("readOnly"))
    if "example" in schema:
        out += _message(30, _any(schema["example"]))
    return out + _extensions(31, schema)
