"""Duplicate & conflicting handlers."""

from typing import Any

import pytest

import kopf
from kopf._core.intents.registries import OperatorRegistry

from .helpers import fn1, fn2


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
