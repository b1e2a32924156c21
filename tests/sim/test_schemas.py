"""The apiserver's handling of CRD structural schemas: pruning, defaulting, validation, messages."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kopf_sim.writes.schemas import (
    FieldCause,
    apply_defaults,
    invalid_message,
    prune,
    strict_decoding_message,
    unknown_field_warning,
    unknown_fields,
    validate,
    validate_crd_schema,
)


def obj(spec: Any) -> dict[str, Any]:
    return {"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "metadata": {"name": "ex1"}, "spec": spec}


def spec_schema(**props: Any) -> dict[str, Any]:
    return {"type": "object", "properties": {"spec": {"type": "object", "properties": props}}}


def causes_of(value: Any, schema: dict[str, Any]) -> list[str]:
    """Validate ``spec.x`` and render the causes as the apiserver's error list does."""
    return [str(c) for c in validate(obj({"x": value}), spec_schema(x=schema))]


# --- pruning ---------------------------------------------------------------------------------------

NESTED = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "items": {"type": "array", "items": {"type": "object", "properties": {"a": {"type": "string"}}}},
                "labels": {
                    "type": "object",
                    "additionalProperties": {"type": "object", "properties": {"v": {"type": "string"}}},
                },
                "free": {
                    "type": "object",
                    "x-kubernetes-preserve-unknown-fields": True,
                    "properties": {"strict": {"type": "object", "properties": {"k": {"type": "string"}}}},
                },
                "port": {"x-kubernetes-int-or-string": True},
                "template": {
                    "type": "object",
                    "x-kubernetes-embedded-resource": True,
                    "properties": {"spec": {"type": "object", "properties": {"z": {"type": "integer"}}}},
                },
            },
        },
        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
    },
}


def test_prune_keeps_known_fields_and_root_resource_fields() -> None:
    body = obj({"name": "n"}) | {"status": {"anything": {"deep": [1]}}}
    assert prune(body, NESTED) == body
    assert unknown_fields(body, NESTED) == []


def test_prune_drops_unknown_fields_at_all_levels() -> None:
    body = obj(
        {
            "name": "n",
            "extra": 1,
            "items": [{"a": "x", "b": "y"}, {"c": 1}],
            "labels": {"one": {"v": "1", "w": "2"}},
        }
    ) | {"junk": True}
    assert prune(body, NESTED) == obj({"name": "n", "items": [{"a": "x"}, {}], "labels": {"one": {"v": "1"}}})
    assert unknown_fields(body, NESTED) == [
        "spec.extra",
        "spec.items[0].b",
        "spec.items[1].c",
        "spec.labels.one.w",
        "junk",
    ]


def test_prune_does_not_mutate_the_argument() -> None:
    body = obj({"name": "n", "extra": {"a": 1}})
    before = copy.deepcopy(body)
    result = prune(body, NESTED)
    assert body == before
    result["spec"]["name"] = "changed"
    assert body == before


def test_prune_preserve_unknown_fields_keeps_unknown_but_prunes_specified() -> None:
    body = obj({"free": {"anything": {"goes": 1}, "strict": {"k": "v", "dropped": 2}}})
    assert prune(body, NESTED)["spec"]["free"] == {"anything": {"goes": 1}, "strict": {"k": "v"}}
    assert unknown_fields(body, NESTED) == ["spec.free.strict.dropped"]


def test_prune_int_or_string_keeps_value_as_is() -> None:
    body = obj({"port": {"odd": 1}})
    assert prune(body, NESTED) == body


def test_prune_embedded_resource_keeps_apiversion_kind_metadata() -> None:
    template = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "labels": {"a": "b"}, "bad": 1},
        "spec": {"z": 1, "y": 2},
        "other": 3,
    }
    body = obj({"template": template})
    assert prune(body, NESTED)["spec"]["template"] == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "labels": {"a": "b"}},
        "spec": {"z": 1},
    }
    assert unknown_fields(body, NESTED) == [
        "spec.template.metadata.bad",
        "spec.template.spec.y",
        "spec.template.other",
    ]


def test_prune_root_metadata_is_objectmeta() -> None:
    body = obj({}) | {"metadata": {"name": "n", "namespace": "ns", "finalizers": ["f"], "unknown": 1}}
    assert prune(body, NESTED)["metadata"] == {"name": "n", "namespace": "ns", "finalizers": ["f"]}
    assert unknown_fields(body, NESTED) == ["metadata.unknown"]


