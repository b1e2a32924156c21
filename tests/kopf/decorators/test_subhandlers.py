"""Sub-handlers: declared inside a handler while it runs, and nowhere else."""

import asyncio
import contextvars
import threading
from collections.abc import Iterator
from typing import Any

import pytest

import kopf
from kopf._core.intents.handlers import (
    ChangingHandler,
)
from kopf._core.intents.registries import ChangingRegistry, OperatorRegistry
from kopf._core.intents.subhandlers import NoParentHandlerError, handler_var, subregistry_var

from .helpers import fn, the_only


@pytest.fixture
def parent() -> Iterator[ChangingRegistry]:
    subregistry = ChangingRegistry()
    parent_registry = OperatorRegistry()
    kopf.on.create("kex", id="create_fn", registry=parent_registry)(fn)
    parent_handler = parent_registry.changing.get_all_handlers()[0]
    token1 = subregistry_var.set(subregistry)
    token2 = handler_var.set(parent_handler)
    try:
        yield subregistry
    finally:
        handler_var.reset(token2)
        subregistry_var.reset(token1)


def test_subhandler_outside_of_handlers() -> None:
    with pytest.raises(NoParentHandlerError, match="only inside"):
        kopf.subhandler()
    with pytest.raises(RuntimeError, match="only inside"):
        kopf.register(fn)


def test_subhandler_defaults(parent: ChangingRegistry) -> None:
    result = kopf.subhandler()(fn)
    assert result is fn
    handler = the_only(parent.get_all_handlers())
    assert isinstance(handler, ChangingHandler)
    assert handler.id == "create_fn/fn"
    assert handler.reason is None
    assert handler.selector is None
    assert handler.errors == kopf.ErrorsMode.TEMPORARY
    assert handler.backoff is None  # resolved at run time from settings.execution.default_backoff
    assert handler.requires_finalizer is False


def test_subhandlers_in_loops_with_ids(parent: ChangingRegistry) -> None:
    for item in ["item1", "item2"]:

        @kopf.subhandler(id=item)
        def handle_item(item: str = item, **_: Any) -> None:
            pass

    assert [h.id for h in parent.get_all_handlers()] == ["create_fn/item1", "create_fn/item2"]


def test_subhandler_options(parent: ChangingRegistry) -> None:
    def when(**_: Any) -> bool:
        return True

    kopf.subhandler(
        id="x",
        param=1,
        errors=kopf.ErrorsMode.PERMANENT,
        timeout=1,
        retries=2,
        backoff=3,
        labels={"l": "v"},
        annotations={"a": "v"},
        when=when,
        field="spec.f",
        old="o",
        new="n",
    )(fn)
    handler = the_only(parent.get_all_handlers())
    assert handler.id == "create_fn/x"
    assert (handler.param, handler.errors, handler.timeout, handler.retries, handler.backoff) == (
        1,
        kopf.ErrorsMode.PERMANENT,
        1,
        2,
        3,
    )
    assert (handler.labels, handler.annotations, handler.when) == ({"l": "v"}, {"a": "v"}, when)
    assert (handler.field, handler.old, handler.new) == (("spec", "f"), "o", "n")


def test_subhandler_field_suffix(parent: ChangingRegistry) -> None:
    kopf.subhandler(field="spec.f", value="v")(fn)
    handler = the_only(parent.get_all_handlers())
    assert handler.id == "create_fn/fn/spec.f"
    assert handler.value == "v"


def test_subhandler_value_and_old_new_are_exclusive(parent: ChangingRegistry) -> None:
    with pytest.raises(TypeError):
        kopf.subhandler(field="spec.f", value="v", new="n")


def test_register(parent: ChangingRegistry) -> None:
    for task in ["a", "b"]:

        def create_single_task(task: str = task, **_: Any) -> None:
            pass

        result = kopf.register(id=task, fn=create_single_task)
        assert result is create_single_task
    assert [h.id for h in parent.get_all_handlers()] == ["create_fn/a", "create_fn/b"]


def test_register_options(parent: ChangingRegistry) -> None:
    kopf.register(
        fn,
        id="x",
        param=1,
        errors=kopf.ErrorsMode.IGNORED,
        timeout=1,
        retries=2,
        backoff=3,
        labels={"l": "v"},
        annotations={"a": "v"},
        when=None,
    )
    handler = the_only(parent.get_all_handlers())
    assert (handler.id, handler.param, handler.errors, handler.timeout, handler.retries, handler.backoff) == (
        "create_fn/x",
        1,
        kopf.ErrorsMode.IGNORED,
        1,
        2,
        3,
    )


def test_register_without_a_parent_handler_but_with_a_subregistry() -> None:
    subregistry = ChangingRegistry()
    token = subregistry_var.set(subregistry)
    try:
        kopf.register(fn)
    finally:
        subregistry_var.reset(token)
    assert the_only(subregistry.get_all_handlers()).id == "fn"


def test_subhandlers_are_isolated_per_context(parent: ChangingRegistry) -> None:
    kopf.register(fn, id="here")
    errors: list[BaseException] = []

    def elsewhere() -> None:  # a fresh thread has a fresh context: no parent handler there.
        try:
            kopf.register(fn, id="there")
        except BaseException as e:
            errors.append(e)

    thread = threading.Thread(target=elsewhere)
    thread.start()
    thread.join()
    assert [type(e) for e in errors] == [NoParentHandlerError]
    assert [h.id for h in parent.get_all_handlers()] == ["create_fn/here"]


def test_subhandlers_follow_the_context_into_executor_threads(parent: ChangingRegistry) -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        ctx = contextvars.copy_context()
        await loop.run_in_executor(None, ctx.run, kopf.register, fn)

    asyncio.run(main())
    assert [h.id for h in parent.get_all_handlers()] == ["create_fn/fn"]
