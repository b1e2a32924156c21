"""The resource handlers' decorators, kind by kind, with their specific options."""

from collections.abc import Callable
from typing import Any

import pytest

import kopf
from kopf._core.intents.causes import Reason, WebhookType
from kopf._core.intents.registries import OperatorRegistry

from .helpers import fn, the_only


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