def test_prune_leaves_mistyped_values_for_validation() -> None:
    body = obj({"items": "not-a-list", "labels": [1, 2]})
    assert prune(body, NESTED) == body


def test_prune_root_preserve_unknown_fields() -> None:
    schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    body = obj({"anything": 1}) | {"more": [1]}
    assert prune(body, schema) == body


# --- defaulting ------------------------------------------------------------------------------------

DEFAULTS = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "default": {},
            "properties": {
                "replicas": {"type": "integer", "default": 1},
                "mode": {"type": "string", "default": "auto"},
                "nullable": {"type": "string", "nullable": True, "default": "d"},
                "nested": {
                    "type": "object",
                    "default": {},
                    "properties": {"deep": {"type": "boolean", "default": True}},
                },
                "items": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "default": {"k": "item-default"},
                        "properties": {"k": {"type": "string"}, "w": {"type": "integer", "default": 7}},
                    },
                },
                "map": {
                    "type": "object",
                    "additionalProperties": {
                        "type": "object",
                        "properties": {"v": {"type": "string", "default": "mv"}},
                    },
                },
                "list": {"type": "array", "default": ["a"], "items": {"type": "string"}},
            },
        },
    },
}


def test_defaults_fill_absent_fields_recursively() -> None:
    result = apply_defaults(obj({}), DEFAULTS)
    assert result["spec"] == {
        "replicas": 1,
        "mode": "auto",
        "nullable": "d",
        "nested": {"deep": True},
        "list": ["a"],
    }


def test_defaults_fill_an_absent_parent_and_then_its_children() -> None:
    body = obj({})
    del body["spec"]
    assert apply_defaults(body, DEFAULTS)["spec"]["nested"] == {"deep": True}


def test_defaults_keep_given_values() -> None:
    given = {"replicas": 3, "mode": "manual", "nullable": "x", "nested": {"deep": False}, "list": []}
    assert apply_defaults(obj(given), DEFAULTS)["spec"] == given


def test_defaults_into_array_items_and_additional_properties() -> None:
    body = obj({"items": [{"k": "a"}, {"w": 1}, None], "map": {"x": {}, "y": {"v": "given"}}})
    spec = apply_defaults(body, DEFAULTS)["spec"]
    assert spec["items"] == [{"k": "a", "w": 7}, {"w": 1}, {"k": "item-default", "w": 7}]
    assert spec["map"] == {"x": {"v": "mv"}, "y": {"v": "given"}}


def test_defaults_replace_null_of_non_nullable_fields_and_drop_null_without_default() -> None:
    schema = spec_schema(
        a={"type": "string", "default": "A"},
        b={"type": "string"},
        c={"type": "string", "nullable": True, "default": "C"},
    )
    spec = apply_defaults(obj({"a": None, "b": None, "c": None}), schema)["spec"]
    assert spec == {"a": "A", "c": None}


def test_defaults_do_not_mutate_the_argument_nor_share_the_default() -> None:
    body = obj({})
    result1 = apply_defaults(body, DEFAULTS)
    result1["spec"]["list"].append("b")
    assert body == obj({})
    assert apply_defaults(body, DEFAULTS)["spec"]["list"] == ["a"]


# --- validation: types -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "type_", "name"),
    [
        ("string", "integer", "string"),
        (1.5, "integer", "number"),
        (True, "integer", "boolean"),
        ("1", "number", "string"),
        (1, "string", "integer"),
        ({}, "string", "object"),
        ([], "object", "array"),
        ({}, "array", "object"),
        (0, "boolean", "integer"),
        (None, "string", "null"),
    ],
)
def test_type_mismatch(value: Any, type_: str, name: str) -> None:
    causes = validate(obj({"x": value}), spec_schema(x={"type": type_}))
    assert causes == [
        FieldCause(
            "FieldValueTypeInvalid",
            f'Invalid value: "{name}": spec.x in body must be of type {type_}: "{name}"',
            "spec.x",
        )
    ]


@pytest.mark.parametrize(
    ("value", "type_"),
    [
        (1, "integer"),
        (2.0, "integer"),
        (1, "number"),
        (1.5, "number"),
        ("s", "string"),
        (False, "boolean"),
        ({}, "object"),
        ([], "array"),
    ],
)
def test_type_match(value: Any, type_: str) -> None:
    assert causes_of(value, {"type": type_}) == []


def test_nullable_accepts_null() -> None:
    assert causes_of(None, {"type": "string", "nullable": True}) == []


