"""Which resources the handlers need served."""

import kopf
from kopf._cogs.structs.references import Selector
from kopf._core.intents.registries import OperatorRegistry

from .helpers import KEX, METRIC_PODS, PODS, WIDGETS_A, WIDGETS_B, fn1


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
