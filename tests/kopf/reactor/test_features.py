"""End-to-end: filters, event-watching handlers, sub-handlers, memos, and the stealth mode."""

import asyncio
import json
import logging
from typing import Any

import pytest

import kopf
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.structs.credentials import Vault
from kopf._core.actions.execution import execute  # not exported as kopf.execute yet.
from kopf._core.intents.registries import OperatorRegistry
from tests.helpers import wait_for

from .conftest import DIFFBASE, Objects, Operator

pytestmark = pytest.mark.looptime


async def test_event_handlers_see_every_event(
    operator: Operator,
    registry: OperatorRegistry,
    objects: Objects,
) -> None:
    events: list[tuple[str | None, str]] = []

    @kopf.on.event("kopfexamples", registry=registry)
    def event_fn(type: str | None, event: Any, name: str, **_: Any) -> None:
        assert event["object"]["metadata"]["name"] == name
        events.append((type, name))

    @kopf.on.event("kopfexamples", registry=registry)
    def broken_fn(**_: Any) -> None:
        raise ValueError("ignored")

    objects.create("kex1")
    operator.start()
    await wait_for(lambda: events)
    assert events == [(None, "kex1")]  # the initial listing.
    objects.create("kex2")
    await wait_for(lambda: len(events) == 2)
    objects.delete("kex1")
    await wait_for(lambda: len(events) == 3)
    assert events[1:] == [("ADDED", "kex2"), ("DELETED", "kex1")]
    # No traces of the silent handlers on the objects.
    assert objects.annotations("kex2") == {}
    assert objects.status("kex2") == {}


async def test_event_handler_errors_are_logged_as_published(
    operator: Operator,
    registry: OperatorRegistry,
    objects: Objects,
    caplog: pytest.LogCaptureFixture,
) -> None:
    @kopf.on.event("kopfexamples", registry=registry)
    def watcher(**_: Any) -> None:
        raise ValueError("event handler error")

    @kopf.on.event("kopfexamples", registry=registry)
    def silent(**_: Any) -> None:
        raise KeyError()

    objects.create("kex1")
    operator.start()
    await wait_for(lambda: any("'silent'" in r.getMessage() for r in caplog.records))
    errors = [(r.getMessage(), r.exc_info is not None) for r in caplog.records if r.levelno == logging.ERROR]
    assert errors == [
        ("Handler 'watcher' failed with an exception and will ignore it: event handler error", True),
        ("Handler 'silent' failed with an exception and will ignore it: KeyError()", True),
    ]


async def test_label_annotation_when_filters(
    operator: Operator,
    registry: OperatorRegistry,
    objects: Objects,
) -> None:
    calls: list[tuple[str, str]] = []

    @kopf.on.create("kopfexamples", registry=registry, labels={"app": "yes"})
    def by_label(name: str, **_: Any) -> None:
        calls.append(("label", name))

    @kopf.on.create("kopfexamples", registry=registry, labels={"app": kopf.ABSENT})
    def by_absent_label(name: str, **_: Any) -> None:
        calls.append(("absent", name))

    @kopf.on.create("kopfexamples", registry=registry, annotations={"note": kopf.PRESENT})
    def by_annotation(name: str, **_: Any) -> None:
        calls.append(("annotation", name))

    @kopf.on.create("kopfexamples", registry=registry, when=lambda spec, **_: spec.get("x") == 1)
    def by_when(name: str, **_: Any) -> None:
        calls.append(("when", name))

    @kopf.on.create("kopfexamples", registry=registry, field="spec.y", value=lambda v, **_: v is not None and v > 10)
    def by_field_value(name: str, **_: Any) -> None:
        calls.append(("field", name))

    objects.create("a", labels={"app": "yes"})
    objects.create("b", labels={"app": "no"}, annotations={"note": ""})
    objects.create("c", x=1, y=20)
    objects.create("d", y=5)
    operator.start()
    await wait_for(lambda: all(DIFFBASE in objects.annotations(name) for name in "abcd"))
    assert sorted(calls) == sorted(
        [
            ("label", "a"),
            ("annotation", "b"),
            ("absent", "c"),
            ("when", "c"),
            ("field", "c"),
            ("absent", "d"),
        ]
    )


