"""The OpenAPI v2 (Swagger 2.0) document of the served resources: ``/openapi/v2``.

kubectl validates on the client what it cannot leave to the server: a ``kind: List`` (its items are
checked against the v2 definitions before they are split and sent), and so does Helm. It also has
``kubectl explain --output=plaintext-openapiv2``. The document is made from the same per-group
OpenAPI v3 documents as ``/openapi/v3`` (:mod:`kopf_sim.http.openapi`), converted: references point into
``definitions``, and whatever v2 cannot express is left out, as the apiserver does. Parts of schemas
that keep unknown fields (``x-kubernetes-preserve-unknown-fields``, and the built-in kinds, whose
schemas the simulator does not know in full) are published without their properties, so that the
client-side validation never rejects what the server accepts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kopf_sim.http.openapi import ServedKind, openapi_group_version

__all__ = ["swagger_document", "to_v2_schema"]

_V3_REF = "#/components/schemas/"
_V2_REF = "#/definitions/"
_DROPPED = frozenset({"nullable", "oneOf", "anyOf", "not", "x-kubernetes-validations"})


def swagger_document(kinds: Iterable[ServedKind], version: str) -> dict[str, Any]:
    """The whole Swagger 2.0 document: every group-version's definitions and paths in one."""
    kinds = list(kinds)
    definitions: dict[str, Any] = {}
    paths: dict[str, Any] = {}
    for group, group_version in sorted({(k.group, k.version) for k in kinds}):
        doc = openapi_group_version(kinds, group, group_version)
        if doc is None:
            continue
        for name, schema in doc["components"]["schemas"].items():
            definitions.setdefault(name, to_v2_schema(schema))
        for path, item in doc["paths"].items():
            paths[path] = _path_item(item)
    return {
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": version},
        "paths": dict(sorted(paths.items())),
        "definitions": dict(sorted(definitions.items())),
        "securityDefinitions": {
            "BearerToken": {
                "type": "apiKey",
                "name": "authorization",
                "in": "header",
                "description": "Bearer Token authentication",
            }
        },
        "security": [{"BearerToken": []}],
    }


def to_v2_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A v3 schema as a v2 one (references to definitions; no v3-only keywords; open objects stay open)."""
    if "$ref" in schema:
        return {"$ref": str(schema["$ref"]).replace(_V3_REF, _V2_REF)}
    result: dict[str, Any] = {}
    all_of = schema.get("allOf")
    if isinstance(all_of, list) and len(all_of) == 1 and "$ref" in all_of[0]:  # a described reference
        if schema.get("description"):
            result["description"] = schema["description"]
        result["$ref"] = str(all_of[0]["$ref"]).replace(_V3_REF, _V2_REF)
        return result
    open_object = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
    for key, value in schema.items():
        if key in _DROPPED or key == "allOf":
            continue
        if key == "properties":
            if not open_object:
                result[key] = {name: to_v2_schema(sub) for name, sub in value.items()}
        elif key == "items":
            if isinstance(value, Mapping):
                result[key] = to_v2_schema(value)
        elif key == "additionalProperties":
            result[key] = to_v2_schema(value) if isinstance(value, Mapping) else value
        elif key == "required" and open_object:
            continue
        elif key == "type" and schema.get("x-kubernetes-int-or-string"):
            continue  # either type: v2 cannot say so, and leaves it out
        else:
            result[key] = value
    if open_object:
        result.pop("additionalProperties", None)
    return result


def _path_item(item: Mapping[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for method, operation in item.items():
        if method == "parameters":
            result[method] = [_parameter(p) for p in operation]
        else:
            result[method] = _operation(operation)
    return result


def _operation(operation: Mapping[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    body = operation.get("requestBody")
    consumes = sorted((body or {}).get("content") or {})
    produces: list[str] = []
    responses: dict[str, Any] = {}
    for code, response in (operation.get("responses") or {}).items():
        content = response.get("content") or {}
        produces.extend(m for m in content if m not in produces)
        converted: dict[str, Any] = {"description": response.get("description", "")}
        if content:
            converted["schema"] = to_v2_schema(next(iter(content.values()))["schema"])
        responses[code] = converted
    for key in ("description", "operationId", "tags"):
        if key in operation:
            result[key] = operation[key]
    if consumes:
        result["consumes"] = consumes
    result["produces"] = produces or ["application/json"]
    result["schemes"] = ["https"]
    parameters = [_parameter(p) for p in operation.get("parameters") or []]
    if body is not None:
        media: Mapping[str, Any] = next(iter((body.get("content") or {}).values()), {})
        schema = media.get("schema") or {}
        parameters.insert(0, {"name": "body", "in": "body", "required": True, "schema": to_v2_schema(schema)})
    if parameters:
        result["parameters"] = parameters
    result["responses"] = responses
    for key, value in operation.items():
        if key.startswith("x-"):
            result[key] = value
    return result


def _parameter(parameter: Mapping[str, Any]) -> dict[str, Any]:
    schema = parameter.get("schema") or {}
    result = {k: parameter[k] for k in ("name", "in", "description", "required") if k in parameter}
    result["type"] = schema.get("type", "string")
    if schema.get("uniqueItems"):
        result["uniqueItems"] = True
    return result
