"""End-to-end: daemons & timers through the reactor against the simulated cluster (in virtual time)."""

import asyncio
from typing import Any

import pytest

import kopf
from kopf._cogs.clients.watching import Toggle
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.structs.credentials import Vault
from kopf._core.engines.daemons import DaemonsMemory, DaemonStopped, DaemonStoppingReason, stop_all
from kopf._core.intents.registries import OperatorRegistry
from kopf._core.reactor.memories import ResourceMemories
from tests.helpers import wait_for

from .conftest import FINALIZER, Objects, Operator, process_event

pytestmark = pytest.mark.looptime


async def stop_daemons_of(operator: Operator) -> None:
    """Stop the daemons left after the test (the minimal operator of the fixtures has no daemon killer)."""
    await stop_daemons_in(operator.memories, settings=operator.settings)


async def stop_daemons_in(memories: ResourceMemories, *, settings: OperatorSettings) -> None:
    await stop_all(
        [
            memory.extras["daemons"]
            for memory in memories.iter_all_memories()
            if isinstance(memory.extras.get("daemons"), DaemonsMemory)
        ],
        settings=settings,
    )


async def test_daemon_runs_while_the_object_exists_and_blocks_its_deletion(
    operator: Operator,
    registry: OperatorRegistry,
    objects: Objects,
) -> None:
    events: list[str] = []

    @kopf.daemon("kopfexamples", registry=registry, cancellation_backoff=5)
    async def monitor(stopped: DaemonStopped, name: str, **_: Any) -> None:
        events.append(f"started {name}")
        while not stopped:
            await stopped.wait(10)
        events.append(f"stopping {name}: {stopped.reason!r}")
        await asyncio.sleep(2)  # a graceful cleanup: the object waits for it.
        events.append(f"stopped {name}")

    objects.create("kex1")
    operator.start()
    await wait_for(lambda: "started kex1" in events)
    assert FINALIZER in objects.finalizers("kex1")
    await asyncio.sleep(100)
    assert events == ["started kex1"]  # not re-spawned by further events.

    objects.delete("kex1")
    await wait_for(lambda: len(events) >= 2)
    assert "RESOURCE_DELETED" in events[1]
    assert objects.get("kex1") is not None  # still blocked by the finalizer while the daemon exits.
    await wait_for(lambda: objects.get("kex1") is None, timeout=30)
    assert events[-1] == "stopped kex1"
    await stop_daemons_of(operator)


async def test_timer_results_go_to_the_status(
    operator: Operator,
    registry: OperatorRegistry,
    objects: Objects,
) -> None:
    counter = 0

    @kopf.timer("kopfexamples", registry=registry, interval=10)
    def tick(**_: Any) -> int:
        nonlocal counter
        counter += 1
        return counter

    objects.create("kex1")
    operator.start()
    await wait_for(lambda: objects.results("kex1").get("tick") == 3, timeout=60)
    objects.delete("kex1")
    await wait_for(lambda: objects.get("kex1") is None, timeout=30)
    await stop_daemons_of(operator)


async def test_daemon_stops_when_the_filters_stop_matching(
    operator: Operator,
    registry: OperatorRegistry,
    objects: Objects,
) -> None:
    reasons: list[Any] = []

    @kopf.daemon("kopfexamples", registry=registry, labels={"monitored": "yes"})
    async def monitor(stopped: Any, **_: Any) -> None:
        await stopped.wait()
        reasons.append(stopped.reason)

    objects.create("kex1", labels={"monitored": "yes"})
    operator.start()
    await wait_for(
        lambda: (
            operator.memories.iter_all_memories()
            and any(
                m.extras.get("daemons") and m.extras["daemons"].running for m in operator.memories.iter_all_memories()
            )
        )
    )
    objects.patch("kex1", {"metadata": {"labels": {"monitored": "no"}}})
    await wait_for(lambda: bool(reasons))
    assert reasons == [DaemonStoppingReason.FILTERS_MISMATCH]
    await stop_daemons_of(operator)


async def test_finalizer_stays_until_the_mismatching_daemon_is_gone(
    operator: Operator,
    registry: OperatorRegistry,
    objects: Objects,
) -> None:
    events: list[str] = []

    @kopf.daemon("kopfexamples", registry=registry, labels={"monitored": "yes"}, cancellation_backoff=30)
    async def monitor(stopped: DaemonStopped, **_: Any) -> None:
        events.append("started")
        await stopped.wait()
        events.append("stopping")
        await asyncio.sleep(5)  # a graceful cleanup: the object stays blocked meanwhile.
        events.append("stopped")

    objects.create("kex1", labels={"monitored": "yes"})
    operator.start()
    await wait_for(lambda: events == ["started"] and FINALIZER in objects.finalizers("kex1"))
    objects.patch("kex1", {"metadata": {"labels": {"monitored": "no"}}})
    await wait_for(lambda: "stopping" in events)
    await asyncio.sleep(3)
    assert FINALIZER in objects.finalizers("kex1")  # the daemon is still stopping.
    await wait_for(lambda: FINALIZER not in objects.finalizers("kex1"), timeout=30)
    assert events == ["started", "stopping", "stopped"]
    await stop_daemons_of(operator)


async def test_no_daemons_are_spawned_while_the_operator_is_paused(
    registry: OperatorRegistry,
    settings: OperatorSettings,
    vault: Vault,
    objects: Objects,
) -> None:
    """An event already in work as a pause begins (e.g. waiting for its patch's echo) spawns nothing until resumed."""
    started: list[str] = []

    @kopf.daemon("kopfexamples", registry=registry)
    async def monitor(stopped: DaemonStopped, name: str, **_: Any) -> None:
        started.append(name)
        await stopped.wait()

    objects.create("kex1")
    body = objects.patch("kex1", {"metadata": {"finalizers": [FINALIZER]}})
    memories = ResourceMemories()
    paused = Toggle(True)

    await process_event(
        body, registry=registry, settings=settings, memories=memories, vault=vault, operator_paused=paused
    )
    await asyncio.sleep(10)
    assert started == []

    await paused.turn_to(False)
    after = objects.get("kex1")  # the object's next event after resuming
    await process_event(
        after, registry=registry, settings=settings, memories=memories, vault=vault, operator_paused=paused
    )
    await wait_for(lambda: started == ["kex1"])
    await stop_daemons_in(memories, settings=settings)