async def test_update_filters_old_new(
    operator: Operator,
    registry: OperatorRegistry,
    objects: Objects,
) -> None:
    calls: list[str] = []

    @kopf.on.update("kopfexamples", registry=registry, field="spec.phase", old="a", new="b")
    def a_to_b(**_: Any) -> None:
        calls.append("a->b")

    @kopf.on.update("kopfexamples", registry=registry, field="spec.phase", new=kopf.ABSENT)
    def removed(**_: Any) -> None:
        calls.append("removed")

    objects.create("kex1", phase="a")
    operator.start()
    await wait_for(lambda: DIFFBASE in objects.annotations("kex1"))
    objects.patch("kex1", {"spec": {"phase": "b"}})
    await wait_for(lambda: calls == ["a->b"])
    objects.patch("kex1", {"spec": {"phase": "c"}})
    await wait_for(lambda: "c" in objects.annotations("kex1")[DIFFBASE])
    objects.patch("kex1", {"spec": {"phase": None}})
    await wait_for(lambda: calls == ["a->b", "removed"])


async def test_stealth_mode_and_starting_to_match_is_a_creation(
    operator: Operator,
    registry: OperatorRegistry,
    objects: Objects,
) -> None:
    calls: list[str] = []

    @kopf.on.create("kopfexamples", registry=registry, labels={"app": "yes"})
    def create_fn(**_: Any) -> None:
        calls.append("create")

    @kopf.on.update("kopfexamples", registry=registry, labels={"app": "yes"})
    def update_fn(**_: Any) -> None:
        calls.append("update")

    objects.create("kex1")
    operator.start()
    await asyncio.sleep(10)
    assert objects.annotations("kex1") == {}  # not in scope: no traces at all.
    objects.patch("kex1", {"metadata": {"labels": {"app": "yes"}}})
    await wait_for(lambda: DIFFBASE in objects.annotations("kex1"))
    assert calls == ["create"]


async def test_server_side_label_selector(
    vault: Vault,
    settings: OperatorSettings,
    registry: OperatorRegistry,
    objects: Objects,
) -> None:
    seen: list[str] = []

    @kopf.on.event("kopfexamples", registry=registry)
    def event_fn(name: str, **_: Any) -> None:
        seen.append(name)

    objects.create("a", labels={"app": "yes"})
    objects.create("b", labels={"app": "no"})
    operator = Operator(vault=vault, settings=settings, registry=registry, label_selector={"app": "yes"})
    operator.start()
    try:
        await wait_for(lambda: seen)
        objects.create("c", labels={"app": "yes"})
        objects.create("d")
        await wait_for(lambda: len(seen) == 2)
        await asyncio.sleep(10)
        assert seen == ["a", "c"]
    finally:
        await operator.stop()


async def test_subhandlers_via_register(
    operator: Operator,
    registry: OperatorRegistry,
    objects: Objects,
) -> None:
    calls: list[str] = []

    @kopf.on.create("kopfexamples", registry=registry)
    def create_fn(spec: Any, **_: Any) -> None:
        calls.append("parent")
        for item in spec["items"]:

            def handle_item(retry: int, item: str = item, **_: Any) -> str:
                calls.append(f"{item}#{retry}")
                if item == "b" and retry < 1:
                    raise kopf.TemporaryError("later", delay=5)
                return item.upper()

            kopf.register(handle_item, id=item)

    objects.create("kex1", items=["a", "b"])
    operator.start()
    await wait_for(lambda: DIFFBASE in objects.annotations("kex1"), timeout=100)
    assert calls.count("a#0") == 1  # idempotent: not re-executed when the parent is re-called.
    assert calls.count("b#0") == 1
    assert calls.count("b#1") == 1
    assert objects.results("kex1") == {"create_fn/a": "A", "create_fn/b": "B"}
    assert not any(key.startswith("kopf.zalando.org/create_fn") for key in objects.annotations("kex1"))


