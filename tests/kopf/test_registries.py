import functools
from collections.abc import Iterator
from typing import Any

import pytest

import kopf
from kopf._cogs.structs.references import Resource, Selector
from kopf._core.intents.causes import Activity, Reason, WebhookType
from kopf._core.intents.registries import ChangingRegistry, OperatorRegistry

KEX = Resource(
    "kopf.dev",
    "v1",
    "kopfexamples",
    kind="KopfExample",
    singular="kopfexample",
    shortcuts=frozenset({"kex"}),
    categories=frozenset({"all"}),
    namespaced=True,
)
PODS = Resource("", "v1", "pods", kind="Pod", singular="pod", namespaced=True)
METRIC_PODS = Resource("metrics.k8s.io", "v1beta1", "pods", kind="PodMetrics", namespaced=True)
WIDGETS_A = Resource("a.example.com", "v1", "widgets", kind="Widget")
WIDGETS_B = Resource("b.example.com", "v1", "widgets", kind="Widget")


def obj(
    *, labels: dict[str, str] | None = None, spec: dict[str, Any] | None = None, deleted: bool = False
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": "n1", "namespace": "ns1", "labels": labels or {}}
    if deleted:
        metadata["deletionTimestamp"] = "2020-01-01T00:00:00Z"
    return {"metadata": metadata, "spec": spec or {}}


@pytest.fixture
def registry() -> OperatorRegistry:
    return OperatorRegistry()


@pytest.fixture
def default_registry() -> Iterator[OperatorRegistry]:
    old = kopf.get_default_registry()
    new = OperatorRegistry()
    kopf.set_default_registry(new)
    try:
        yield new
    finally:
        kopf.set_default_registry(old)


def fn1(**_: Any) -> None:
    pass


def fn2(**_: Any) -> None:
    pass


# Default registry.


def test_default_registry_exists_and_is_stable() -> None:
    assert isinstance(kopf.get_default_registry(), kopf.OperatorRegistry)
    assert kopf.get_default_registry() is kopf.get_default_registry()


def test_default_registry_can_be_replaced(default_registry: OperatorRegistry) -> None:
    assert kopf.get_default_registry() is default_registry
    kopf.on.create("kopfexamples")(fn1)
    assert [h.fn for h in default_registry.changing.get_all_handlers()] == [fn1]


def test_explicit_registry_bypasses_the_default(default_registry: OperatorRegistry, registry: OperatorRegistry) -> None:
    kopf.on.create("kopfexamples", registry=registry)(fn1)
    assert len(registry.changing) == 1
    assert len(default_registry.changing) == 0


def test_sub_registries_are_distinct(registry: OperatorRegistry) -> None:
    subs = [
        registry.activities,
        registry.watching,
        registry.changing,
        registry.spawning,
        registry.indexing,
        registry.webhooks,
    ]
    assert len({id(sub) for sub in subs}) == len(subs)
    assert len(registry.resource_registries) == 5


# Handler ids.


def test_id_is_the_function_name(registry: OperatorRegistry) -> None:
    kopf.on.create("kex", registry=registry)(fn1)
    assert registry.changing.get_all_handlers()[0].id == "fn1"


def test_id_of_a_partial_is_its_function_name(registry: OperatorRegistry) -> None:
    kopf.on.create("kex", registry=registry)(functools.partial(fn1, a=1))
    assert registry.changing.get_all_handlers()[0].id == "fn1"


def test_id_of_bound_methods(registry: OperatorRegistry) -> None:
    class MyCls:
        def my_handler(self, **_: Any) -> None:
            pass

    instance = MyCls()
    kopf.on.create("kex", registry=registry)(instance.my_handler)
    handler = registry.changing.get_all_handlers()[0]
    assert handler.id == "MyCls.my_handler"  # as the published framework names it (by the qualified name)
    assert handler.fn == instance.my_handler


def test_same_named_methods_of_different_classes_do_not_collide(registry: OperatorRegistry) -> None:
    # An operator that loads in the published framework loads here too (it was "Duplicate handler id").
    class Database:
        @staticmethod
        def reconcile(**_: Any) -> None:
            pass

    class Cache:
        def reconcile(self, **_: Any) -> None:
            pass

    kopf.on.create("kex", registry=registry)(Database.reconcile)
    kopf.on.create("kex", registry=registry)(Cache().reconcile)
    kopf.on.update("kex", field="spec.size", registry=registry)(Cache().reconcile)
    ids = sorted(handler.id for handler in registry.changing.get_all_handlers())
    assert ids == ["Cache.reconcile", "Cache.reconcile/spec.size", "Database.reconcile"]


def test_nested_functions_are_named_without_their_outer_function(registry: OperatorRegistry) -> None:
    def make_handler() -> Any:
        def inner(**_: Any) -> None:
            pass

        return inner

    kopf.on.create("kex", registry=registry)(make_handler())
    assert registry.changing.get_all_handlers()[0].id == "inner"  # no '<locals>' in the annotations' keys


def test_id_override(registry: OperatorRegistry) -> None:
    kopf.on.create("kex", id="abc", registry=registry)(fn1)
    assert registry.changing.get_all_handlers()[0].id == "abc"


@pytest.mark.parametrize("field", ["spec.field", ["spec", "field"], ("spec", "field")])
def test_field_suffix(registry: OperatorRegistry, field: Any) -> None:
    kopf.on.update("kex", field=field, registry=registry)(fn1)
    kopf.on.field("kex", field=field, registry=registry)(fn2)
    kopf.on.create("kex", field=field, registry=registry)(fn1)
    kopf.daemon("kex", field=field, registry=registry)(fn1)
    kopf.timer("kex", field=field, registry=registry)(fn2)
    kopf.on.event("kex", field=field, registry=registry)(fn1)
    assert [h.id for h in registry.changing.get_all_handlers()] == [
        "fn1/spec.field",
        "fn2/spec.field",
        "fn1/spec.field",
    ]
    assert [h.id for h in registry.spawning.get_all_handlers()] == ["fn1/spec.field", "fn2/spec.field"]
    assert [h.id for h in registry.watching.get_all_handlers()] == ["fn1/spec.field"]


def test_no_field_suffix_for_explicit_ids(registry: OperatorRegistry) -> None:
    kopf.on.update("kex", id="abc", field="spec.field", registry=registry)(fn1)
    assert registry.changing.get_all_handlers()[0].id == "abc"


def test_no_field_suffix_for_index_names_and_webhooks(registry: OperatorRegistry) -> None:
    kopf.index("kex", field="spec.field", registry=registry)(fn1)
    kopf.on.validate("kex", field="spec.field", registry=registry)(fn1)
    kopf.on.mutate("kex", field="spec.field", registry=registry)(fn2)
    assert [h.id for h in registry.indexing.get_all_handlers()] == ["fn1"]
    assert [h.id for h in registry.webhooks.get_all_handlers()] == ["fn1", "fn2"]


def test_multiple_fields_of_one_function_get_distinct_ids(registry: OperatorRegistry) -> None:
    kopf.on.update("kex", field="spec.field", param="fld", registry=registry)(fn1)
    kopf.on.update("kex", field="spec.items", param="itm", registry=registry)(fn1)
    handlers = registry.changing.get_all_handlers()
    assert [(h.id, h.param) for h in handlers] == [("fn1/spec.field", "fld"), ("fn1/spec.items", "itm")]


# Duplicates & conflicts.


def test_same_function_same_id_is_allowed(registry: OperatorRegistry) -> None:
    kopf.on.resume("kex", registry=registry)(fn1)
    kopf.on.create("kex", registry=registry)(fn1)
    kopf.on.create("kex", param=2, registry=registry)(fn1)
    assert len(registry.changing) == 3


def test_different_functions_same_id_same_scope_are_accepted(registry: OperatorRegistry) -> None:
    # As the published framework accepts them (an operator that loads there loads here).
    kopf.on.create("kex", id="x", registry=registry)(fn1)
    kopf.on.create("kex", id="x", registry=registry)(fn2)
    assert [h.fn for h in registry.changing.get_all_handlers()] == [fn1, fn2]


def test_different_functions_same_id_different_reasons_are_allowed(registry: OperatorRegistry) -> None:
    kopf.on.delete("kex", id="x", registry=registry)(fn1)
    kopf.on.create("kex", id="x", registry=registry)(fn2)
    assert len(registry.changing) == 2


def test_resuming_handlers_share_the_scope_with_the_causes_they_mix_into(registry: OperatorRegistry) -> None:
    kopf.on.resume("kex", id="x", registry=registry)(fn1)
    kopf.on.delete("kex", id="x", registry=registry)(fn2)  # not mixed: allowed.
    kopf.on.create("kex", id="x", registry=registry)(fn2)  # not mixed (a new object is not resumed): allowed.
    kopf.on.update("kex", id="x", registry=registry)(fn2)  # mixed: accepted too, as in the published framework.
    kopf.on.resume("kex", id="y", deleted=True, registry=registry)(fn1)
    kopf.on.delete("kex", id="y", registry=registry)(fn2)
    assert len(registry.changing) == 6


def test_field_handlers_share_the_scope_with_all_causes(registry: OperatorRegistry) -> None:
    kopf.on.field("kex", id="x", field="spec", registry=registry)(fn1)
    kopf.on.delete("kex", id="x", registry=registry)(fn2)  # accepted, as in the published framework.
    assert len(registry.changing) == 2


def test_the_documented_same_named_delete_and_resume_handlers(registry: OperatorRegistry) -> None:
    def my_handler(**_: Any) -> None:
        pass

    kopf.on.delete("kex", registry=registry)(my_handler)

    def my_handler(**_: Any) -> None:  # type: ignore[no-redef]
        pass

    kopf.on.resume("kex", registry=registry)(my_handler)
    kopf.on.create("kex", registry=registry)(my_handler)
    assert len(registry.changing) == 3


def test_different_functions_same_id_different_resources_are_allowed(registry: OperatorRegistry) -> None:
    kopf.on.create("kex", id="x", registry=registry)(fn1)
    kopf.on.create("pods", id="x", registry=registry)(fn2)
    kopf.daemon("kex", id="d", registry=registry)(fn1)
    kopf.daemon("pods", id="d", registry=registry)(fn2)
    assert len(registry.changing) == 2
    assert len(registry.spawning) == 2


def test_daemons_and_timers_share_the_scope(registry: OperatorRegistry) -> None:
    kopf.daemon("kex", id="x", registry=registry)(fn1)
    kopf.timer("kex", id="x", registry=registry)(fn2)  # accepted, as in the published framework.
    assert len(registry.spawning) == 2


def test_index_names_are_global(registry: OperatorRegistry) -> None:
    kopf.index("kex", id="idx", registry=registry)(fn1)
    kopf.index("pods", id="idx", registry=registry)(fn1)  # the same function: allowed.
    kopf.index("pods", id="idx", registry=registry)(fn2)  # accepted, as in the published framework.
    assert len(registry.indexing) == 3


def test_webhook_ids_are_global(registry: OperatorRegistry) -> None:
    kopf.on.validate("kex", id="hook", registry=registry)(fn1)
    with pytest.raises(ValueError, match="Duplicate"):
        kopf.on.mutate("pods", id="hook", registry=registry)(fn2)


def test_activity_ids_are_per_activity(registry: OperatorRegistry) -> None:
    kopf.on.probe(id="x", registry=registry)(fn1)
    kopf.on.startup(id="x", registry=registry)(fn2)
    kopf.on.probe(id="x", registry=registry)(fn2)  # accepted, as in the published framework.
    assert len(registry.activities) == 3


def test_reimported_functions_replace_the_old_ones(registry: OperatorRegistry) -> None:
    source = "def handler(**_):\n    pass\n"
    namespace1: dict[str, Any] = {}
    namespace2: dict[str, Any] = {}
    exec(compile(source, "operator.py", "exec"), namespace1)
    exec(compile(source, "operator.py", "exec"), namespace2)
    kopf.on.create("kex", registry=registry)(namespace1["handler"])
    kopf.on.create("kex", registry=registry)(namespace2["handler"])
    assert [h.fn for h in registry.changing.get_all_handlers()] == [namespace2["handler"]]


def test_functions_from_loops_are_not_reimports(registry: OperatorRegistry) -> None:
    fns = []
    for item in ["a", "b"]:

        def handle_item(item: str = item, **_: Any) -> None:
            pass

        fns.append(handle_item)
    kopf.on.create("kex", registry=registry)(fns[0])
    kopf.on.create("kex", registry=registry)(fns[1])
    assert [h.fn for h in registry.changing.get_all_handlers()] == fns  # not replaced: both are kept.


# Resources served.


def test_selectors_are_collected_from_all_kinds_without_duplicates(registry: OperatorRegistry) -> None:
    kopf.on.create("kex", registry=registry)(fn1)
    kopf.on.update("kex", registry=registry)(fn1)
    kopf.on.event("pods", registry=registry)(fn1)
    kopf.daemon("kopf.dev", "v1", "kopfexamples", registry=registry)(fn1)
    kopf.index("pods", registry=registry)(fn1)
    kopf.on.validate(category="all", registry=registry)(fn1)
    kopf.on.startup(registry=registry)(fn1)
    assert registry.get_selectors() == [  # by the kind of handlers, then by the declaration order.
        Selector("pods"),
        Selector("kex"),
        Selector("kopf.dev", "v1", "kopfexamples"),
        Selector(category="all"),
    ]


def test_resources_served(registry: OperatorRegistry) -> None:
    kopf.on.create("kex", registry=registry)(fn1)
    kopf.on.event("pods", registry=registry)(fn1)
    kopf.on.event("widgets", registry=registry)(fn1)
    resources = [KEX, PODS, METRIC_PODS, WIDGETS_A, WIDGETS_B]
    assert registry.get_resources(resources) == {KEX, PODS}
    assert registry.get_ambiguities(resources) == {Selector("widgets"): {WIDGETS_A, WIDGETS_B}}


def test_resources_served_by_nothing(registry: OperatorRegistry) -> None:
    kopf.on.startup(registry=registry)(fn1)
    assert registry.get_resources([KEX, PODS]) == frozenset()
    assert registry.get_ambiguities([KEX, PODS]) == {}
    assert not registry.has_handlers(KEX)


def test_has_handlers_per_kind(registry: OperatorRegistry) -> None:
    kopf.on.event("kex", registry=registry)(fn1)
    kopf.timer("pods", registry=registry)(fn1)
    assert registry.has_handlers(KEX)
    assert registry.has_handlers(PODS)
    assert registry.watching.has_handlers(KEX)
    assert not registry.watching.has_handlers(PODS)
    assert registry.spawning.has_handlers(PODS)
    assert not registry.changing.has_handlers(KEX)


# Handler selection.


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


def ids_of(handlers: list[Any]) -> list[str]:
    return [handler.id for handler in handlers]


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


# Finalizers.


@pytest.mark.parametrize(
    ("declare", "expected"),
    [
        (lambda r: kopf.on.delete("kex", registry=r)(fn1), True),
        (lambda r: kopf.on.delete("kex", optional=True, registry=r)(fn1), False),
        (lambda r: kopf.on.delete("kex", optional=False, registry=r)(fn1), True),
        (lambda r: kopf.on.create("kex", registry=r)(fn1), False),
        (lambda r: kopf.on.update("kex", registry=r)(fn1), False),
        (lambda r: kopf.on.resume("kex", deleted=True, registry=r)(fn1), False),
        (lambda r: kopf.on.event("kex", registry=r)(fn1), False),
        (lambda r: kopf.index("kex", registry=r)(fn1), False),
        (lambda r: kopf.daemon("kex", registry=r)(fn1), True),
        (lambda r: kopf.timer("kex", registry=r)(fn1), True),
        (lambda r: kopf.on.validate("kex", registry=r)(fn1), False),
        (lambda r: kopf.on.delete("pods", registry=r)(fn1), False),  # another resource
    ],
)
def test_finalizer_requirements(registry: OperatorRegistry, declare: Any, expected: bool) -> None:
    declare(registry)
    assert registry.requires_finalizer(KEX, body=obj()) is expected


def test_finalizer_requirements_respect_the_filters(registry: OperatorRegistry) -> None:
    kopf.on.delete("kex", labels={"a": "x"}, registry=registry)(fn1)
    kopf.daemon("kex", field="spec.d", registry=registry)(fn1)
    assert registry.requires_finalizer(KEX, body=obj(labels={"a": "x"}))
    assert registry.requires_finalizer(KEX, body=obj(spec={"d": 1}))
    assert not registry.requires_finalizer(KEX, body=obj())


# Daemons, timers, indices, activities, webhooks.


def test_spawning_handlers_by_type(registry: OperatorRegistry) -> None:
    kopf.daemon("kex", registry=registry)(fn1)
    kopf.timer("kex", interval=1, registry=registry)(fn2)
    assert [h.fn for h in registry.spawning.get_daemons(KEX)] == [fn1]
    assert [h.fn for h in registry.spawning.get_timers(KEX)] == [fn2]
    assert [h.fn for h in registry.spawning.get_handlers(KEX, body=obj())] == [fn1, fn2]
    assert registry.spawning.get_daemons(PODS) == []


def test_index_names(registry: OperatorRegistry) -> None:
    kopf.index("kex", registry=registry)(fn1)
    kopf.index("pods", registry=registry)(fn1)
    kopf.index("pods", id="by_label", registry=registry)(fn2)
    assert registry.indexing.get_index_names() == ["fn1", "by_label"]
    assert [h.id for h in registry.indexing.get_handlers(PODS, body=obj())] == ["fn1", "by_label"]


def test_activity_handlers(registry: OperatorRegistry) -> None:
    kopf.on.startup(registry=registry)(fn1)
    kopf.on.startup(registry=registry)(fn1)  # deduplicated.
    kopf.on.cleanup(registry=registry)(fn2)
    kopf.on.login(registry=registry)(fn1)
    kopf.on.probe(id="now", registry=registry)(fn1)
    assert [h.fn for h in registry.activities.get_handlers(Activity.STARTUP)] == [fn1]
    assert [h.fn for h in registry.activities.get_handlers(Activity.CLEANUP)] == [fn2]
    assert [h.fn for h in registry.activities.get_handlers(Activity.AUTHENTICATION)] == [fn1]
    assert [h.id for h in registry.activities.get_handlers(Activity.PROBE)] == ["now"]


@pytest.fixture
def webhooks(registry: OperatorRegistry) -> OperatorRegistry:
    kopf.on.validate("kex", id="v-all", registry=registry)(fn1)
    kopf.on.validate("kex", id="v-create", operation="CREATE", registry=registry)(fn1)
    kopf.on.validate("kex", id="v-cu", operations=["CREATE", "UPDATE"], registry=registry)(fn1)
    kopf.on.validate("kex", id="v-status", subresource="status", registry=registry)(fn1)
    kopf.on.validate("kex", id="v-any", subresource="*", registry=registry)(fn1)
    kopf.on.mutate("kex", id="m-labelled", labels={"a": "x"}, registry=registry)(fn1)
    return registry


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({}, ["v-all", "v-create", "v-cu", "v-any"]),
        ({"type": WebhookType.VALIDATING}, ["v-all", "v-create", "v-cu", "v-any"]),
        ({"type": WebhookType.MUTATING}, []),
        ({"operation": "CREATE"}, ["v-all", "v-create", "v-cu", "v-any"]),
        ({"operation": "UPDATE"}, ["v-all", "v-cu", "v-any"]),
        ({"operation": "DELETE"}, ["v-all", "v-any"]),
        ({"subresource": "status"}, ["v-status", "v-any"]),
        ({"subresource": "scale"}, ["v-any"]),
        ({"id": "v-cu"}, ["v-cu"]),
        ({"id": "v-cu", "operation": "DELETE"}, []),
    ],
)
def test_webhook_handlers(webhooks: OperatorRegistry, kwargs: dict[str, Any], expected: list[str]) -> None:
    assert ids_of(webhooks.webhooks.get_handlers(KEX, body=obj(), **kwargs)) == expected


def test_webhook_handlers_with_filters(webhooks: OperatorRegistry) -> None:
    handlers = webhooks.webhooks.get_handlers(KEX, body=obj(labels={"a": "x"}), type=WebhookType.MUTATING)
    assert ids_of(handlers) == ["m-labelled"]
    assert webhooks.webhooks.get_handlers(PODS, body=obj()) == []
