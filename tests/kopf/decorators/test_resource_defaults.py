"""The resource handlers' decorators with their defaults."""

from collections.abc import Callable
from typing import Any

import pytest

import kopf
from kopf._cogs.structs.references import EVERYTHING, Selector
from kopf._core.intents.handlers import (
    ChangingHandler,
    DaemonHandler,
    IndexingHandler,
    TimerHandler,
    WatchingHandler,
    WebhookHandler,
)
from kopf._core.intents.registries import OperatorRegistry

from .helpers import fn, the_only

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
