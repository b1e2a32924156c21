"""Hypothesis strategies for objects of custom resources, from their CRDs' OpenAPI v3 schemas.

Every value drawn is valid for the schema as the apiserver checks it (types, enums, formats,
minimum/maximum, lengths, required fields); ``x-kubernetes-preserve-unknown-fields`` without
properties becomes a small dict of scalars; optional fields come and go, so that handlers meet
their absence. Values shrink towards the simplest ones: empty optional fields, zeros, short strings.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from hypothesis import strategies as st

__all__ = ["CustomResource", "from_schema", "objects", "resources_in"]

JsonDict = dict[str, Any]

#: Bounds of the values where the schema gives none: small enough to read, enough to vary.
MAX_ITEMS = 3
MAX_STRING = 8
INT_BOUND = 100
_TEXT = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-", max_size=MAX_STRING)
_KEYS = st.sampled_from(["a", "b", "c", "d"])
_SCALARS = st.one_of(st.booleans(), st.integers(-INT_BOUND, INT_BOUND), _TEXT)
_FORMATS: Mapping[str, st.SearchStrategy[str]] = {
    "date-time": st.sampled_from(["2026-01-01T00:00:00Z", "2026-06-30T12:30:00Z"]),
    "date": st.sampled_from(["2026-01-01", "2026-06-30"]),
    "int-or-string": st.sampled_from(["1", "50%"]),
    "byte": st.sampled_from(["", "aGVsbG8="]),
    "uri": st.sampled_from(["http://example.com/", "https://example.com/a"]),
    "hostname": st.sampled_from(["example.com", "a.example.com"]),
    "email": st.sampled_from(["a@example.com"]),
    "uuid": st.sampled_from(["00000000-0000-4000-8000-000000000000"]),
    "duration": st.sampled_from(["1s", "1m", "1h"]),
}


def from_schema(schema: Mapping[str, Any]) -> st.SearchStrategy[Any]:
    """Values valid for an OpenAPI v3 schema (as of CRDs: structural, with the ``x-kubernetes-*`` extensions)."""
    strategy = _from_schema(schema)
    if schema.get("nullable"):
        strategy = st.one_of(st.none(), strategy)
    return strategy


def _from_schema(schema: Mapping[str, Any]) -> st.SearchStrategy[Any]:
    if schema.get("enum"):
        return st.sampled_from(list(schema["enum"]))
    if schema.get("x-kubernetes-int-or-string"):
        return st.one_of(st.integers(0, INT_BOUND), _strings(schema))
    for key in ("allOf", "oneOf", "anyOf"):  # the first alternative is valid on its own (structural schemas)
        if schema.get(key) and not schema.get("type"):
            return from_schema({**schema[key][0], **{k: v for k, v in schema.items() if k != key}})
    kind = schema.get("type")
    if kind == "object" or (kind is None and ("properties" in schema or "additionalProperties" in schema)):
        return _objects(schema)
    if kind == "array":
        items = schema.get("items") or {}
        low = int(schema.get("minItems", 0))
        high = int(schema.get("maxItems", max(low, MAX_ITEMS)))
        unique = bool(schema.get("uniqueItems")) or schema.get("x-kubernetes-list-type") == "set"
        return st.lists(
            from_schema(items),
            min_size=low,
            max_size=min(high, max(low, MAX_ITEMS)),
            unique_by=_json_key if unique else None,
        )
    if kind == "string":
        return _strings(schema)
    if kind == "integer":
        low, high = _bounds(schema, integer=True)
        return st.integers(low, high)
    if kind == "number":
        low, high = _bounds(schema, integer=False)
        return st.integers(math.ceil(low), math.floor(high)).map(float)
    if kind == "boolean":
        return st.booleans()
    if schema.get("x-kubernetes-preserve-unknown-fields"):
        return _SCALARS
    return _SCALARS


def _json_key(value: Any) -> str:
    import json

    return json.dumps(value, sort_keys=True)


def _objects(schema: Mapping[str, Any]) -> st.SearchStrategy[JsonDict]:
    properties: Mapping[str, Any] = schema.get("properties") or {}
    required = set(schema.get("required") or ())
    if properties:
        return st.fixed_dictionaries(
            {name: from_schema(sub) for name, sub in properties.items() if name in required},
            optional={name: from_schema(sub) for name, sub in properties.items() if name not in required},
        )
    extra = schema.get("additionalProperties")
    if isinstance(extra, Mapping):
        return st.dictionaries(_KEYS, from_schema(extra), max_size=MAX_ITEMS)
    if schema.get("x-kubernetes-preserve-unknown-fields") or extra is True:
        return st.dictionaries(_KEYS, _SCALARS, max_size=MAX_ITEMS)
    return st.just({})


def _strings(schema: Mapping[str, Any]) -> st.SearchStrategy[str]:
    fmt = schema.get("format")
    if isinstance(fmt, str) and fmt in _FORMATS:
        return _FORMATS[fmt]
    low = int(schema.get("minLength", 0))
    high = int(schema.get("maxLength", max(low, MAX_STRING)))
    pattern = schema.get("pattern")
    if isinstance(pattern, str):
        return st.from_regex(pattern, fullmatch=True).filter(lambda text: low <= len(text) <= high)
    return st.text(
        alphabet="abcdefghijklmnopqrstuvwxyz0123456789-", min_size=low, max_size=min(high, max(low, MAX_STRING))
    )


def _bounds(schema: Mapping[str, Any], *, integer: bool) -> tuple[int, int]:
    low = schema.get("minimum")
    high = schema.get("maximum")
    step = 1 if integer else 0
    low_value = math.ceil(low) if low is not None else (-INT_BOUND if high is None else math.floor(high) - INT_BOUND)
    high_value = math.floor(high) if high is not None else low_value + 2 * INT_BOUND
    if low is not None and schema.get("exclusiveMinimum") is True:
        low_value += step or 1
    if high is not None and schema.get("exclusiveMaximum") is True:
        high_value -= step or 1
    if low is None and high is None:
        low_value, high_value = -INT_BOUND, INT_BOUND
    return int(low_value), int(high_value)


@dataclasses.dataclass(frozen=True)
class CustomResource:
    """A custom resource as its CRD declares it: names, the served version, and that version's schema."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    schema: Mapping[str, Any]
    names: frozenset[str]

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"

    @property
    def qualified(self) -> str:
        """``plural.group``: how the plugin's cluster and kubectl name it unambiguously."""
        return f"{self.plural}.{self.group}"

    @classmethod
    def from_crd(cls, crd: Mapping[str, Any], version: str | None = None) -> CustomResource:
        spec = crd.get("spec") or {}
        names = spec.get("names") or {}
        versions = [v for v in spec.get("versions") or () if v.get("served", True)]
        if not versions:
            raise ValueError(f"The CRD {crd.get('metadata', {}).get('name')!r} serves no versions.")
        chosen = (
            next((v for v in versions if v.get("name") == version), None)
            if version
            else next((v for v in versions if v.get("storage")), versions[0])
        )
        if chosen is None:
            raise ValueError(f"The CRD {crd.get('metadata', {}).get('name')!r} does not serve the version {version!r}.")
        schema = (
            ((chosen.get("schema") or {}).get("openAPIV3Schema"))
            or ((spec.get("validation") or {}).get("openAPIV3Schema"))
            or {"type": "object"}
        )
        plural, group = str(names.get("plural", "")), str(spec.get("group", ""))
        aliases = {
            plural,
            f"{plural}.{group}",
            str(names.get("singular") or ""),
            str(names.get("kind") or ""),
            *(str(name) for name in names.get("shortNames") or ()),
            f"{plural}.{chosen['name']}.{group}",
        }
        return cls(
            group=group,
            version=str(chosen["name"]),
            plural=plural,
            kind=str(names.get("kind", "")),
            namespaced=spec.get("scope", "Namespaced") == "Namespaced",
            schema=schema,
            names=frozenset(alias for alias in aliases if alias),
        )

    def spec_strategy(self) -> st.SearchStrategy[Any]:
        """The ``spec`` of the objects, valid for the schema (an empty dict if the schema says nothing)."""
        spec_schema = (self.schema.get("properties") or {}).get("spec")
        if not spec_schema:
            return st.just({})
        return from_schema(spec_schema)