def test_type_error_stops_further_checks() -> None:
    assert len(causes_of("s", {"type": "integer", "minimum": 5, "enum": [1]})) == 1


def test_int_or_string_accepts_both() -> None:
    assert causes_of(80, {"x-kubernetes-int-or-string": True}) == []
    assert causes_of("http", {"x-kubernetes-int-or-string": True}) == []


def test_int_or_string_rejects_others_as_anyof() -> None:
    assert causes_of(True, {"x-kubernetes-int-or-string": True}) == [
        '<nil>: Invalid value: "": "spec.x" must validate at least one schema (anyOf)',
        'spec.x: Invalid value: "boolean": spec.x in body must be of type integer: "boolean"',
    ]


# --- validation: keywords --------------------------------------------------------------------------


def test_required() -> None:
    schema = {
        "type": "object",
        "properties": {"spec": {"type": "object", "required": ["a", "b"]}},
        "required": ["spec"],
    }
    assert [str(c) for c in validate(obj({"b": 1}), schema)] == ["spec.a: Required value"]
    body = obj({})
    del body["spec"]
    assert validate(body, schema) == [FieldCause("FieldValueRequired", "Required value", "spec")]


def test_enum_strings() -> None:
    assert validate(obj({"x": "c"}), spec_schema(x={"type": "string", "enum": ["a", "b"]})) == [
        FieldCause("FieldValueNotSupported", 'Unsupported value: "c": supported values: "a", "b"', "spec.x")
    ]
    assert causes_of("a", {"type": "string", "enum": ["a", "b"]}) == []


def test_enum_numbers_and_booleans_are_not_confused() -> None:
    assert causes_of(3, {"type": "integer", "enum": [1, 2]}) == [
        'spec.x: Unsupported value: 3: supported values: "1", "2"'
    ]
    assert causes_of(1, {"enum": [True]}) == ['spec.x: Unsupported value: 1: supported values: "true"']
    assert causes_of(1.0, {"enum": [1]}) == []


@pytest.mark.parametrize(
    ("schema", "value", "rule"),
    [
        ({"maximum": 10}, 11, "should be less than or equal to 10"),
        ({"maximum": 10, "exclusiveMaximum": True}, 10, "should be less than 10"),
        ({"minimum": 1}, 0, "should be greater than or equal to 1"),
        ({"minimum": 1.5, "exclusiveMinimum": True}, 1.5, "should be greater than 1.5"),
        ({"multipleOf": 5}, 12, "should be a multiple of 5"),
        ({"multipleOf": 0.5}, 1.2, "should be a multiple of 0.5"),
    ],
)
def test_numeric_limits(schema: dict[str, Any], value: Any, rule: str) -> None:
    from kopf_sim.writes.schemas import _go_number

    causes = validate(obj({"x": value}), spec_schema(x={"type": "number", **schema}))
    message = f"Invalid value: {_go_number(value)}: spec.x in body {rule}"
    assert causes == [FieldCause("FieldValueInvalid", message, "spec.x")]


@pytest.mark.parametrize(
    ("schema", "value"),
    [
        ({"maximum": 10}, 10),
        ({"minimum": 1}, 1),
        ({"maximum": 10, "exclusiveMaximum": True}, 9.99),
        ({"multipleOf": 5}, 15),
        ({"multipleOf": 0.1}, 0.3),
    ],
)
def test_numeric_limits_met(schema: dict[str, Any], value: Any) -> None:
    assert causes_of(value, {"type": "number", **schema}) == []


def test_max_length_is_too_long() -> None:
    assert validate(obj({"x": "abcd"}), spec_schema(x={"type": "string", "maxLength": 3})) == [
        FieldCause("FieldValueTooLong", "Too long: may not be more than 3 bytes", "spec.x")
    ]
    assert causes_of("ab", {"type": "string", "maxLength": 1}) == ["spec.x: Too long: may not be more than 1 byte"]
    assert causes_of("äöü", {"type": "string", "maxLength": 3}) == []  # characters, not bytes


def test_min_length() -> None:
    assert causes_of("ab", {"type": "string", "minLength": 3}) == [
        'spec.x: Invalid value: "ab": spec.x in body should be at least 3 chars long'
    ]


def test_pattern() -> None:
    assert causes_of("abc", {"type": "string", "pattern": "^[0-9]+$"}) == [
        "spec.x: Invalid value: \"abc\": spec.x in body should match '^[0-9]+$'"
    ]
    assert causes_of("x123y", {"type": "string", "pattern": "[0-9]+"}) == []  # unanchored: a search


