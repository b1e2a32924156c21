"""The default registry: one per process, replaceable."""

import kopf
from kopf._core.intents.registries import OperatorRegistry

from .helpers import fn1


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
