"""Hypothesis strategies for objects of custom resources, and merge patches of them, from their CRDs' schemas.

The whole ``openAPIV3Schema`` is drawn from: ``spec`` and every other top-level field a user writes
(``data``, ``matchNamespace``...; not ``status``), with the values of :mod:`.values` (valid for the
schema, edge values first; :func:`~.values.misoperations` on request). Objects and patches shrink
towards the simplest: optional fields absent, zeros, short strings.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from hypothesis import strategies as st

from .values import from_schema, misoperations, patch_values

__all__ = ["CustomResource", "from_schema", "misoperations", "object_patches", "objects", "resources_in"]

JsonDict = dict[str, Any]

#: The top-level fields that are not the users' to write: the type, the metadata (drawn apart), the status.
NOT_FIELDS = frozenset({"apiVersion", "kind", "metadata", "status"})
#: Object-wide constraints: a patch of some fields could break them, so the whole object is replaced.
WHOLE = ("allOf", "anyOf", "oneOf", "not", "minProperties", "maxProperties", "additionalProperties")


def object_patches(schema: Mapping[str, Any], *, misuse: bool = False) -> st.SearchStrategy[JsonDict]:
    """JSON merge patches of an object that keep it valid, whatever valid value it had; never empty.

    Some of its fields get new values (each made exactly that value, see :func:`~.values.replacing`),
    optional ones may be removed (null). An object with object-wide constraints is replaced whole.
    ``misuse``: the new values are :func:`~.values.misoperations`.
    """
    properties: Mapping[str, Any] = schema.get("properties") or {}
    if not properties or any(key in schema for key in WHOLE):
        return patch_values(schema, misuse=misuse).filter(lambda patch: isinstance(patch, dict) and bool(patch))
    required = set(schema.get("required") or ())
    values: dict[str, st.SearchStrategy[Any]] = {}
    for name, sub in properties.items():
        value = patch_values(sub, misuse=misuse)
        if name in required:
            values[name] = value
        elif misuse:  # a misoperation is mostly a value to refuse, less often a field removed
            values[name] = st.one_of(value, value, st.none())
        else:  # removed first: the simplest change
            values[name] = st.one_of(st.none(), value)
    # Never empty (no filtering, which costs draws): one field for sure, the others maybe.
    return st.one_of(
        *(
            st.fixed_dictionaries({name: value}, optional={other: v for other, v in values.items() if other != name})
            for name, value in values.items()
        )
    )


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

    @property
    def fields(self) -> dict[str, Mapping[str, Any]]:
        """The schemas of the top-level fields that users write (``spec``, ``data``...; not ``status``)."""
        properties: Mapping[str, Any] = self.schema.get("properties") or {}
        return {name: sub for name, sub in properties.items() if name not in NOT_FIELDS and isinstance(sub, Mapping)}

    @property
    def required(self) -> frozenset[str]:
        """The top-level fields that every object must have."""
        return frozenset(str(name) for name in self.schema.get("required") or ()) - NOT_FIELDS

    def spec_strategy(self) -> st.SearchStrategy[Any]:
        """The ``spec`` of the objects, valid for the schema (an empty dict if the schema says nothing)."""
        spec_schema = self.fields.get("spec")
        if not spec_schema:
            return st.just({})
        return from_schema(spec_schema)

    def fields_strategy(
        self, spec: st.SearchStrategy[Any] | None = None, *, misuse: bool = False
    ) -> st.SearchStrategy[JsonDict]:
        """The top-level fields of an object: ``spec`` (always: ``spec``, the user's strategy for it, wins),
        the required ones, and the optional ones maybe. ``misuse``: the values are misoperations."""
        draw = misoperations if misuse else from_schema
        fields = self.fields
        spec_strategy = spec if spec is not None else (draw(fields["spec"]) if "spec" in fields else st.just({}))
        needed = {name: draw(sub) for name, sub in fields.items() if name in self.required and name != "spec"}
        optional = {name: draw(sub) for name, sub in fields.items() if name not in self.required and name != "spec"}
        if "spec" in fields or not fields or spec is not None:
            needed = {"spec": spec_strategy, **needed}
        return st.fixed_dictionaries(needed, optional=optional)

    def field_patches(self, *, misuse: bool = False) -> st.SearchStrategy[JsonDict] | None:
        """Merge patches of the top-level fields other than ``spec`` (None if there are none)."""
        others = {name: sub for name, sub in self.fields.items() if name != "spec"}
        if not others:
            return None
        root = {"type": "object", "properties": others, "required": sorted(self.required & others.keys())}
        return object_patches(root, misuse=misuse)


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
    misuse: bool = False,
) -> st.SearchStrategy[JsonDict]:
    """Whole objects of a custom resource (given as its CRD, or as :class:`CustomResource`).

    Every top-level field of the schema is drawn (see :meth:`CustomResource.fields_strategy`).
    ``spec``: the user's own strategy for the spec (by default: from the schema).
    ``names``: the names to choose from (few, so that sequences meet the same objects again).
    ``misuse``: the values are :func:`~.values.misoperations` (valid, but to be refused or survived).
    """
    custom = resource if isinstance(resource, CustomResource) else CustomResource.from_crd(resource)
    label_strategy = labels if labels is not None else st.just({})

    def build(name: str, fields: JsonDict, label_values: Mapping[str, str]) -> JsonDict:
        metadata: JsonDict = {"name": name}
        if custom.namespaced and namespace is not None:
            metadata["namespace"] = namespace
        if label_values:
            metadata["labels"] = dict(label_values)
        return {"apiVersion": custom.api_version, "kind": custom.kind, "metadata": metadata, **fields}

    return st.builds(build, st.sampled_from(list(names)), custom.fields_strategy(spec, misuse=misuse), label_strategy)
