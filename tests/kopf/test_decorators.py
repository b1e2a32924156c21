import asyncio
import contextvars
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import kopf
from kopf._cogs.structs.references import EVERYTHING, Selector
from kopf._core.intents.causes import Activity, Reason, WebhookType
from kopf._core.intents.handlers import (
    ActivityHandler,
    ChangingHandler,
    DaemonHandler,
    IndexingHandler,
    TimerHandler,
    WatchingHandler,
    WebhookHandler,
)
from kopf._core.intents.registries import ChangingRegistry, OperatorRegistry
from kopf._core.intents.subhandlers import NoParentHandlerError, handler_var, subregistry_var


def fn(**_: Any) -> None:
    pass


@pytest.fixture
def registry() -> OperatorRegistry:
    return OperatorRegistry()


def the_only(handlers: list[Any]) -> Any:
    assert len(handlers) == 1
    return handlers[0]


# Activities.


@pytest.mark.parametrize(
    ("decorator", "activity"),
    [
        (kopf.on.startup, Activity.STARTUP),
        (kopf.on.cleanup, Activity.CLEANUP),
        (kopf.on.login, Activity.AUTHENTICATION),
        (kopf.on.probe, Activity.PROBE),
    ],
)
def test_activity_defaults(registry: OperatorRegistry, decorator: Callable[..., Any], activity: Activity) -> None:
    result = decorator(registry=registry)(fn)
    assert result is fn
    handler = the_only(registry.activities.get_all_handlers())
    assert isinstance(handler, ActivityHandler)
    assert handler.fn is fn
    assert handler.id == "fn"
    assert handler.activity == activity
    assert handler.param is None
    assert handler.errors == kopf.ErrorsMode.TEMPORARY
    assert handler.timeout is None
    assert handler.retries is None
    assert handler.backoff is None  # resolved at run time from settings.execution.default_backoff


@pytest.mark.parametrize("decorator", [kopf.on.startup, kopf.on.cleanup, kopf.on.login, kopf.on.probe])
def test_activity_options(registry: OperatorRegistry, decorator: Callable[..., Any]) -> None:
    decorator(
        id="x", param=123, errors=kopf.ErrorsMode.PERMANENT, timeout=1.5, retries=3, backoff=0.5, registry=registry
    )(fn)
    handler = the_only(registry.activities.get_all_handlers())
    assert handler.id == "x"
    assert handler.param == 123
    assert handler.errors == kopf.ErrorsMode.PERMANENT
    assert handler.timeout == 1.5
    assert handler.retries == 3
    assert handler.backoff == 0.5


@pytest.mark.parametrize("decorator", [kopf.on.startup, kopf.on.cleanup, kopf.on.login, kopf.on.probe])
def test_activities_take_no_resources(decorator: Callable[..., Any]) -> None:
    with pytest.raises(TypeError):
        decorator("kopfexamples")


def test_activities_use_the_default_registry() -> None:
    old = kopf.get_default_registry()
    kopf.set_default_registry(new := OperatorRegistry())
    try:
        kopf.on.startup()(fn)
    finally:
        kopf.set_default_registry(old)
    assert len(new.activities) == 1


# Resource handlers: defaults.

RESOURCE_DECORATORS: list[tuple[Callable[..., Any], str, type]] = [
    (kopf.on.resume, "changing", ChangingHandler),
    (kopf.on.create, "changing", ChangingHandler),
    (kopf.on.update, "changing", ChangingHandler),
    (kopf.on.delete, "changing", ChangingHandler),
    (kopf.on.event, "watching", WatchingHandler),
    (kopf.on.daemon, "spawning", DaemonHandler),
    (kopf.on.timer, "spawning", TimerHandler),
    (kopf.on.index, "indexing", IndexingHandler),
    (kopf.on.validate, "webhooks", WebhookHandler),
    (kopf.on.mutate, "webhooks", WebhookHandler),
]


@pytest.mark.parametrize(("decorator", "kind", "cls"), RESOURCE_DECORATORS)
def test_resource_handler_common_defaults(
    registry: OperatorRegistry, decorator: Callable[..., Any], kind: str, cls: type
) -> None:
    result = decorator("kopfexamples", registry=registry)(fn)
    assert result is fn
    handler = the_only(getattr(registry, kind).get_all_handlers())
    assert type(handler) is cls
    assert handler.fn is fn
    assert handler.id == "fn"
    assert handler.param is None
    assert handler.selector == Selector("kopfexamples")
    assert handler.labels is None
    assert handler.annotations is None
    assert handler.when is None
    assert handler.field is None
    assert handler.value is None