def resources_in(documents: Iterable[Mapping[str, Any]]) -> list[CustomResource]:
    """The custom resources of the CRDs among manifest documents."""
    return [
        CustomResource.from_crd(doc)
        for doc in documents
        if doc.get("kind") == "CustomResourceDefinition"
        and str(doc.get("apiVersion", "")).startswith("apiextensions.k8s.io/")
    ]


def objects(
    resource: CustomResource | Mapping[str, Any],
    *,
    names: Sequence[str] = ("obj-0", "obj-1"),
    namespace: str | None = "default",
    spec: st.SearchStrategy[Any] | None = None,
    labels: st.SearchStrategy[Mapping[str, str]] | None = None,
) -> st.SearchStrategy[JsonDict]:
    """Whole objects of a custom resource (given as its CRD, or as :class:`CustomResource`).

    ``spec``: the user's own strategy for the spec (by default: from the schema).
    ``names``: the names to choose from (few, so that sequences meet the same objects again).
    """
    custom = resource if isinstance(resource, CustomResource) else CustomResource.from_crd(resource)
    spec_strategy = spec if spec is not None else custom.spec_strategy()
    label_strategy = labels if labels is not None else st.just({})

    def build(name: str, spec_value: Any, label_values: Mapping[str, str]) -> JsonDict:
        metadata: JsonDict = {"name": name}
        if custom.namespaced and namespace is not None:
            metadata["namespace"] = namespace
        if label_values:
            metadata["labels"] = dict(label_values)
        return {"apiVersion": custom.api_version, "kind": custom.kind, "metadata": metadata, "spec": spec_value}

    return st.builds(build, st.sampled_from(list(names)), spec_strategy, label_strategy)