@pytest.mark.parametrize(
    ("fmt", "good", "bad"),
    [
        ("date-time", "2024-01-02T03:04:05Z", "yesterday"),
        ("date-time", "2024-01-02T03:04:05.123+02:00", "2024-13-02T03:04:05Z"),
        ("date", "2024-01-02", "2024-1-2"),
        ("byte", "aGVsbG8=", "not base64!"),
        ("uuid", "123e4567-e89b-12d3-a456-426614174000", "123"),
        ("ipv4", "10.0.0.1", "10.0.0.256"),
        ("ipv6", "::1", "10.0.0.1"),
        ("cidr", "10.0.0.0/8", "10.0.0.0"),
        ("hostname", "example.com", "-bad-.com"),
        ("email", "a@b.c", "nobody"),
        ("mac", "00:11:22:33:44:55", "00:11"),
        ("duration", "1h30m", "soon!"),
    ],
)
def test_string_formats(fmt: str, good: str, bad: str) -> None:
    schema = spec_schema(x={"type": "string", "format": fmt})
    assert validate(obj({"x": good}), schema) == []
    assert validate(obj({"x": bad}), schema) == [
        FieldCause(
            "FieldValueTypeInvalid", f'Invalid value: "{bad}": spec.x in body must be of type {fmt}: "{bad}"', "spec.x"
        )
    ]


def test_numeric_and_unknown_formats_are_not_checked() -> None:
    # The apiserver does not range-check int32/int64 (nor any unknown format).
    assert causes_of(2**40, {"type": "integer", "format": "int32"}) == []
    assert causes_of(2**70, {"type": "integer", "format": "int64"}) == []
    assert causes_of("whatever", {"type": "string", "format": "no-such-format"}) == []


def test_max_items_is_too_many() -> None:
    assert validate(obj({"x": [1, 2, 3]}), spec_schema(x={"type": "array", "maxItems": 2})) == [
        FieldCause("FieldValueTooMany", "Too many: 3: must have at most 2 items", "spec.x")
    ]


def test_min_items() -> None:
    assert causes_of([1], {"type": "array", "minItems": 2}) == [
        "spec.x: Invalid value: 1: spec.x in body should have at least 2 items"
    ]


def test_unique_items() -> None:
    assert causes_of([1, 2, 1], {"type": "array", "uniqueItems": True}) == [
        'spec.x: Invalid value: "": spec.x in body shouldn\'t contain duplicates'
    ]
    assert causes_of([1, True, "1"], {"type": "array", "uniqueItems": True}) == []


def test_max_properties_is_too_many() -> None:
    assert validate(obj({"x": {"a": 1, "b": 2}}), spec_schema(x={"type": "object", "maxProperties": 1})) == [
        FieldCause("FieldValueTooMany", "Too many: 2: must have at most 1 item", "spec.x")
    ]


def test_min_properties() -> None:
    assert causes_of({}, {"type": "object", "minProperties": 1}) == [
        "spec.x: Invalid value: 0: spec.x in body should have at least 1 properties"
    ]


def test_additional_properties_schema() -> None:
    schema = {"type": "object", "additionalProperties": {"type": "integer"}}
    assert causes_of({"a": 1, "b": "two"}, schema) == [
        'spec.x.b: Invalid value: "string": spec.x.b in body must be of type integer: "string"'
    ]


def test_additional_properties_false() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": False}
    assert causes_of({"a": 1, "b": 2}, schema) == ["spec.x.b: Forbidden: spec.x.b in body is a forbidden property"]


def test_nested_paths_in_arrays() -> None:
    schema = {
        "type": "array",
        "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}},
    }
    assert causes_of([{"name": "a"}, {}, {"name": 1}], schema) == [
        "spec.x[1].name: Required value",
        'spec.x[2].name: Invalid value: "integer": spec.x[2].name in body must be of type string: "integer"',
    ]


# --- validation: junctors --------------------------------------------------------------------------


def test_all_of() -> None:
    schema = {"type": "integer", "allOf": [{"minimum": 1}, {"maximum": 5}]}
    assert causes_of(3, schema) == []
    assert causes_of(7, schema) == [
        "spec.x: Invalid value: 7: spec.x in body should be less than or equal to 5",
        '<nil>: Invalid value: "": "spec.x" must validate all the schemas (allOf)',
    ]