@pytest.mark.parametrize(("decorator", "kind", "cls"), RESOURCE_DECORATORS)
def test_resource_handler_common_options(
    registry: OperatorRegistry, decorator: Callable[..., Any], kind: str, cls: type
) -> None:
    def when(**_: Any) -> bool:
        return True

    decorator(
        "kopf.dev",
        "v1",
        "kopfexamples",
        id="x",
        param={"p": 1},
        labels={"l": "v"},
        annotations={"a": kopf.PRESENT},
        when=when,
        field="spec.f",
        value=kopf.ABSENT,
        registry=registry,
    )(fn)
    handler = the_only(getattr(registry, kind).get_all_handlers())
    assert handler.id == "x"
    assert handler.param == {"p": 1}
    assert handler.selector == Selector("kopf.dev", "v1", "kopfexamples")
    assert handler.labels == {"l": "v"}
    assert handler.annotations == {"a": kopf.PRESENT}
    assert handler.when is when
    assert handler.field == ("spec", "f")
    assert handler.value is kopf.ABSENT


@pytest.mark.parametrize(("decorator", "kind", "cls"), RESOURCE_DECORATORS)
@pytest.mark.parametrize(
    ("args", "kwargs", "selector"),
    [
        (("kopf.dev/v1", "kopfexamples"), {}, Selector("kopf.dev", "v1", "kopfexamples")),
        (("kopfexamples.kopf.dev",), {}, Selector("kopf.dev", "kopfexamples")),
        (("v1", "pods"), {}, Selector("", "v1", "pods")),
        ((EVERYTHING,), {}, Selector(EVERYTHING)),
        ((), {"kind": "KopfExample"}, Selector(kind="KopfExample")),
        ((), {"plural": "kopfexamples"}, Selector(plural="kopfexamples")),
        ((), {"singular": "kopfexample"}, Selector(singular="kopfexample")),
        ((), {"shortcut": "kex"}, Selector(shortcut="kex")),
        ((), {"category": "all"}, Selector(category="all")),
        ((), {"group": "kopf.dev", "version": "v1", "plural": "kex"}, Selector("kopf.dev", "v1", plural="kex")),
    ],
)
def test_resource_specifications(
    registry: OperatorRegistry,
    decorator: Callable[..., Any],
    kind: str,
    cls: type,
    args: tuple[Any, ...],
    kwargs: dict[str, str],
    selector: Selector,
) -> None:
    decorator(*args, **kwargs, registry=registry)(fn)
    handler = the_only(getattr(registry, kind).get_all_handlers())
    assert handler.selector == selector


@pytest.mark.parametrize(("decorator", "kind", "cls"), RESOURCE_DECORATORS)
@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        ((), {}),
        (("kopf.dev", "v1", "kopfexamples"), {"kind": "KopfExample"}),
        (("kopf.dev", "v1", "kopfexamples"), {"group": "kopf.dev"}),
    ],
)
def test_resource_specification_errors(
    registry: OperatorRegistry,
    decorator: Callable[..., Any],
    kind: str,
    cls: type,
    args: tuple[Any, ...],
    kwargs: dict[str, str],
) -> None:
    with pytest.raises(TypeError):
        decorator(*args, **kwargs, registry=registry)
    assert len(getattr(registry, kind)) == 0


# Resource handlers: specifics.


@pytest.mark.parametrize(
    ("decorator", "reason"),
    [
        (kopf.on.resume, Reason.RESUME),
        (kopf.on.create, Reason.CREATE),
        (kopf.on.update, Reason.UPDATE),
        (kopf.on.delete, Reason.DELETE),
    ],
)
def test_changing_defaults(registry: OperatorRegistry, decorator: Callable[..., Any], reason: Reason) -> None:
    decorator("kex", registry=registry)(fn)
    handler = the_only(registry.changing.get_all_handlers())
    assert handler.reason == reason
    assert handler.errors == kopf.ErrorsMode.TEMPORARY
    assert handler.timeout is None
    assert handler.retries is None
    assert handler.backoff is None  # resolved at run time from settings.execution.default_backoff
    assert handler.old is None
    assert handler.new is None
    assert handler.deleted is False
    assert handler.optional is False
    assert handler.requires_finalizer is (reason == Reason.DELETE)


