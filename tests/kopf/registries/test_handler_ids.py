"""The handlers' ids: from the functions, the fields, the options."""

import functools
from typing import Any

import pytest

import kopf
from kopf._core.intents.registries import OperatorRegistry

from .helpers import fn1, fn2


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