def test_all_of_none_validated() -> None:
    schema = {"allOf": [{"type": "string"}, {"type": "boolean"}]}
    assert (
        causes_of(1, schema)[-1] == '<nil>: Invalid value: "": "spec.x" must validate all the schemas '
        "(allOf). None validated"
    )


def test_any_of() -> None:
    schema = {"type": "object", "anyOf": [{"required": ["a"]}, {"required": ["b"]}]}
    assert causes_of({"b": 1}, schema) == []
    assert validate(obj({"x": {}}), spec_schema(x=schema)) == [
        FieldCause(
            "FieldValueInvalid", 'Invalid value: "": "spec.x" must validate at least one schema (anyOf)', "<nil>"
        ),
        FieldCause("FieldValueRequired", "Required value", "spec.x.a"),
    ]


def test_one_of_none_valid() -> None:
    schema = {"type": "object", "oneOf": [{"required": ["a"]}, {"required": ["b"]}]}
    assert causes_of({"c": 1}, schema) == [
        '<nil>: Invalid value: "": "spec.x" must validate one and only one schema (oneOf). Found none valid',
        "spec.x.a: Required value",
    ]


def test_one_of_several_valid() -> None:
    schema = {"type": "object", "oneOf": [{"required": ["a"]}, {"required": ["b"]}]}
    assert causes_of({"a": 1}, schema) == []
    assert causes_of({"a": 1, "b": 2}, schema) == [
        '<nil>: Invalid value: "": "spec.x" must validate one and only one schema (oneOf). Found 2 valid alternatives',
    ]


def test_not() -> None:
    schema = {"type": "string", "not": {"enum": ["forbidden"]}}
    assert causes_of("ok", schema) == []
    assert causes_of("forbidden", schema) == ['<nil>: Invalid value: "": "spec.x" must not validate the schema (not)']


# --- validation: list types and embedded resources -------------------------------------------------


def test_list_type_set_duplicates() -> None:
    schema = {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"}
    assert causes_of(["a", "b"], schema) == []
    assert validate(obj({"x": ["a", "b", "a"]}), spec_schema(x=schema)) == [
        FieldCause("FieldValueDuplicate", 'Duplicate value: "a"', "spec.x[2]")
    ]


def test_list_type_map_duplicate_keys() -> None:
    properties = {"name": {"type": "string"}, "port": {"type": "integer"}, "v": {"type": "string"}}
    schema = {
        "type": "array",
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["name", "port"],
        "items": {"type": "object", "properties": properties},
    }
    value = [{"name": "a", "port": 1, "v": "x"}, {"name": "a", "port": 2}, {"name": "a", "port": 1, "v": "y"}]
    assert causes_of(value, schema) == ['spec.x[2]: Duplicate value: {"name":"a","port":1}']


def test_embedded_resource_requires_apiversion_and_kind() -> None:
    schema = {"type": "object", "x-kubernetes-embedded-resource": True, "x-kubernetes-preserve-unknown-fields": True}
    assert causes_of({"apiVersion": "v1", "kind": "Pod"}, schema) == []
    assert causes_of({"metadata": {}}, schema) == [
        "spec.x.apiVersion: Required value: must not be empty",
        "spec.x.kind: Required value: must not be empty",
    ]


def test_root_metadata_constraints_from_the_schema() -> None:
    schema = {
        "type": "object",
        "properties": {"metadata": {"type": "object", "properties": {"name": {"type": "string", "enum": ["default"]}}}},
    }
    assert [str(c) for c in validate(obj({}), schema)] == [
        'metadata.name: Unsupported value: "ex1": supported values: "default"'
    ]


def test_validate_collects_all_causes_in_order() -> None:
    schema = spec_schema(a={"type": "integer"}, b={"type": "string", "maxLength": 1})
    assert [c.field for c in validate(obj({"a": "x", "b": "yy"}), schema)] == ["spec.a", "spec.b"]


# --- messages --------------------------------------------------------------------------------------


def test_invalid_message_single_cause() -> None:
    cause = FieldCause(
        "FieldValueTypeInvalid",
        'Invalid value: "string": spec.replicas in body must be of type integer: "string"',
        "spec.replicas",
    )
    assert invalid_message("KopfExample", "kopf.dev", "ex1", [cause]) == (
        'KopfExample.kopf.dev "ex1" is invalid: spec.replicas: Invalid value: "string": '
        'spec.replicas in body must be of type integer: "string"'
    )


def test_invalid_message_several_causes_and_core_group() -> None:
    causes = [
        FieldCause("FieldValueRequired", "Required value", "spec.a"),
        FieldCause("FieldValueRequired", "Required value", "spec.b"),
        FieldCause("FieldValueRequired", "Required value", "spec.a"),
    ]
    assert invalid_message("Pod", "", "p", causes) == (
        'Pod "p" is invalid: [spec.a: Required value, spec.b: Required value]'
    )


def test_cause_as_status_cause() -> None:
    cause = FieldCause("FieldValueRequired", "Required value", "spec.a")
    assert cause.as_status_cause() == {"reason": "FieldValueRequired", "message": "Required value", "field": "spec.a"}


def test_unknown_field_texts() -> None:
    assert unknown_field_warning("spec.foo") == 'unknown field "spec.foo"'
    assert strict_decoding_message("KopfExample", "v1", ["spec.foo", "spec.items[0].bar"]) == (
        'KopfExample in version "v1" cannot be handled as a KopfExample: strict decoding error: '
        'unknown field "spec.foo", unknown field "spec.items[0].bar"'
    )


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1e21, "1e+21"),
        (2.0, "2"),
        (0.5, "0.5"),
        (1e-7, "1e-07"),
    ],
)
def test_numbers_are_rendered_as_go_does(value: float, text: str) -> None:
    assert causes_of(value, {"type": "number", "enum": [0]}) == [
        f'spec.x: Unsupported value: {text}: supported values: "0"'
    ]


