"""CRD validation rules in-process: the checks at CRD creation, evaluation details, ratcheting and the cache."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from kopf_sim.cel import programs, rules
from kopf_sim.kube.errors import ApiError
from kopf_sim.kube.resources import ResourceType
from kopf_sim.store.cluster import Cluster

CRD: dict[str, Any] = yaml.safe_load(Path(__file__).with_name("cel_widgets.yaml").read_text())
SPEC = {"minReplicas": 1, "maxReplicas": 2, "ports": [{"name": "http", "port": 80}]}


def crd_with(spec_schema: dict[str, Any], name: str = "gadgets") -> dict[str, Any]:
    crd = copy.deepcopy(CRD)
    crd["metadata"]["name"] = f"{name}.cel.example"
    crd["spec"]["names"] = {"plural": name, "singular": name[:-1], "kind": name[:-1].capitalize()}
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"] = spec_schema
    return crd


def crds(cluster: Cluster) -> ResourceType:
    return cluster.resource("apiextensions.k8s.io", "v1", "customresourcedefinitions")


def rejection(cluster: Cluster, crd: dict[str, Any]) -> list[str]:
    with pytest.raises(ApiError) as info:
        cluster.create(crds(cluster), None, crd)
    assert info.value.code == 422
    with pytest.raises(ApiError, match="not found"):
        cluster.get(crds(cluster), None, crd["metadata"]["name"])
    return [f"{c['field']}: {c['message']}" for c in info.value.details["causes"]]


def widget(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "cel.example/v1", "kind": "Gadget", "metadata": {"name": name}, "spec": spec}


RULE_PATH = "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0]"


def test_an_undeclared_reference_rejects_the_crd(cluster: Cluster) -> None:
    causes = rejection(
        cluster, crd_with({"type": "object", "x-kubernetes-validations": [{"rule": "self.size() > sise"}]})
    )
    assert causes == [
        f"{RULE_PATH}.rule: Invalid value: "
        'apiextensions.ValidationRule{Rule:"self.size() > sise", Message:"", MessageExpression:"", '
        'Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:"", OptionalOldSelf:(*bool)(nil)}: '
        "compilation failed: ERROR: <input>:1:15: undeclared reference to 'sise' (in container '')\n"
        " | self.size() > sise\n"
        " | ..............^"
    ]


def test_an_unknown_function_rejects_the_crd(cluster: Cluster) -> None:
    causes = rejection(cluster, crd_with({"type": "object", "x-kubernetes-validations": [{"rule": "self.isSortd()"}]}))
    assert "undeclared reference to 'isSortd'" in causes[0]


def test_a_bad_message_expression_and_reason_reject_the_crd(cluster: Cluster) -> None:
    entry = {"rule": "true", "messageExpression": "'a' +", "reason": "FieldValueWrong"}
    causes = rejection(cluster, crd_with({"type": "object", "x-kubernetes-validations": [entry]}))
    assert causes[0].startswith(f"{RULE_PATH}.messageExpression: Invalid value: apiextensions.ValidationRule{{")
    assert "messageExpression compilation failed: ERROR: <input>:1:6: Syntax error" in causes[0]
    assert causes[1] == (
        f'{RULE_PATH}.reason: Unsupported value: "FieldValueWrong": supported values: "FieldValueDuplicate", '
        '"FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired"'
    )


def test_a_rule_over_an_unbounded_list_exceeds_the_cost_budget(cluster: Cluster) -> None:
    items = {"type": "array", "items": {"type": "string"}}
    rule = {"rule": "self.all(x, self.exists(y, x == y))"}
    causes = rejection(
        cluster, crd_with({"type": "object", "properties": {"tags": {**items, "x-kubernetes-validations": [rule]}}})
    )
    assert len(causes) == 1
    assert causes[0].startswith(
        "spec.validation.openAPIV3Schema.properties[spec].properties[tags].x-kubernetes-validations[0].rule: "
        "Forbidden: estimated rule cost exceeds budget by factor of "
    )
    assert causes[0].endswith(
        "x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, "
        "and strings are declared)"
    )
    bounded = {**items, "maxItems": 100, "x-kubernetes-validations": [rule]}
    cluster.create(crds(cluster), None, crd_with({"type": "object", "properties": {"tags": bounded}}))


def test_old_self_correlates_keyed_list_items_only(cluster: Cluster) -> None:
    items = {"type": "object", "x-kubernetes-validations": [{"rule": "self == oldSelf"}]}
    schema = {"type": "object", "properties": {"ports": {"type": "array", "maxItems": 4, "items": items}}}
    causes = rejection(cluster, crd_with(schema))
    assert causes[0].endswith(
        "oldSelf cannot be used on the uncorrelatable portion of the schema within .spec.ports[*]"
    )
    keyed = {"type": "array", "maxItems": 4, "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]}
    items["properties"] = {"name": {"type": "string"}, "port": {"type": "integer"}}
    items["required"] = ["name"]
    items["x-kubernetes-validations"] = [{"rule": "self.port == oldSelf.port", "message": "ports are immutable"}]
    schema = {"type": "object", "properties": {"ports": {**keyed, "items": items}}}
    cluster.create(crds(cluster), None, crd_with(schema))
    gadgets = cluster.resource("cel.example", "v1", "gadgets")
    stored = copy.deepcopy(
        cluster.create(gadgets, "default", widget("g", ports=[{"name": "a", "port": 1}, {"name": "b", "port": 2}]))
    )
    stored["spec"]["ports"] = [{"name": "c", "port": 3}, {"name": "b", "port": 2}]  # correlated by name
    stored = copy.deepcopy(cluster.update(gadgets, "default", "g", stored))
    stored["spec"]["ports"] = [{"name": "b", "port": 4}]
    with pytest.raises(ApiError, match=r'spec.ports\[0\]: Invalid value: "object": ports are immutable'):
        cluster.update(gadgets, "default", "g", stored)


def test_an_evaluation_error_is_reported_on_the_rules_field(cluster: Cluster) -> None:
    schema = {
        "type": "object",
        "properties": {
            "ratio": {"type": "number"},
            "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        },
        "x-kubernetes-validations": [
            {"rule": "self.ratio > 0.5"},
            {"rule": "!has(self.extra) || self.extra.missing == 1"},
        ],
    }
    cluster.create(crds(cluster), None, crd_with(schema))
    gadgets = cluster.resource("cel.example", "v1", "gadgets")
    cluster.create(gadgets, "default", widget("g1", ratio=1))  # an integer in a number field is a double in CEL
    with pytest.raises(ApiError) as info:
        cluster.create(gadgets, "default", widget("g2", ratio=1, extra={}))
    assert str(info.value).endswith('is invalid: spec: Invalid value: "object": no such key: missing')


def test_a_type_error_leaves_the_rules_unchecked(cluster: Cluster) -> None:
    schema = {
        "type": "object",
        "properties": {"size": {"type": "integer"}},
        "x-kubernetes-validations": [{"rule": "self.size > 0"}],
    }
    cluster.create(crds(cluster), None, crd_with(schema))
    with pytest.raises(ApiError) as info:
        cluster.create(cluster.resource("cel.example", "v1", "gadgets"), "default", widget("g", size="x"))
    assert [c["reason"] for c in info.value.details["causes"]] == ["FieldValueTypeInvalid", "FieldValueInvalid"]
    assert info.value.details["causes"][1]["message"].endswith(
        "some validation rules were not checked because the object was invalid; "
        "correct the existing errors to complete validation"
    )


def test_an_unchanged_value_is_not_held_against_a_new_rule(cluster: Cluster) -> None:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {"size": {"type": "integer"}, "color": {"type": "string"}},
    }
    crd = copy.deepcopy(cluster.create(crds(cluster), None, crd_with(schema)))
    gadgets = cluster.resource("cel.example", "v1", "gadgets")
    stored = copy.deepcopy(cluster.create(gadgets, "default", widget("g", size=50, color="red")))
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["size"][
        "x-kubernetes-validations"
    ] = [{"rule": "self <= 10", "message": "too big"}]
    cluster.update(crds(cluster), None, crd["metadata"]["name"], crd)
    gadgets = cluster.resource("cel.example", "v1", "gadgets")
    stored["spec"]["color"] = "blue"
    stored = copy.deepcopy(cluster.update(gadgets, "default", "g", stored))  # the size did not change: ratcheted
    stored["spec"]["size"] = 51
    with pytest.raises(ApiError, match=r'spec\.size: Invalid value: "integer": too big'):
        cluster.update(gadgets, "default", "g", stored)


def test_rules_are_compiled_once_per_crd_generation(cluster: Cluster, monkeypatch: pytest.MonkeyPatch) -> None:
    compiled: list[str] = []
    original = programs.compile_expression

    def counting(source: str, variables: Any) -> Any:
        compiled.append(source)
        return original(source, variables)

    monkeypatch.setattr(rules, "compile_expression", counting)
    crd = copy.deepcopy(
        cluster.create(
            crds(cluster), None, crd_with(CRD["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"])
        )
    )
    at_creation = len(compiled)
    gadgets = cluster.resource("cel.example", "v1", "gadgets")
    for index in range(5):
        cluster.create(gadgets, "default", widget(f"g{index}", **SPEC))
    first_generation = len(compiled) - at_creation
    assert first_generation == 17  # the 15 rules of the schema and their 2 message expressions, once
    for index in range(5):
        cluster.create(gadgets, "default", widget(f"h{index}", **SPEC))
    assert len(compiled) - at_creation == first_generation
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["mode"]["maxLength"] = 9
    cluster.update(crds(cluster), None, crd["metadata"]["name"], crd)
    del compiled[:]
    for index in range(5):
        cluster.create(cluster.resource("cel.example", "v1", "gadgets"), "default", widget(f"i{index}", **SPEC))
    assert len(compiled) == 17
