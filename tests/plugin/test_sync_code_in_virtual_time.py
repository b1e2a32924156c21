"""Sync operator code in virtual time: daemons, timers and handlers that wait or sleep in threads, and wall clocks.

These run in the suite's own session (sim mode): a day of virtual time with sync daemons on ten objects
costs a second or two of CPU (``benchmarks/bench_threads.py`` measures it).
"""

from __future__ import annotations

import asyncio
import datetime
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import kopf
from pytest_kopf.cluster import KopfCluster
from pytest_kopf.operator import KopfOperator

from .conftest import BASE, NO_ASYNCIO

CRD = str(Path(__file__).parent.parent.parent / "examples" / "crd.yaml")
DAY = 24 * 3600
OBJECTS = 10

pytestmark = pytest.mark.kopf_sim_only


def example(name: str) -> dict[str, Any]:
    return {"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "metadata": {"name": name}, "spec": {}}


def settings_for(workers: int) -> kopf.OperatorSettings:
    settings = kopf.OperatorSettings()
    settings.peering.standalone = True
    settings.execution.max_workers = workers  # every sync daemon holds a worker for its whole life
    return settings


async def test_a_day_of_sync_daemons_timers_and_sleeping_handlers_on_ten_objects(
    kopf_cluster: KopfCluster, kopf_operator: KopfOperator
) -> None:
    registry = kopf.OperatorRegistry()
    loop = asyncio.get_running_loop()
    lock = threading.Lock()
    waits: dict[str, int] = {}
    sleeps: dict[str, int] = {}
    ticks: dict[str, int] = {}
    handled: dict[str, float] = {}
    exits: dict[tuple[str, str], float] = {}

    def count(counter: dict[str, int], name: str) -> None:
        with lock:
            counter[name] = counter.get(name, 0) + 1

    @kopf.daemon("kopfexamples", registry=registry)
    def waiting(stopped: Any, name: str, **_: Any) -> None:  # the documented pattern
        while not stopped:
            count(waits, name)
            stopped.wait(10)
        exits[("waiting", name)] = loop.time()

    @kopf.daemon("kopfexamples", registry=registry, cancellation_timeout=90)
    def sleeping(stopped: Any, name: str, **_: Any) -> None:
        while not stopped:
            count(sleeps, name)
            time.sleep(60)
        exits[("sleeping", name)] = loop.time()

    @kopf.timer("kopfexamples", registry=registry, interval=3600)
    def hourly(name: str, **_: Any) -> None:
        time.sleep(5)  # a sleeping timer: idle too
        count(ticks, name)

    @kopf.on.create("kopfexamples", registry=registry)
    def create_fn(name: str, **_: Any) -> None:
        started = loop.time()
        time.sleep(30)
        handled[name] = loop.time() - started

    await kopf_cluster.apply(CRD)
    await kopf_operator.start(registry=registry, settings=settings_for(3 * OBJECTS))
    for i in range(OBJECTS):
        await kopf_cluster.create(example(f"ex{i}"))
    await asyncio.sleep(DAY)

    names = [f"ex{i}" for i in range(OBJECTS)]
    assert handled == {name: 30.0 for name in names}
    assert all(DAY // 10 - 1 <= waits[name] <= DAY // 10 + 1 for name in names), waits
    assert all(DAY // 60 - 1 <= sleeps[name] <= DAY // 60 + 1 for name in names), sleeps
    assert all(DAY // 3600 - 1 <= ticks[name] <= DAY // 3600 + 1 for name in names), ticks

    # On deletion: the waiting daemon exits at once, the sleeping one at the end of its sleep (< 90 s).
    deleted = loop.time()
    await kopf_cluster.delete("kopfexamples", "ex0")
    await kopf_cluster.wait_gone("kopfexamples", "ex0", timeout=120)
    assert exits[("waiting", "ex0")] - deleted < 1
    assert exits[("sleeping", "ex0")] - deleted <= 60

    # On the operator's stop: all the others exit within their cancellation timeouts, no thread left behind.
    stopping = loop.time()
    await kopf_operator.stop(timeout=120)  # the sleeping daemons finish their sleep (60 s) first
    assert kopf_operator.exception is None
    assert {key for key in exits if key[1] != "ex0"} == {
        (kind, name) for kind in ("waiting", "sleeping") for name in names[1:]
    }
    assert all(moment - stopping <= 60 for key, moment in exits.items() if key[1] != "ex0")


async def test_wall_clocks_in_handlers_follow_the_virtual_clock(
    kopf_cluster: KopfCluster, kopf_operator: KopfOperator
) -> None:
    registry = kopf.OperatorRegistry()
    seen: dict[str, Any] = {}

    @kopf.on.create("kopfexamples", registry=registry)
    def create_fn(meta: Any, **_: Any) -> None:
        created = datetime.datetime.fromisoformat(meta["creationTimestamp"].replace("Z", "+00:00"))
        seen["age at creation"] = datetime.datetime.now(datetime.UTC) - created
        seen["time.time"] = time.time()
        seen["utcnow"] = datetime.datetime.utcnow()

    @kopf.daemon("kopfexamples", registry=registry)
    def aging(stopped: Any, meta: Any, **_: Any) -> None:
        created = datetime.datetime.fromisoformat(meta["creationTimestamp"].replace("Z", "+00:00"))
        stopped.wait(3600)
        seen["age after an hour"] = datetime.datetime.now(datetime.UTC) - created
        seen["monotonic"] = time.monotonic()

    await kopf_cluster.apply(CRD)
    await kopf_operator.start(registry=registry, settings=settings_for(4))
    obj = await kopf_cluster.create(example("ex1"))
    await asyncio.sleep(3601)
    created = datetime.datetime.fromisoformat(obj["metadata"]["creationTimestamp"].replace("Z", "+00:00"))
    assert datetime.timedelta(0) <= seen["age at creation"] < datetime.timedelta(seconds=1)
    assert datetime.timedelta(hours=1) <= seen["age after an hour"] < datetime.timedelta(hours=1, seconds=2)
    assert abs(seen["time.time"] - created.timestamp()) < 1
    assert abs(seen["utcnow"] - created.replace(tzinfo=None)) < datetime.timedelta(seconds=1)
    assert 3600 <= seen["monotonic"] < 3602
    # The test's own code sees the same clock, and the cluster's timestamps follow it.
    assert datetime.datetime.now(datetime.UTC) == kopf_cluster.sim.now
    assert type(datetime.datetime.now()) is type(datetime.datetime(2000, 1, 1)) is not datetime.datetime
    assert isinstance(datetime.datetime(2000, 1, 1), datetime.datetime)
    await kopf_operator.stop()


def test_the_clocks_are_real_outside_of_the_test_loop() -> None:
    before = datetime.datetime.now(datetime.UTC)
    assert abs(time.time() - before.timestamp()) < 5
    assert datetime.datetime is type(before)


CPU_LOOP = """
import time
import kopf
import pytest

async def test_a_stuck_handler(kopf_cluster, kopf_operator):
    registry = kopf.OperatorRegistry()

    @kopf.on.create("kopfexamples", registry=registry)
    def spinning_handler(**_):
        until = time.perf_counter() + 1   # real seconds: a busy loop that ends by itself (for the clean-up)
        while time.perf_counter() < until:
            pass

    await kopf_cluster.apply("crd.yaml")
    await kopf_operator.start(registry=registry)
    await kopf_cluster.create({"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "metadata": {"name": "ex1"}})
    await kopf_cluster.wait_for("kopfexamples", "ex1", condition=lambda o: "spinning_handler" in o.get("status", {}))
"""


def test_a_handler_stuck_in_a_cpu_loop_fails_the_test_with_its_name_and_stack(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nkopf_thread_timeout = 0.3\n")
    pytester.makepyfile(test_stuck=CPU_LOOP)
    (pytester.path / "crd.yaml").write_text(Path(CRD).read_text())
    result = pytester.runpytest_subprocess(*BASE, *NO_ASYNCIO)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*DeadlockError: Executor jobs hold the loop time at * for more than 0.3 real seconds*",
            "*Threads at work:*",
            "*spinning_handler, at work for *",
            "*in spinning_handler*",
            "*while time.perf_counter() < until:*",
        ]
    )
