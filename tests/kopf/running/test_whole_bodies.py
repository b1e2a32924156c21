"""Which watchers keep the last seen bodies whole (for the objects gone while a watch-stream was broken)."""

from typing import Any

import kopf
from kopf._cogs.structs.references import Resource
from kopf._core.intents.registries import OperatorRegistry
from kopf._core.reactor.running import _needs_whole_bodies

KEX = Resource("kopf.dev", "v1", "kopfexamples", namespaced=True, kind="KopfExample")


def test_an_operator_with_state_changing_handlers_only_keeps_the_identities() -> None:
    registry = OperatorRegistry()

    @kopf.on.create("kopfexamples", registry=registry)
    @kopf.on.delete("kopfexamples", registry=registry)
    @kopf.daemon("kopfexamples", registry=registry)
    def fn(**_: Any) -> None: ...

    assert not _needs_whole_bodies(registry, KEX)


def test_the_event_watching_handlers_need_the_whole_bodies() -> None:
    registry = OperatorRegistry()

    @kopf.on.event("kopfexamples", registry=registry)
    def fn(**_: Any) -> None: ...

    assert _needs_whole_bodies(registry, KEX)


def test_the_indexers_need_the_whole_bodies() -> None:
    registry = OperatorRegistry()

    @kopf.index("kopfexamples", registry=registry)
    def fn(**_: Any) -> None: ...

    assert _needs_whole_bodies(registry, KEX)
