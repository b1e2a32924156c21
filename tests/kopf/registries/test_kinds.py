"""Daemons, timers, indices, activities and webhooks in the registry."""

from typing import Any

import pytest

import kopf
from kopf._core.intents.causes import Activity, WebhookType
from kopf._core.intents.registries import OperatorRegistry

from .helpers import KEX, PODS, fn1, fn2, ids_of, obj


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
