"""Which handlers a cause selects."""

import functools

import pytest

import kopf
from kopf._core.intents.causes import Reason
from kopf._core.intents.registries import ChangingRegistry, OperatorRegistry

from .helpers import KEX, PODS, fn1, fn2, ids_of, obj


def test_resource_handlers_are_deduplicated_by_function_and_id(registry: OperatorRegistry) -> None:
    kopf.on.event("kex", registry=registry)(fn1)
    kopf.on.event("kopfexamples", registry=registry)(fn1)  # the same resource, another selector.
    kopf.on.event(category="all", registry=registry)(fn1)
    kopf.on.event("kex", id="other", registry=registry)(fn1)
    kopf.on.event("kex", registry=registry)(fn2)
    handlers = registry.watching.get_resource_handlers(KEX)
    assert [(h.id, h.fn) for h in handlers] == [("fn1", fn1), ("other", fn1), ("fn2", fn2)]


def test_watching_handlers_by_filters(registry: OperatorRegistry) -> None:
    kopf.on.event("kex", labels={"a": "x"}, registry=registry)(fn1)
    kopf.on.event("kex", labels={"a": kopf.ABSENT}, registry=registry)(fn2)
    assert [h.fn for h in registry.watching.get_handlers(KEX, body=obj(labels={"a": "x"}))] == [fn1]
    assert [h.fn for h in registry.watching.get_handlers(KEX, body=obj())] == [fn2]
    assert registry.watching.get_handlers(PODS, body=obj()) == []


def test_when_filters_get_the_kwargs(registry: OperatorRegistry) -> None:
    kopf.on.event("kex", when=lambda event, **_: event["type"] == "ADDED", registry=registry)(fn1)
    assert registry.watching.get_handlers(KEX, body=obj(), kwargs={"event": {"type": "ADDED"}})
    assert not registry.watching.get_handlers(KEX, body=obj(), kwargs={"event": {"type": "DELETED"}})


@pytest.fixture
def changing(registry: OperatorRegistry) -> ChangingRegistry:
    kopf.on.create("kex", registry=registry)(functools.partial(fn1))
    kopf.on.update("kex", id="upd", registry=registry)(fn1)
    kopf.on.delete("kex", id="del", registry=registry)(fn1)
    kopf.on.resume("kex", id="res", registry=registry)(fn1)
    kopf.on.resume("kex", id="resdel", deleted=True, registry=registry)(fn1)
    kopf.on.field("kex", id="fld", field="spec.f", registry=registry)(fn1)
    return registry.changing


@pytest.mark.parametrize(
    ("reason", "resumed", "expected"),
    [
        (Reason.CREATE, False, ["fn1", "fld"]),
        (Reason.CREATE, True, ["fn1", "fld"]),  # a new object is created, not resumed (as published)
        (Reason.UPDATE, False, ["upd", "fld"]),
        (Reason.UPDATE, True, ["upd", "res", "resdel", "fld"]),
        (Reason.RESUME, False, ["res", "resdel"]),
        (Reason.RESUME, True, ["res", "resdel"]),
    ],
)
def test_changing_handlers_by_reason(
    changing: ChangingRegistry, reason: Reason, resumed: bool, expected: list[str]
) -> None:
    old = obj(spec={"f": 1}) if reason == Reason.UPDATE else None
    new = obj(spec={"f": 2}) if reason != Reason.RESUME else None
    body = obj(spec={"f": 2})
    handlers = changing.get_handlers(KEX, reason=reason, body=body, old=old, new=new, resumed=resumed)
    assert ids_of(handlers) == expected


@pytest.mark.parametrize(
    ("resumed", "expected"),
    [
        (False, ["del"]),
        (True, ["del", "resdel"]),
    ],
)
def test_changing_handlers_on_deletion(changing: ChangingRegistry, resumed: bool, expected: list[str]) -> None:
    body = obj(spec={"f": 2}, deleted=True)
    handlers = changing.get_handlers(KEX, reason=Reason.DELETE, body=body, resumed=resumed)
    assert ids_of(handlers) == expected


def test_resuming_of_deleted_objects_only_with_deleted_flag(changing: ChangingRegistry) -> None:
    body = obj(deleted=True)
    assert ids_of(changing.get_handlers(KEX, reason=Reason.RESUME, body=body)) == ["resdel"]


def test_field_handlers_fire_only_when_the_field_changes(changing: ChangingRegistry) -> None:
    same = obj(spec={"f": 1})
    assert ids_of(changing.get_handlers(KEX, reason=Reason.UPDATE, body=same, old=same, new=same)) == ["upd"]


def test_changing_handlers_of_other_resources(changing: ChangingRegistry) -> None:
    assert changing.get_handlers(PODS, reason=Reason.CREATE, body=obj()) == []


def test_changing_extra_fields(changing: ChangingRegistry) -> None:
    assert changing.get_extra_fields(KEX) == {("spec", "f")}
    assert changing.get_extra_fields(PODS) == frozenset()


def test_changing_extra_fields_follow_the_handlers_added_later(
    registry: OperatorRegistry, changing: ChangingRegistry
) -> None:
    assert changing.get_extra_fields(KEX) == {("spec", "f")}  # remembered per resource
    kopf.on.field("kex", id="later", field="status.g", registry=registry)(fn1)
    assert changing.get_extra_fields(KEX) == {("spec", "f"), ("status", "g")}


def test_subhandlers_have_no_selector_and_fit_any_resource() -> None:
    subregistry = ChangingRegistry()
    from kopf._core.intents.subhandlers import subregistry_var

    token = subregistry_var.set(subregistry)
    try:
        kopf.register(fn1, id="sub")
    finally:
        subregistry_var.reset(token)
    assert ids_of(subregistry.get_handlers(PODS, reason=Reason.CREATE, body=obj())) == ["sub"]
    assert ids_of(subregistry.get_handlers(KEX, reason=Reason.DELETE, body=obj())) == ["sub"]
    assert subregistry.get_selectors() == []
