import warnings
from collections.abc import Callable
from typing import Any

import pytest

import kopf
from kopf._core.intents import filters
from kopf._core.intents.handlers import ChangingHandler, ResourceHandler
from kopf._core.intents.matching import match, prematch


def body_with(
    *,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    spec: dict[str, Any] | None = None,
    name: str = "n1",
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": "ns1"}
    if labels is not None:
        metadata["labels"] = labels
    if annotations is not None:
        metadata["annotations"] = annotations
    return {"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "metadata": metadata, "spec": spec or {}}


def only_handler(registry: kopf.OperatorRegistry) -> ResourceHandler:
    handlers: list[ResourceHandler] = []
    for subregistry in registry.resource_registries:
        handlers.extend(subregistry.get_all_handlers())
    assert len(handlers) == 1
    return handlers[0]


def make(decorator: Callable[..., Any], *args: Any, **kwargs: Any) -> ResourceHandler:
    registry = kopf.OperatorRegistry()
    decorator(*args, registry=registry, **kwargs)(lambda **_: None)
    return only_handler(registry)


# Markers & combinators.


def test_markers() -> None:
    assert kopf.PRESENT is filters.MetaFilterToken.PRESENT
    assert kopf.ABSENT is filters.MetaFilterToken.ABSENT
    assert kopf.PRESENT is not kopf.ABSENT
    assert repr(kopf.PRESENT) == "kopf.PRESENT"
    assert repr(kopf.ABSENT) == "kopf.ABSENT"


def yes(*_: Any, **__: Any) -> bool:
    return True


def no(*_: Any, **__: Any) -> bool:
    return False


@pytest.mark.parametrize(
    ("combined", "expected"),
    [
        (kopf.not_(yes), False),
        (kopf.not_(no), True),
        (kopf.all_([yes, yes]), True),
        (kopf.all_([yes, no]), False),
        (kopf.all_([]), True),
        (kopf.any_([no, yes]), True),
        (kopf.any_([no, no]), False),
        (kopf.any_([]), False),
        (kopf.none_([no, no]), True),
        (kopf.none_([no, yes]), False),
        (kopf.none_([]), True),
        (kopf.not_(kopf.all_([yes, kopf.any_([no, kopf.none_([no])])])), False),
    ],
)
def test_combinators(combined: Callable[..., bool], expected: bool) -> None:
    assert combined(spec={}) is expected
    assert combined("value", spec={}) is expected


def test_combinators_pass_positional_values_and_kwargs_through() -> None:
    calls: list[tuple[Any, ...]] = []

    def remember(*args: Any, **kwargs: Any) -> bool:
        calls.append((args, kwargs))
        return True

    assert kopf.all_([remember, kopf.not_(kopf.not_(remember))])("v", spec={"a": 1})
    assert calls == [(("v",), {"spec": {"a": 1}})] * 2


def test_combinators_short_circuit() -> None:
    def explode(*_: Any, **__: Any) -> bool:
        raise AssertionError("must not be called")

    assert not kopf.all_([no, explode])()
    assert kopf.any_([yes, explode])()
    assert not kopf.none_([yes, explode])()


def test_documented_combinator_usage_on_labels_and_when() -> None:
    def whole_fn1(name: str, **_: Any) -> bool:
        return name.startswith("kopf-")

    def whole_fn2(spec: dict[str, Any], **_: Any) -> bool:
        return spec.get("field") == "value"

    def value_fn1(value: str, **_: Any) -> bool:
        return value.startswith("some")

    def value_fn2(value: str, **_: Any) -> bool:
        return value.endswith("label")

    handler = make(
        kopf.on.create,
        "kopfexamples",
        when=kopf.all_([whole_fn1, whole_fn2]),
        labels={"somelabel": kopf.all_([value_fn1, value_fn2])},
    )
    body = body_with(labels={"somelabel": "some-label"}, spec={"field": "value"}, name="kopf-1")
    assert match(handler, body=body, kwargs={"name": "kopf-1", "spec": body["spec"]})
    assert not match(handler, body=body, kwargs={"name": "other", "spec": body["spec"]})
    body2 = body_with(labels={"somelabel": "some-thing"}, spec={"field": "value"}, name="kopf-1")
    assert not match(handler, body=body2, kwargs={"name": "kopf-1", "spec": body2["spec"]})


# Single-value criteria.


@pytest.mark.parametrize(
    ("criterion", "value", "expected"),
    [
        (None, None, True),
        (None, "x", True),
        (kopf.PRESENT, "x", True),
        (kopf.PRESENT, "", True),  # empty strings are values too.
        (kopf.PRESENT, None, False),
        (kopf.ABSENT, None, True),
        (kopf.ABSENT, "", False),
        (kopf.ABSENT, "x", False),
        ("x", "x", True),
        ("x", "y", False),
        ("x", None, False),
        (123, 123, True),
        (True, True, True),
        ({"a": 1}, {"a": 1}, True),
        (lambda v, **_: v == "x", "x", True),
        (lambda v, **_: v == "x", "y", False),
        (lambda v, **_: v is None, None, True),
    ],
)
def test_match_value(criterion: Any, value: Any, expected: bool) -> None:
    assert filters.match_value(criterion, value, {}) is expected


def test_value_callbacks_get_the_value_positionally_and_kwargs() -> None:
    calls: list[tuple[Any, ...]] = []

    def check_value(*args: Any, **kwargs: Any) -> bool:
        calls.append((args, kwargs))
        return True

    assert filters.match_value(check_value, "v", {"spec": {}, "name": "n"})
    assert calls == [(("v",), {"spec": {}, "name": "n"})]


# Labels & annotations.


@pytest.mark.parametrize("kind", ["labels", "annotations"])
@pytest.mark.parametrize(
    ("criteria", "values", "expected"),
    [
        ({"a": "x"}, {"a": "x"}, True),
        ({"a": "x"}, {"a": "y"}, False),
        ({"a": "x"}, {}, False),
        ({"a": "x"}, None, False),
        ({"a": kopf.PRESENT}, {"a": "x"}, True),
        ({"a": kopf.PRESENT}, {"a": ""}, True),
        ({"a": kopf.PRESENT}, {"b": "x"}, False),
        ({"a": kopf.PRESENT}, None, False),
        ({"a": kopf.ABSENT}, {"b": "x"}, True),
        ({"a": kopf.ABSENT}, None, True),
        ({"a": kopf.ABSENT}, {"a": ""}, False),
        ({"a": "x", "b": kopf.PRESENT}, {"a": "x", "b": "y"}, True),  # all criteria are AND-ed.
        ({"a": "x", "b": kopf.PRESENT}, {"a": "x"}, False),
        ({"a": lambda v, **_: v is None}, {}, True),
        ({"a": lambda v, **_: v.startswith("x")}, {"a": "xyz"}, True),
        ({}, {"a": "x"}, True),
    ],
)
def test_meta_filters(kind: str, criteria: dict[str, Any], values: dict[str, str] | None, expected: bool) -> None:
    handler = make(kopf.on.create, "kopfexamples", **{kind: criteria})
    body = body_with(**{kind: values})
    assert match(handler, body=body) is expected
    assert prematch(handler, body=body) is expected


def test_labels_and_annotations_are_both_required() -> None:
    handler = make(kopf.on.create, "kopfexamples", labels={"l": "x"}, annotations={"a": "y"})
    assert match(handler, body=body_with(labels={"l": "x"}, annotations={"a": "y"}))
    assert not match(handler, body=body_with(labels={"l": "x"}, annotations={"a": "n"}))
    assert not match(handler, body=body_with(labels={"l": "n"}, annotations={"a": "y"}))


def test_labels_with_none_are_deprecated_but_mean_presence() -> None:
    with pytest.warns(DeprecationWarning, match="kopf.PRESENT"):
        handler = make(kopf.on.create, "kopfexamples", labels={"a": None})
    assert handler.labels == {"a": kopf.PRESENT}
    assert match(handler, body=body_with(labels={"a": ""}))
    assert not match(handler, body=body_with(labels={}))


def test_meta_filters_must_be_mappings() -> None:
    with pytest.raises(TypeError, match="labels"):
        make(kopf.on.create, "kopfexamples", labels=["a"])


def test_meta_callbacks_get_the_handler_kwargs() -> None:
    seen: list[Any] = []
    handler = make(
        kopf.on.create, "kopfexamples", annotations={"a": lambda value, spec, **_: seen.append((value, spec)) or True}
    )
    assert match(handler, body=body_with(annotations={"a": "x"}), kwargs={"spec": {"s": 1}})
    assert seen == [("x", {"s": 1})]


# When-callbacks.


def test_when_callbacks() -> None:
    handler = make(kopf.on.create, "kopfexamples", when=lambda spec, **_: spec.get("field") == "x")
    assert match(handler, body=body_with(), kwargs={"spec": {"field": "x"}})
    assert not match(handler, body=body_with(), kwargs={"spec": {"field": "y"}})


def test_when_callbacks_results_are_booleanized() -> None:
    assert filters.match_when(lambda **_: "non-empty", {})
    assert not filters.match_when(lambda **_: [], {})
    assert filters.match_when(None, {})


def test_when_must_be_callable() -> None:
    with pytest.raises(TypeError, match="when="):
        make(kopf.on.create, "kopfexamples", when="not callable")


def test_when_is_not_called_if_other_filters_fail() -> None:
    def explode(**_: Any) -> bool:
        raise AssertionError("must not be called")

    handler = make(kopf.on.create, "kopfexamples", labels={"a": "x"}, when=explode)
    assert not match(handler, body=body_with(labels={}))


# Field filters on the current state (non-update handlers).


@pytest.mark.parametrize(
    "decorator",
    [
        kopf.on.create,
        kopf.on.resume,
        kopf.on.delete,
        kopf.on.event,
        kopf.daemon,
        kopf.timer,
        kopf.index,
        kopf.on.validate,
        kopf.on.mutate,
    ],
)
@pytest.mark.parametrize(
    ("field", "value", "spec", "expected"),
    [
        ("spec.field", "world", {"field": "world"}, True),
        ("spec.field", "world", {"field": "hello"}, False),
        ("spec.field", "world", {}, False),
        ("spec.field", kopf.PRESENT, {"field": "x"}, True),
        ("spec.field", kopf.PRESENT, {}, False),
        ("spec.no-field", kopf.ABSENT, {}, True),
        ("spec.no-field", kopf.ABSENT, {"no-field": "x"}, False),
        ("spec.field", None, {"field": "x"}, True),  # no value means PRESENT
        ("spec.field", None, {}, False),
        ("spec.field", lambda v, **_: v > 10, {"field": 11}, True),
        ("spec.field", lambda v, **_: v > 10, {"field": 9}, False),
        (["spec", "field"], "x", {"field": "x"}, True),
        (("spec", "field"), "x", {"field": "x"}, True),
        ("spec.a.b", "x", {"a": {"b": "x"}}, True),
        ("spec.a.b", "x", {"a": "not-a-dict"}, False),
    ],
)
def test_field_filters_on_current_state(
    decorator: Callable[..., Any], field: Any, value: Any, spec: dict[str, Any], expected: bool
) -> None:
    handler = make(decorator, "kopfexamples", field=field, value=value)
    body = body_with(spec=spec)
    assert match(handler, body=body) is expected
    assert prematch(handler, body=body) is expected


def test_value_without_field_checks_the_whole_body() -> None:
    handler = make(kopf.on.create, "kopfexamples", value=lambda v, **_: v["spec"] == {"a": 1})
    assert match(handler, body=body_with(spec={"a": 1}))
    assert not match(handler, body=body_with(spec={"a": 2}))


# Field filters on transitions (update & field handlers).

CHANGE_CASES = [
    # field affected at all: changed, added, removed; but not when unchanged.
    ({}, {"field": "x"}, {"field": "y"}, True),
    ({}, {}, {"field": "y"}, True),
    ({}, {"field": "x"}, {}, True),
    ({}, {"field": "x"}, {"field": "x"}, False),
    ({}, {"field": "x", "other": 1}, {"field": "x", "other": 2}, False),
    ({}, {}, {}, False),
    # value= matches either side.
    ({"value": "x"}, {"field": "x"}, {"field": "y"}, True),
    ({"value": "y"}, {"field": "x"}, {"field": "y"}, True),
    ({"value": "z"}, {"field": "x"}, {"field": "y"}, False),
    ({"value": "x"}, {"field": "x"}, {"field": "x"}, False),  # satisfied, but not affected.
    ({"value": kopf.PRESENT}, {}, {"field": "y"}, True),
    ({"value": kopf.ABSENT}, {}, {"field": "y"}, True),
    ({"value": kopf.ABSENT}, {"field": "x"}, {"field": "y"}, False),
    ({"value": lambda v, **_: v == "y"}, {"field": "x"}, {"field": "y"}, True),
    # old=/new= each on their own side.
    ({"old": "x", "new": "y"}, {"field": "x"}, {"field": "y"}, True),
    ({"old": "x", "new": "y"}, {"field": "y"}, {"field": "x"}, False),
    ({"old": kopf.ABSENT, "new": kopf.PRESENT}, {}, {"field": "y"}, True),
    ({"old": kopf.ABSENT, "new": kopf.PRESENT}, {"field": "x"}, {"field": "y"}, False),
    ({"old": kopf.PRESENT, "new": kopf.ABSENT}, {"field": "x"}, {}, True),
    ({"old": kopf.PRESENT, "new": kopf.ABSENT}, {}, {"field": "x"}, False),
    ({"new": "world"}, {"field": "hello"}, {"field": "world"}, True),
    ({"new": "world"}, {}, {"field": "world"}, True),
    ({"new": "world"}, {"field": "world"}, {"field": "hello"}, False),
    ({"new": "world"}, {"field": "world"}, {"field": "world"}, False),
    ({"old": "world"}, {"field": "world"}, {"field": "hello"}, True),
    ({"old": "world"}, {"field": "world"}, {}, True),
    ({"old": "world"}, {"field": "hello"}, {"field": "world"}, False),
    ({"old": None, "new": None}, {"field": "x"}, {"field": "y"}, True),
    ({"new": lambda v, **_: v == "y"}, {"field": "x"}, {"field": "y"}, True),
]


@pytest.mark.parametrize("decorator", [kopf.on.update, kopf.on.field])
@pytest.mark.parametrize(("criteria", "old_spec", "new_spec", "expected"), CHANGE_CASES)
def test_field_filters_on_transitions(
    decorator: Callable[..., Any],
    criteria: dict[str, Any],
    old_spec: dict[str, Any],
    new_spec: dict[str, Any],
    expected: bool,
) -> None:
    handler = make(decorator, "kopfexamples", field="spec.field", **criteria)
    old, new = body_with(spec=old_spec), body_with(spec=new_spec)
    assert match(handler, body=new, old=old, new=new) is expected


def test_transitions_default_new_to_the_body() -> None:
    handler = make(kopf.on.update, "kopfexamples", field="spec.field", new="y")
    assert match(handler, body=body_with(spec={"field": "y"}), old=body_with(spec={"field": "x"}))


def test_update_without_field_is_not_restricted_by_changes() -> None:
    handler = make(kopf.on.update, "kopfexamples")
    same = body_with(spec={"a": 1})
    assert match(handler, body=same, old=same, new=same)


def test_update_without_field_but_with_old_new_checks_whole_bodies() -> None:
    handler = make(kopf.on.update, "kopfexamples", old=lambda v, **_: v["spec"] == {"a": 1})
    assert match(handler, body=body_with(spec={"a": 2}), old=body_with(spec={"a": 1}))
    assert not match(handler, body=body_with(spec={"a": 2}), old=body_with(spec={"a": 3}))


def test_prematch_ignores_transitions_of_update_handlers() -> None:
    handler = make(kopf.on.update, "kopfexamples", field="spec.field", old="x", new="y")
    assert prematch(handler, body=body_with(spec={}))


@pytest.mark.parametrize("decorator", [kopf.on.update, kopf.on.field])
def test_value_and_old_new_are_mutually_exclusive(decorator: Callable[..., Any]) -> None:
    with pytest.raises(TypeError, match="ambiguous"):
        make(decorator, "kopfexamples", field="spec.field", value="x", old="y")
    with pytest.raises(TypeError, match="ambiguous"):
        make(decorator, "kopfexamples", field="spec.field", value="x", new="y")


def test_all_filter_kinds_combined() -> None:
    handler = make(
        kopf.on.update,
        "kopfexamples",
        labels={"l": kopf.PRESENT},
        annotations={"a": kopf.ABSENT},
        field="spec.field",
        new="y",
        when=lambda name, **_: name == "n1",
    )
    old = body_with(labels={"l": ""}, spec={"field": "x"})
    new = body_with(labels={"l": ""}, spec={"field": "y"})
    kwargs = {"name": "n1"}
    assert match(handler, body=new, old=old, new=new, kwargs=kwargs)
    assert not match(handler, body=new, old=old, new=new, kwargs={"name": "n2"})
    new_annotated = body_with(labels={"l": ""}, annotations={"a": "1"}, spec={"field": "y"})
    assert not match(handler, body=new_annotated, old=old, new=new_annotated, kwargs=kwargs)
    new_unlabelled = body_with(spec={"field": "y"})
    assert not match(handler, body=new_unlabelled, old=old, new=new_unlabelled, kwargs=kwargs)
    assert not match(handler, body=old, old=new, new=old, kwargs=kwargs)


def test_change_sensitivity_by_handler_kind() -> None:
    assert make(kopf.on.update, "x").change_sensitive
    assert make(kopf.on.field, "x", field="spec").change_sensitive
    for decorator in [
        kopf.on.create,
        kopf.on.resume,
        kopf.on.delete,
        kopf.on.event,
        kopf.daemon,
        kopf.timer,
        kopf.index,
        kopf.on.validate,
        kopf.on.mutate,
    ]:
        assert not make(decorator, "x").change_sensitive


def test_normalize_meta_filter_keeps_values() -> None:
    fn = lambda v, **_: True  # noqa: E731
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert filters.normalize_meta_filter({"a": "x", "b": kopf.ABSENT, "c": fn}, what="labels") == {
            "a": "x",
            "b": kopf.ABSENT,
            "c": fn,
        }
        assert filters.normalize_meta_filter(None, what="labels") is None


def test_subhandler_filters_use_transitions() -> None:
    handler = ChangingHandler(
        fn=lambda **_: None,
        id="x",
        param=None,
        errors=None,
        timeout=None,  # type: ignore[arg-type]
        retries=None,
        backoff=None,
        selector=None,
        labels=None,
        annotations=None,
        when=None,
        field=("spec", "f"),
        value=None,
        reason=None,
    )
    assert match(handler, body=body_with(spec={"f": 1}), old=body_with(spec={}))
    assert not match(handler, body=body_with(spec={"f": 1}), old=body_with(spec={"f": 1}))