@pytest.mark.parametrize(
    "decorator",
    [
        kopf.on.resume,
        kopf.on.create,
        kopf.on.update,
        kopf.on.delete,
        kopf.daemon,
        kopf.timer,
        kopf.index,
    ],
)
def test_retrying_options(registry: OperatorRegistry, decorator: Callable[..., Any]) -> None:
    decorator("kex", errors=kopf.ErrorsMode.IGNORED, timeout=10, retries=5, backoff=1, registry=registry)(fn)
    handler = the_only([h for sub in registry.resource_registries for h in sub.get_all_handlers()])
    assert handler.errors == kopf.ErrorsMode.IGNORED
    assert handler.timeout == 10
    assert handler.retries == 5
    assert handler.backoff == 1


def test_resume_deleted(registry: OperatorRegistry) -> None:
    kopf.on.resume("kex", deleted=True, registry=registry)(fn)
    assert the_only(registry.changing.get_all_handlers()).deleted is True


def test_delete_optional(registry: OperatorRegistry) -> None:
    kopf.on.delete("kex", optional=True, registry=registry)(fn)
    handler = the_only(registry.changing.get_all_handlers())
    assert handler.optional is True
    assert handler.requires_finalizer is False


def test_update_old_new(registry: OperatorRegistry) -> None:
    kopf.on.update("kex", field="spec.f", old="x", new=kopf.PRESENT, registry=registry)(fn)
    handler = the_only(registry.changing.get_all_handlers())
    assert handler.old == "x"
    assert handler.new is kopf.PRESENT
    assert handler.id == "fn/spec.f"


def test_field_handlers(registry: OperatorRegistry) -> None:
    kopf.on.field("kex", field="spec.f", value="v", registry=registry)(fn)
    handler = the_only(registry.changing.get_all_handlers())
    assert handler.reason is None
    assert handler.field == ("spec", "f")
    assert handler.value == "v"
    assert handler.id == "fn/spec.f"
    assert handler.errors == kopf.ErrorsMode.TEMPORARY


def test_field_handlers_require_a_field(registry: OperatorRegistry) -> None:
    with pytest.raises(TypeError):
        kopf.on.field("kex", registry=registry)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="field"):
        kopf.on.field("kex", field="", registry=registry)


def test_event_defaults(registry: OperatorRegistry) -> None:
    kopf.on.event("kex", registry=registry)(fn)
    handler = the_only(registry.watching.get_all_handlers())
    assert handler.errors == kopf.ErrorsMode.IGNORED
    assert handler.requires_finalizer is False


def test_event_has_no_retrying_options() -> None:
    with pytest.raises(TypeError):
        kopf.on.event("kex", errors=kopf.ErrorsMode.PERMANENT)  # type: ignore[call-arg]


def test_index_defaults(registry: OperatorRegistry) -> None:
    kopf.index("pods", registry=registry)(fn)
    handler = the_only(registry.indexing.get_all_handlers())
    assert handler.errors == kopf.ErrorsMode.IGNORED
    assert handler.backoff is None  # resolved at run time from settings.execution.default_backoff
    assert handler.requires_finalizer is False


def test_daemon_defaults(registry: OperatorRegistry) -> None:
    kopf.daemon("kex", registry=registry)(fn)
    handler = the_only(registry.spawning.get_all_handlers())
    assert handler.errors == kopf.ErrorsMode.TEMPORARY
    assert handler.backoff is None  # resolved at run time from settings.execution.default_backoff
    assert handler.initial_delay is None
    assert handler.cancellation_backoff is None
    assert handler.cancellation_timeout is None
    assert handler.cancellation_polling is None
    assert handler.requires_finalizer is True


def test_daemon_options(registry: OperatorRegistry) -> None:
    kopf.daemon(
        "kex",
        initial_delay=30,
        cancellation_backoff=1.0,
        cancellation_timeout=3.0,
        cancellation_polling=5,
        registry=registry,
    )(fn)
    handler = the_only(registry.spawning.get_all_handlers())
    assert handler.initial_delay == 30
    assert handler.cancellation_backoff == 1.0
    assert handler.cancellation_timeout == 3.0
    assert handler.cancellation_polling == 5


def test_timer_defaults(registry: OperatorRegistry) -> None:
    kopf.timer("kex", registry=registry)(fn)
    handler = the_only(registry.spawning.get_all_handlers())
    assert handler.errors == kopf.ErrorsMode.TEMPORARY
    assert handler.backoff is None  # resolved at run time from settings.execution.default_backoff
    assert handler.interval is None
    assert handler.initial_delay is None
    assert handler.sharp is False
    assert handler.idle is None
    assert handler.requires_finalizer is True


def test_timer_options(registry: OperatorRegistry) -> None:
    kopf.timer("kex", initial_delay=60, interval=10, idle=600, sharp=True, registry=registry)(fn)
    handler = the_only(registry.spawning.get_all_handlers())
    assert (handler.initial_delay, handler.interval, handler.idle, handler.sharp) == (60, 10, 600, True)


