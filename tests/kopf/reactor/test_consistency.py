"""The processor directly (no watcher): consistency after own patches, stale events, the touch-dummy."""

import asyncio
import logging
from typing import Any

import pytest

import kopf
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.structs.credentials import Vault
from kopf._core.actions import invocation
from kopf._core.intents.registries import OperatorRegistry
from kopf._core.reactor import processing
from kopf._core.reactor.memories import ResourceMemories

from .conftest import DIFFBASE, Objects
from .conftest import process_event as process

pytestmark = pytest.mark.looptime


async def test_stale_versions_do_not_run_the_handlers_again(
    vault: Vault,
    settings: OperatorSettings,
    registry: OperatorRegistry,
    objects: Objects,
    caplog: pytest.LogCaptureFixture,
) -> None:
    loop = asyncio.get_running_loop()
    calls: list[str] = []

    @kopf.on.create("kopfexamples", registry=registry)
    def create_fn(**_: Any) -> None:
        calls.append("create")

    memories = ResourceMemories()
    stale = objects.create("kex1")
    await process(stale, registry=registry, settings=settings, memories=memories, vault=vault)
    assert calls == ["create"]
    assert DIFFBASE in objects.annotations("kex1")

    # The old version arrives again (e.g. a delayed event): not processed while waiting for the patched one.
    pressure = asyncio.Event()
    task = asyncio.create_task(
        process(stale, pressure=pressure, registry=registry, settings=settings, memories=memories, vault=vault)
    )
    await asyncio.sleep(1)
    assert not task.done()
    pressure.set()  # a newer event has arrived: the stale one is abandoned.
    await task
    assert calls == ["create"]

    # The patched version arrives: consistent, nothing to do (no changes since the handling).
    fresh = objects.get("kex1")
    await process(fresh, registry=registry, settings=settings, memories=memories, vault=vault)
    assert calls == ["create"]

    # Without the expected version and no newer events, the stale version is processed after the timeout.
    memory = memories.recall(stale)
    memory.expected_version = "999999"
    memory.expected_deadline = loop.time() + settings.persistence.consistency_timeout
    started = loop.time()
    await process(fresh, registry=registry, settings=settings, memories=memories, vault=vault)
    assert loop.time() - started == pytest.approx(settings.persistence.consistency_timeout, abs=0.5)
    assert "has not arrived in time" in caplog.text
    assert calls == ["create"]  # the diff-base is there anyway: no repeated creation.


