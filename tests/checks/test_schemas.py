"""Objects and patches from a CRD's whole schema are accepted by the simulated apiserver's validation.

The schema has top-level fields besides ``spec`` (``data``, ``matchNamespace``), int-or-string,
anyOf/oneOf/allOf, additionalProperties, nested lists of objects with list-type maps and sets, formats,
patterns, bounds, lengths, counts, enums, required and nullable fields, an embedded resource.
"""

from __future__ import annotations

import json
from typing import Any

import hypothesis
import pytest
from hypothesis import strategies as st

from kopf_sim.store.cluster import Cluster
from kopf_sim.writes.schemas import validate
from pytest_kopf.strategies import CustomResource, from_schema, misoperations, objects, spec_patches
from pytest_kopf.strategies.values import replacing

SPEC: dict[str, Any] = {
    "type": "object",
    "required": ["replicas", "ports"],
    "properties": {
        "replicas": {"type": "integer", "minimum": 1, "maximum": 5},
        "ratio": {"type": "number", "minimum": 0, "maximum": 1, "exclusiveMaximum": True},
        "port": {"x-kubernetes-int-or-string": True},
        "maxSurge": {
            "x-kubernetes-int-or-string": True,
            "anyOf": [{"type": "integer", "minimum": 0}, {"type": "string", "pattern": "^[0-9]+%$"}],
        },
        "mode": {"type": "string", "enum": ["a", "b", "c"]},
        "image": {"type": "string", "minLength": 1, "maxLength": 20, "pattern": "^[a-z]+(:[0-9]+)?$"},
        "when": {"type": "string", "format": "date-time"},
        "address": {"type": "string", "format": "ipv4"},
        "name": {"type": "string", "maxLength": 63},
        "tags": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set", "maxItems": 4},
        "ports": {
            "type": "array",
            "minItems": 1,
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name", "protocol"],
            "items": {
                "type": "object",
                "required": ["name", "port"],
                "properties": {
                    "name": {"type": "string", "maxLength": 15},
                    "protocol": {"type": "string", "enum": ["TCP", "UDP"], "default": "TCP"},
                    "port": {"type": "integer", "minimum": 1, "maximum": 65535},
                },
            },
        },
        "backup": {
            "type": "object",
            "nullable": True,
            "properties": {"schedule": {"type": "string"}, "keep": {"type": "integer", "minimum": 0}},
            "oneOf": [{"required": ["schedule"]}, {"required": ["keep"]}],
        },
        "storage": {
            "type": "object",
            "properties": {"size": {"type": "string"}, "class": {"type": "string"}},
            "anyOf": [{"required": ["size"]}, {"required": ["class"]}],
        },
        "limits": {
            "type": "object",
            "properties": {"cpu": {"type": "integer"}},
            "allOf": [{"properties": {"cpu": {"minimum": 1}}}, {"properties": {"cpu": {"maximum": 8}}}],
        },
        "env": {"type": "object", "additionalProperties": {"type": "array", "items": {"type": "string"}}},
        "selector": {"type": "object", "minProperties": 1, "additionalProperties": {"type": "string"}},
        "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        "template": {
            "type": "object",
            "x-kubernetes-embedded-resource": True,
            "x-kubernetes-preserve-unknown-fields": True,
        },
        "rules": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "matches": {
                        "type": "array",
                        "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["key"],
                        "items": {
                            "type": "object",
                            "required": ["key"],
                            "properties": {
                                "key": {"type": "string", "enum": ["x", "y", "z"]},
                                "value": {"type": "integer"},
                            },
                        },
                    },
                },
            },
        },
        "flag": {"type": "boolean", "nullable": True},
        "even": {"type": "integer", "multipleOf": 2, "minimum": -4, "maximum": 10},
        "level": {"type": "integer", "exclusiveMinimum": True, "minimum": 0, "exclusiveMaximum": True, "maximum": 3},
    },
}
SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["data"],
    "properties": {
        "data": {"type": "object", "maxProperties": 3, "additionalProperties": {"type": "string", "maxLength": 5}},
        "matchNamespace": {"type": "string", "pattern": "^[a-z]([-a-z0-9]*[a-z0-9])?$", "maxLength": 63},
        "spec": SPEC,
        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
    },
}
CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.schemas.example"},
    "spec": {
        "group": "schemas.example",
        "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": SCHEMA},
            }
        ],
    },
}
RESOURCE = CustomResource.from_crd(CRD)
FIELD_PATCHES = RESOURCE.field_patches()
MISUSED_FIELD_PATCHES = RESOURCE.field_patches(misuse=True)
assert FIELD_PATCHES is not None and MISUSED_FIELD_PATCHES is not None
MERGE = "application/merge-patch+json"


@pytest.fixture(scope="module")
def cluster() -> Cluster:
    cluster = Cluster()
    cluster.create(cluster.resource("apiextensions.k8s.io", "v1", "customresourcedefinitions"), None, CRD)
    return cluster


def _create(cluster: Cluster, obj: dict[str, Any]) -> dict[str, Any]:
    rtype = cluster.resource("schemas.example", "v1", "widgets")
    return cluster.create(rtype, "default", obj, dry_run=True, field_validation="Strict")


@hypothesis.settings(max_examples=300)
@hypothesis.given(st.one_of(objects(RESOURCE, names=["w-0"]), objects(RESOURCE, names=["w-0"], misuse=True)))
def test_objects_from_the_whole_schema_are_accepted(cluster: Cluster, obj: dict[str, Any]) -> None:
    assert "data" in obj and "spec" in obj and "status" not in obj  # a required top-level field; never the status
    created = _create(cluster, obj)
    assert created["spec"]["ports"] and 1 <= created["spec"]["replicas"] <= 5