def test_top_level_aliases() -> None:
    assert kopf.daemon is kopf.on.daemon
    assert kopf.timer is kopf.on.timer
    assert kopf.index is kopf.on.index
    assert kopf.register is kopf.on.register
    assert kopf.subhandler is kopf.on.subhandler
    assert kopf.on.this is kopf.on.subhandler


@pytest.mark.parametrize(
    ("decorator", "type_"),
    [
        (kopf.on.validate, WebhookType.VALIDATING),
        (kopf.on.mutate, WebhookType.MUTATING),
    ],
)
def test_webhook_defaults(registry: OperatorRegistry, decorator: Callable[..., Any], type_: WebhookType) -> None:
    decorator("kex", registry=registry)(fn)
    handler = the_only(registry.webhooks.get_all_handlers())
    assert handler.type == type_
    assert handler.operations is None
    assert handler.subresource is None
    assert handler.persistent is False
    assert handler.side_effects is False
    assert handler.ignore_failures is False
    assert handler.errors is None
    assert handler.requires_finalizer is False


@pytest.mark.parametrize("decorator", [kopf.on.validate, kopf.on.mutate])
def test_webhook_options(registry: OperatorRegistry, decorator: Callable[..., Any]) -> None:
    decorator(
        "kex",
        operation="UPDATE",
        subresource="status",
        persistent=True,
        side_effects=True,
        ignore_failures=True,
        registry=registry,
    )(fn)
    handler = the_only(registry.webhooks.get_all_handlers())
    assert handler.operations == {"UPDATE"}
    assert handler.subresource == "status"
    assert handler.persistent is True
    assert handler.side_effects is True
    assert handler.ignore_failures is True


@pytest.mark.parametrize("decorator", [kopf.on.validate, kopf.on.mutate])
@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"operation": "CREATE"}, {"CREATE"}),
        ({"operations": ["CREATE", "DELETE"]}, {"CREATE", "DELETE"}),
        ({"operations": ("CONNECT",)}, {"CONNECT"}),
        ({"operation": "*"}, None),
        ({"operations": ["*"]}, None),
        ({}, None),
    ],
)
def test_webhook_operations(
    registry: OperatorRegistry, decorator: Callable[..., Any], kwargs: dict[str, Any], expected: set[str] | None
) -> None:
    decorator("kex", **kwargs, registry=registry)(fn)
    assert the_only(registry.webhooks.get_all_handlers()).operations == expected


@pytest.mark.parametrize("decorator", [kopf.on.validate, kopf.on.mutate])
def test_webhook_operations_errors(registry: OperatorRegistry, decorator: Callable[..., Any]) -> None:
    with pytest.raises(TypeError):
        decorator("kex", operation="CREATE", operations=["UPDATE"], registry=registry)
    with pytest.raises(TypeError):
        decorator("kex", operations="CREATE", registry=registry)
    with pytest.raises(ValueError, match="Unsupported"):
        decorator("kex", operation="PATCH", registry=registry)


@pytest.mark.parametrize("decorator", [kopf.on.validate, kopf.on.mutate])
@pytest.mark.parametrize("option", ["errors", "timeout", "retries", "backoff"])
def test_webhooks_do_not_accept_retrying_options(decorator: Callable[..., Any], option: str) -> None:
    with pytest.raises(TypeError):
        decorator("kex", **{option: None})


def test_stacked_decorators(registry: OperatorRegistry) -> None:
    @kopf.on.resume("kopfexamples", registry=registry)
    @kopf.on.create("kopfexamples", registry=registry)
    def my_handler(**_: Any) -> None:
        pass

    assert [h.reason for h in registry.changing.get_all_handlers()] == [Reason.CREATE, Reason.RESUME]
    assert {h.fn for h in registry.changing.get_all_handlers()} == {my_handler}


def test_decorating_instance_methods_explicitly(registry: OperatorRegistry) -> None:
    class MyCls:
        def my_handler(self, spec: Any, **kwargs: Any) -> Any:
            return self

    instance = MyCls()
    kopf.on.create("kopfexamples", registry=registry)(instance.my_handler)
    handler = the_only(registry.changing.get_all_handlers())
    assert handler.fn(spec={}) is instance


def test_async_handlers_are_registered_as_is(registry: OperatorRegistry) -> None:
    async def create_fn(**_: Any) -> None:
        pass

    assert kopf.on.create("kex", registry=registry)(create_fn) is create_fn
    assert the_only(registry.changing.get_all_handlers()).fn is create_fn


# Sub-handlers.


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
