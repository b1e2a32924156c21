"""Objects from CRD schemas are valid for the schema (the simulated apiserver accepts them); actions write code."""

from __future__ import annotations

from typing import Any

import hypothesis
import pytest
from hypothesis import strategies as st

from kopf_sim.kube import errors
from kopf_sim.store.cluster import Cluster
from pytest_kopf.strategies import Advance, CustomResource, Delete, PatchSpec, from_schema, objects, spec_patches

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "required": ["replicas", "image"],
            "properties": {
                "replicas": {"type": "integer", "minimum": 1, "maximum": 5},
                "image": {"type": "string", "pattern": "^[a-z]+:[0-9]$", "maxLength": 12},
                "ratio": {"type": "number", "minimum": 0, "maximum": 1},
                "mode": {"type": "string", "enum": ["a", "b"]},
                "when": {"type": "string", "format": "date-time"},
                "port": {"x-kubernetes-int-or-string": True},
                "tags": {"type": "array", "items": {"type": "string", "maxLength": 3}, "maxItems": 2},
                "env": {"type": "object", "additionalProperties": {"type": "string"}},
                "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "flag": {"type": "boolean", "nullable": True},
            },
        },
    },
}
CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "things.example.com"},
    "spec": {
        "group": "example.com",
        "scope": "Namespaced",
        "names": {"plural": "things", "singular": "thing", "kind": "Thing", "shortNames": ["th"]},
        "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": SCHEMA}}],
    },
}


@pytest.fixture(scope="module")
def cluster() -> Cluster:
    cluster = Cluster()
    cluster.create(cluster.resource("apiextensions.k8s.io", "v1", "customresourcedefinitions"), None, CRD)
    return cluster


@hypothesis.settings(max_examples=60)
@hypothesis.given(objects(CRD, names=["t-0", "t-1"]))
def test_generated_objects_are_accepted_by_the_apiserver(cluster: Cluster, obj: dict[str, Any]) -> None:
    spec = obj["spec"]
    assert 1 <= spec["replicas"] <= 5 and spec["image"]
    assert spec.get("mode", "a") in ("a", "b")
    cluster.create(
        cluster.resource("example.com", "v1", "things"), "default", obj, dry_run=True, field_validation="Strict"
    )


@hypothesis.settings(max_examples=60)
@hypothesis.given(spec_patches(CustomResource.from_crd(CRD)))
def test_spec_patches_keep_the_required_fields_and_are_never_empty(patch: dict[str, Any]) -> None:
    assert patch
    assert patch.get("replicas", 1) is not None and patch.get("image", "x") is not None


def test_the_resource_is_known_by_all_its_names() -> None:
    custom = CustomResource.from_crd(CRD)
    assert {"things", "things.example.com", "thing", "Thing", "th"} <= custom.names
    assert custom.api_version == "example.com/v1" and custom.namespaced


def test_a_user_strategy_replaces_the_schema() -> None:
    strategy = objects(CRD, spec=st.just({"replicas": 3, "image": "x:1"}))
    seen = set()

    @hypothesis.settings(max_examples=10)
    @hypothesis.given(strategy)
    def collect(obj: dict[str, Any]) -> None:
        seen.add(obj["spec"]["replicas"])

    collect()
    assert seen == {3}


def test_bad_schemas_values_are_refused_by_the_apiserver_too(cluster: Cluster) -> None:
    bad = {
        "apiVersion": "example.com/v1",
        "kind": "Thing",
        "metadata": {"name": "bad"},
        "spec": {"replicas": 9, "image": "x:1"},
    }
    with pytest.raises(errors.ApiError):
        cluster.create(cluster.resource("example.com", "v1", "things"), "default", bad, dry_run=True)


def test_from_schema_of_scalars() -> None:
    @hypothesis.settings(max_examples=30)
    @hypothesis.given(
        from_schema({"type": "integer", "minimum": 3, "maximum": 3}), from_schema({"type": "string", "enum": ["only"]})
    )
    def check(number: int, text: str) -> None:
        assert number == 3 and text == "only"

    check()


def test_actions_write_themselves_as_code() -> None:
    assert Advance(5.0).code() == "await kopf_cluster.sim.advance(5.0)"
    delete = Delete("things.example.com", "t-0")
    assert delete.code() == "await tolerate(kopf_cluster.delete('things.example.com', 't-0'))"
    patch = PatchSpec("things.example.com", "t-0", {"mode": None})
    assert patch.code() == "await tolerate(kopf_cluster.patch('things.example.com', 't-0', {'spec': {'mode': None}}))"