@hypothesis.settings(max_examples=100)
@hypothesis.given(
    objects(RESOURCE, names=["w-0"]),
    st.lists(
        st.one_of(
            spec_patches(RESOURCE).map(lambda patch: {"spec": patch}),
            spec_patches(RESOURCE, misuse=True).map(lambda patch: {"spec": patch}),
            FIELD_PATCHES,
            MISUSED_FIELD_PATCHES,
        ),
        min_size=1,
        max_size=6,
    ),
)
def test_patches_drawn_without_the_object_keep_it_valid(
    cluster: Cluster, obj: dict[str, Any], patches: list[dict[str, Any]]
) -> None:
    rtype = cluster.resource("schemas.example", "v1", "widgets")
    name = f"w-{len(list(cluster.objects(rtype.storage_key)))}"
    cluster.create(rtype, "default", {**obj, "metadata": {"name": name}}, field_validation="Strict")
    try:
        for patch in patches:
            cluster.patch(rtype, "default", name, patch, MERGE, field_validation="Strict")
    finally:
        cluster.delete(rtype, "default", name)


async def test_many_generated_objects_are_created_with_201_over_http(
    kopf_cluster: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the simulated apiserver's HTTP API, as users' actions create them in the checks."""
    drawn: list[dict[str, Any]] = []

    @hypothesis.settings(max_examples=150, database=None, derandomize=True)
    @hypothesis.given(st.one_of(objects(RESOURCE, names=["w"]), objects(RESOURCE, names=["w"], misuse=True)))
    def collect(obj: dict[str, Any]) -> None:
        drawn.append(obj)

    collect()
    await kopf_cluster.apply(CRD)
    statuses: list[int] = []
    exchange = kopf_cluster._exchange

    async def recorded(method: str, *args: Any) -> tuple[int, str, bytes]:
        status, reason, content = await exchange(method, *args)
        if method == "POST":
            statuses.append(status)
        return status, reason, content

    monkeypatch.setattr(kopf_cluster, "_exchange", recorded)
    for index, obj in enumerate(drawn):
        await kopf_cluster.create({**obj, "metadata": {**obj["metadata"], "name": f"w-{index}"}})
    assert len(drawn) >= 100 and statuses == [201] * len(drawn)


def test_edge_values_come_first_and_are_drawn_often() -> None:
    seen: dict[str, set[Any]] = {"replicas": set(), "mode": set(), "ports": set(), "ratio": set()}

    @hypothesis.settings(max_examples=100, database=None, derandomize=True)
    @hypothesis.given(from_schema(SPEC))
    def collect(spec: dict[str, Any]) -> None:
        seen["replicas"].add(spec["replicas"])
        seen["ports"].add(len(spec["ports"]))
        if "mode" in spec:
            seen["mode"].add(spec["mode"])
        if "ratio" in spec:
            seen["ratio"].add(spec["ratio"])

    collect()
    assert {1, 5} <= seen["replicas"]  # the declared bounds
    assert {"a", "c"} <= seen["mode"]  # the enum's ends
    assert {1, 3} <= seen["ports"]  # the fewest items and the most
    assert 0.0 in seen["ratio"] and 1.0 not in seen["ratio"]  # the inclusive bound; never the exclusive one
    small = {**SPEC, "properties": {key: SPEC["properties"][key] for key in ("replicas", "ports", "mode", "image")}}
    assert hypothesis.find(from_schema(small), lambda spec: True) == {
        "replicas": 1,
        "ports": [{"name": "", "protocol": "TCP", "port": 1}],  # a list-type map's keys are always there
    }  # the simplest: optional fields absent, the lowest bounds, empty strings, the enum's first value


def test_misoperations_are_valid_but_hazardous() -> None:
    names: set[str] = set()

    @hypothesis.settings(max_examples=200, database=None, derandomize=True)
    @hypothesis.given(misoperations(SPEC["properties"]["name"]), misoperations({"type": "integer"}))
    def collect(name: str, count: int) -> None:
        assert not validate(name, SPEC["properties"]["name"])  # type: ignore[arg-type]
        names.add(name)
        assert count in (0, -1) or -100 <= count <= 100

    collect()
    assert {"", "UPPER", "a/b", "x" * 63} & names  # an empty string, a non-DNS name, the longest allowed
    assert "x" * 64 not in names  # hazardous, but longer than the schema allows


def test_a_patch_replaces_nested_objects_whole() -> None:
    schema = SPEC["properties"]["backup"]
    assert replacing(schema, {"keep": 1}) == {"keep": 1, "schedule": None}
    assert replacing({"type": "object", "additionalProperties": {"type": "string"}}, {"b": "x"}) == {
        "b": "x",
        "a": None,
        "c": None,
        "d": None,
    }
    assert replacing(SPEC["properties"]["ports"], [{"name": "a", "port": 1}]) == [{"name": "a", "port": 1}]


def test_a_pattern_python_cannot_draw_from_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match=r"pattern .*specs="):
        hypothesis.find(from_schema({"type": "string", "pattern": "\\p{L}+"}), lambda value: True)


def test_the_top_level_fields_are_the_users_ones() -> None:
    assert set(RESOURCE.fields) == {"data", "matchNamespace", "spec"}
    assert RESOURCE.required == {"data"}
    assert json.dumps(sorted(RESOURCE.fields)) == '["data", "matchNamespace", "spec"]'