async def test_a_superseded_stale_event_is_dropped_before_its_body_is_made(
    vault: Vault,
    settings: OperatorSettings,
    registry: OperatorRegistry,
    objects: Objects,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    @kopf.on.create("kopfexamples", registry=registry)
    def create_fn(**_: Any) -> None:
        pass

    memories = ResourceMemories()
    stale = objects.create("kex1")
    await process(stale, registry=registry, settings=settings, memories=memories, vault=vault)

    made: list[Any] = []
    original_body = processing.bodies.Body

    def counted(raw: Any) -> Any:
        made.append(raw)
        return original_body(raw)

    monkeypatch.setattr(processing.bodies, "Body", counted)
    caplog.set_level(logging.DEBUG)
    pressure = asyncio.Event()
    task = asyncio.create_task(
        process(stale, pressure=pressure, registry=registry, settings=settings, memories=memories, vault=vault)
    )
    await asyncio.sleep(1)
    pressure.set()
    await task
    assert made == []
    assert "Waiting for the version" in caplog.text  # the same debug line as before, with the object's prefix
    assert any(getattr(record, "k8s_ref", {}).get("name") == "kex1" for record in caplog.records)


async def test_the_echo_makes_no_kwargs_unless_a_filter_callback_reads_them(
    vault: Vault,
    settings: OperatorSettings,
    registry: OperatorRegistry,
    objects: Objects,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    @kopf.on.create("kopfexamples", registry=registry, labels={"app": kopf.ABSENT})
    def create_fn(**_: Any) -> None:
        pass

    memories = ResourceMemories()
    await process(objects.create("kex1"), registry=registry, settings=settings, memories=memories, vault=vault)

    made: list[str] = []
    original = invocation.ChangingCause.framework_kwargs

    def counted(cause: invocation.ChangingCause) -> dict[str, Any]:
        made.append(cause.reason)
        return original(cause)

    monkeypatch.setattr(invocation.ChangingCause, "framework_kwargs", counted)
    echo = objects.get("kex1")
    await process(echo, registry=registry, settings=settings, memories=memories, vault=vault)
    assert made == []  # nothing to handle, no callbacks to call: the views of the body are not made

    seen: list[dict[str, Any]] = []

    def when_fn(**kwargs: Any) -> bool:
        seen.append(kwargs)
        return False

    filtering = OperatorRegistry()

    @kopf.on.update("kopfexamples", registry=filtering, when=when_fn)
    @kopf.on.delete("kopfexamples", registry=filtering, when=when_fn)
    def update_fn(**_: Any) -> None:
        pass

    await process(echo, registry=filtering, settings=settings, memories=memories, vault=vault)
    assert made == [kopf.Reason.NOOP]  # made once for all the filters that read them
    assert len(seen) >= 2
    assert seen and all(kwargs["name"] == "kex1" and kwargs["reason"] == kopf.Reason.NOOP for kwargs in seen)
    assert {"body", "spec", "meta", "patch", "logger", "memo", "diff", "old", "new"} <= set(seen[0])


async def test_newer_versions_than_expected_are_consistent(
    vault: Vault,
    settings: OperatorSettings,
    registry: OperatorRegistry,
    objects: Objects,
) -> None:
    calls: list[Any] = []

    @kopf.on.create("kopfexamples", registry=registry)
    def create_fn(**_: Any) -> None:
        pass

    @kopf.on.update("kopfexamples", registry=registry)
    def update_fn(new: Any, **_: Any) -> None:
        calls.append(new["spec"])

    memories = ResourceMemories()
    await process(objects.create("kex1"), registry=registry, settings=settings, memories=memories, vault=vault)
    newer = objects.patch("kex1", {"spec": {"x": 1}})  # the patched version is never seen on its own.
    loop = asyncio.get_running_loop()
    started = loop.time()
    await process(newer, registry=registry, settings=settings, memories=memories, vault=vault)
    assert loop.time() - started < 1
    assert calls == [{"x": 1}]


async def test_delays_are_slept_then_touched(
    vault: Vault,
    settings: OperatorSettings,
    registry: OperatorRegistry,
    objects: Objects,
) -> None:
    @kopf.on.create("kopfexamples", registry=registry)
    def create_fn(retry: int, **_: Any) -> None:
        if not retry:
            raise kopf.TemporaryError("later", delay=30)

    memories = ResourceMemories()
    loop = asyncio.get_running_loop()
    body = objects.create("kex1")
    await process(body, registry=registry, settings=settings, memories=memories, vault=vault, pressure=asyncio.Event())
    # The progress is stored, then 30s are slept out, then the object is touched to cause a new event.
    assert loop.time() == pytest.approx(30, abs=1)
    assert "kopf.zalando.org/touch-dummy" in objects.annotations("kex1")
    assert "kopf.zalando.org/create_fn" in objects.annotations("kex1")

    # The touch's event continues the handling; when done, the dummy is removed.
    await process(objects.get("kex1"), registry=registry, settings=settings, memories=memories, vault=vault)
    assert DIFFBASE in objects.annotations("kex1")
    assert "kopf.zalando.org/touch-dummy" not in objects.annotations("kex1")
    assert "kopf.zalando.org/create_fn" not in objects.annotations("kex1")


async def test_gone_objects_are_forgotten(
    vault: Vault,
    settings: OperatorSettings,
    registry: OperatorRegistry,
    objects: Objects,
) -> None:
    memories = ResourceMemories()
    body = objects.create("kex1")
    await process(body, event_type=None, registry=registry, settings=settings, memories=memories, vault=vault)
    assert len(memories) == 1
    await process(body, event_type="DELETED", registry=registry, settings=settings, memories=memories, vault=vault)
    assert len(memories) == 0