# --- CRD schema checks -----------------------------------------------------------------------------

P = "spec.versions[0].schema.openAPIV3Schema"


def test_crd_schema_valid() -> None:
    assert validate_crd_schema(NESTED) == []
    assert validate_crd_schema(DEFAULTS) == []


def test_crd_schema_missing() -> None:
    assert validate_crd_schema(None) == [FieldCause("FieldValueRequired", "Required value: schemas are required", P)]


def test_crd_schema_root_type() -> None:
    assert [str(c) for c in validate_crd_schema({})] == [f"{P}.type: Required value: must not be empty at the root"]
    assert [str(c) for c in validate_crd_schema({"type": "string"})] == [
        f'{P}.type: Invalid value: "string": must be object at the root'
    ]


def test_crd_schema_custom_path() -> None:
    assert validate_crd_schema({}, "spec.versions[2].schema.openAPIV3Schema")[0].field == (
        "spec.versions[2].schema.openAPIV3Schema.type"
    )


def test_crd_schema_structural_problems() -> None:
    schema = {
        "type": "object",
        "properties": {
            "spec": {"properties": {"a": {"type": "array"}}},
            "b": {"type": "strin"},
            "c": {"type": "array", "items": {"properties": {}}, "uniqueItems": True},
            "d": {
                "type": "object",
                "properties": {"e": {"type": "string"}},
                "additionalProperties": {"type": "string"},
            },
            "f": {"type": "object", "x-kubernetes-preserve-unknown-fields": False},
            "g": {"x-kubernetes-int-or-string": True},
            "h": {"type": "object", "anyOf": [{"properties": {"i": {"minimum": 1}}}]},
        },
    }
    assert [str(c) for c in validate_crd_schema(schema)] == [
        f"{P}.properties[spec].type: Required value: must not be empty for specified object fields",
        f"{P}.properties[spec].properties[a].items: Required value: must be specified",
        f'{P}.properties[b].type: Unsupported value: "strin": supported values: '
        '"array", "boolean", "integer", "number", "object", "string"',
        f"{P}.properties[c].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime "
        "complexity becomes quadratic",
        f"{P}.properties[c].items.type: Required value: must not be empty for specified array items",
        f"{P}.properties[d].additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive",
        f"{P}.properties[f].x-kubernetes-preserve-unknown-fields: Invalid value: false: must be true or undefined",
    ]


def test_crd_schema_metadata_only_name_and_generate_name() -> None:
    ok = {
        "type": "object",
        "properties": {"metadata": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 10}}}},
    }
    assert validate_crd_schema(ok) == []
    bad = {
        "type": "object",
        "properties": {"metadata": {"type": "object", "properties": {"labels": {"type": "object"}}}},
    }
    assert [c.reason for c in validate_crd_schema(bad)] == ["FieldValueForbidden"]
    assert validate_crd_schema(bad)[0].field == f"{P}.properties[metadata]"