async def test_subhandlers_via_execute(
    operator: Operator,
    registry: OperatorRegistry,
    objects: Objects,
) -> None:
    calls: list[str] = []

    @kopf.on.create("kopfexamples", registry=registry)
    async def create_fn(**_: Any) -> str:
        calls.append("entering")
        await execute(fns={"x": lambda **_: calls.append("x"), "y": lambda **_: calls.append("y")})
        calls.append("leaving")
        return "ok"

    objects.create("kex1")
    operator.start()
    await wait_for(lambda: DIFFBASE in objects.annotations("kex1"), timeout=100)
    assert calls.count("x") == calls.count("y") == calls.count("leaving") == 1
    assert objects.results("kex1")["create_fn"] == "ok"


async def test_memos_are_per_object_and_forked_from_the_operator_memo(
    operator: Operator,
    registry: OperatorRegistry,
    objects: Objects,
) -> None:
    operator.memo = kopf.Memo(shared=[], counter=0)
    seen: dict[str, Any] = {}

    @kopf.on.event("kopfexamples", registry=registry)
    def event_fn(memo: kopf.Memo, name: str, **_: Any) -> None:
        memo.counter += 1
        memo.shared.append(name)

    @kopf.on.create("kopfexamples", registry=registry)
    def create_fn(memo: kopf.Memo, name: str, **_: Any) -> None:
        memo.created = True
        seen[name] = memo

    objects.create("a")
    objects.create("b")
    operator.start()
    await wait_for(lambda: len(seen) == 2)
    await wait_for(lambda: all(DIFFBASE in objects.annotations(n) for n in "ab"))
    assert seen["a"] is not seen["b"]
    assert seen["a"].created and seen["b"].created
    assert seen["a"].counter >= 1 and seen["b"].counter >= 1
    assert operator.memo.counter == 0  # the operator's memo is not modified (shallow copies).
    assert seen["a"].shared is operator.memo.shared  # but its mutable values are shared.
    assert "created" not in operator.memo


async def test_handler_patches_are_applied(
    operator: Operator,
    registry: OperatorRegistry,
    objects: Objects,
) -> None:
    @kopf.on.create("kopfexamples", registry=registry)
    def create_fn(patch: kopf.Patch, **_: Any) -> None:
        patch.status["phase"] = "Created"
        patch.metadata.labels["handled"] = "yes"

    objects.create("kex1")
    operator.start()
    await wait_for(lambda: DIFFBASE in objects.annotations("kex1"))
    await wait_for(lambda: (objects.get("kex1") or {})["metadata"].get("labels") == {"handled": "yes"})
    assert objects.results("kex1") == {"phase": "Created"}
    # The label set by the handler itself is a change: seen as such in the next diff-base.
    await wait_for(
        lambda: "handled" in json.loads(objects.annotations("kex1")[DIFFBASE]).get("metadata", {}).get("labels", {})
    )


async def test_handlers_with_the_same_id_for_one_cause(
    operator: Operator,
    registry: OperatorRegistry,
    objects: Objects,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """As in the published framework: accepted; only the first is called, its success is theirs (one id)."""
    calls: list[str] = []

    @kopf.on.create("kopfexamples", id="dup", registry=registry)
    def dup1(**_: Any) -> int:
        calls.append("dup1")
        return 1

    @kopf.on.create("kopfexamples", id="dup", registry=registry)
    def dup2(**_: Any) -> int:
        calls.append("dup2")
        return 2

    objects.create("kex1")
    operator.start()
    await wait_for(lambda: DIFFBASE in objects.annotations("kex1"))
    await asyncio.sleep(10)
    assert calls == ["dup1"]
    assert objects.status("kex1") == {"dup": 1}
    assert "Creation is processed: 1 succeeded; 0 failed." in [r.getMessage() for r in caplog.records]
