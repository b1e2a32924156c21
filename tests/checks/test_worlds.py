"""The checks' worlds run as a sim-mode test with the fixtures does: the same virtual clocks, each its own."""

from __future__ import annotations

import datetime
import gc
import os
import threading
import time
import weakref
from pathlib import Path
from typing import Any

import pytest

import kopf
from kopf_sim.timing.virtualtime import DEFAULT_EPOCH
from pytest_kopf.checks import check_operator
from pytest_kopf.errors import OperatorCheckFailed
from pytest_kopf.stateful import OperatorMachine, OperatorSpec, World
from pytest_kopf.strategies.steps import CrashAfterWrites, Create, PatchSpec
from tests import helpers

from .test_gallery import INNER_PYTEST

GALLERY = Path(__file__).parent / "gallery"
CRD = GALLERY / "crd.yaml"
RESOURCE = "gadgets.checks.example"


def gadget(name: str) -> dict[str, Any]:
    return {"apiVersion": "checks.example/v1", "kind": "Gadget", "metadata": {"name": name}, "spec": {}}


def clock_reading_registry(readings: list[tuple[str, float, float, datetime.datetime]]) -> kopf.OperatorRegistry:
    """A sync create handler that reads the clocks, sleeps 100 s with time.sleep(), and reads them again."""
    registry = kopf.OperatorRegistry()

    @kopf.on.create("gadgets", registry=registry)
    def create_fn(name: str, **_: Any) -> None:
        readings.append((name, time.time(), time.monotonic(), datetime.datetime.now(datetime.UTC)))
        time.sleep(100)
        readings.append((name, time.time(), time.monotonic(), datetime.datetime.now(datetime.UTC)))

    return registry


def test_each_of_two_worlds_alive_at_once_has_its_own_virtual_clocks() -> None:
    readings: list[tuple[str, float, float, datetime.datetime]] = []
    spec = OperatorSpec(manifests=(CRD,), registry=lambda: clock_reading_registry(readings))
    started = time.perf_counter()
    first, second = World(spec), World(spec)
    try:
        first.run(first.cluster.sim.advance(50))
        first.run(first.cluster.create(gadget("first")))  # the handler starts in `first`, at 50 s
        second.run(second.cluster.create(gadget("second")))  # in `second`, at 0 s; `first` waits meanwhile
        first.run(first.cluster.sim.advance(200))
        second.run(second.cluster.sim.advance(200))
    finally:
        second.close()
        first.close()
    assert time.perf_counter() - started < 30  # time.sleep(100) twice: virtual, not real (nor a 60 s deadlock)
    by_name: dict[str, list[tuple[float, float, datetime.datetime]]] = {}
    for name, wall, monotonic, now in readings:
        by_name.setdefault(name, []).append((wall, monotonic, now))
    base = DEFAULT_EPOCH.timestamp()  # the wall-clock moment of every world's loop time 0
    for name, at in (("first", 50.0), ("second", 0.0)):
        (wall1, mono1, now1), (wall2, mono2, now2) = by_name[name]
        assert (wall1, mono1) == pytest.approx((base + at, at), abs=0.01)
        assert (wall2, mono2) == pytest.approx((base + at + 100, at + 100), abs=0.01)
        assert now1.timestamp() == pytest.approx(wall1, abs=0.001)  # datetime.now() on the same clock
        assert now2.timestamp() == pytest.approx(wall2, abs=0.001)


def test_the_clocks_are_real_again_after_the_worlds_are_closed() -> None:
    world = World(OperatorSpec(manifests=(CRD,), registry=kopf.OperatorRegistry))
    world.close()
    assert time.time is not None and time.time.__module__ == "time"  # the originals are back
    assert abs(time.time() - datetime.datetime.now().timestamp()) < 1


released = threading.Event()


def sleeping_daemon_registry() -> kopf.OperatorRegistry:
    """A sync daemon that ignores its stop-flag and sleeps with time.sleep() (until the test releases it)."""
    registry = kopf.OperatorRegistry()

    @kopf.daemon("gadgets", registry=registry)
    def poll(**_: Any) -> None:
        while not released.is_set():
            time.sleep(1)  # the planted bug: time.sleep() instead of stopped.wait()

    return registry


def test_a_sync_daemon_that_sleeps_with_time_sleep_fails_the_daemons_check() -> None:
    """As under the fixtures: its sleeps are virtual; it never ends, so the daemons check reports it (no deadlock)."""
    started = time.perf_counter()
    released.clear()
    try:
        with pytest.raises(OperatorCheckFailed) as failure:
            check_operator(
                registry=sleeping_daemon_registry,
                manifests=[CRD],
                resources=[RESOURCE],
                checks=["daemons"],
                max_examples=3,
                max_steps=2,
                names=["obj-0"],
            )
    finally:
        released.set()  # the leaked threads end (their loops are closed: their last sleeps are real)
    assert failure.value.check == "daemons"
    assert "poll" in str(failure.value)
    assert time.perf_counter() - started < 50  # not the 60 real seconds of a stuck thread's deadlock


def stamping_registry() -> kopf.OperatorRegistry:
    """The bug: every run of the handler writes to its own object: a new event, a new run, at one instant."""
    return helpers.stamping_registry("gadgets")


@pytest.mark.long_running
@pytest.mark.parametrize("checks", [["convergence"], ["withheld-events"]])
def test_an_endless_update_loop_fails_as_the_operator_not_settling(checks: list[str]) -> None:
    """No virtual time passes, so no deadline would ever come: the changes at one instant are counted instead."""
    started = time.process_time()  # CPU, not wall time: an endless loop burns it; a loaded machine does not
    with pytest.raises(OperatorCheckFailed) as failure:
        check_operator(
            registry=stamping_registry,
            manifests=[CRD],
            resources=[RESOURCE],
            checks=checks,
            max_examples=3,
            max_steps=3,
            names=["obj-0"],
            settle_timeout=60,
        )
    assert time.process_time() - started < 60
    assert failure.value.check == "convergence"  # the operator's own failure, whichever check was running
    message = str(failure.value)
    assert "the operator does not settle: gadgets.checks.example default/obj-0 has changed 500 times" in message
    assert "metadata.labels.stamp: '" in message
    assert len(failure.value.steps) == 1  # shrunk: the create


def test_a_failing_baseline_is_the_operators_own_failure_shrunk_with_steps(pytester: pytest.Pytester) -> None:
    """A bug that fails with no faults at all, under a comparing check: reported as it fails by itself."""
    with pytest.raises(OperatorCheckFailed) as info:
        check_operator(
            paths=[GALLERY / "optional_field_bug.py"],
            manifests=[CRD],
            resources=[RESOURCE],
            checks=["crash-restart"],
            max_examples=50,
            max_steps=8,
            names=["obj-0"],
        )
    failure = info.value
    assert failure.check == "convergence"
    assert "the operator fails by itself" in failure.details
    assert 1 <= len(failure.steps) <= 3, failure
    assert failure.trace_tail
    assert all(step.user for step in failure.steps)  # the faults have nothing to do with it: shrunk away
    assert "crash_after(kopf_cluster" not in failure.reproduction and "crash()" not in failure.reproduction
    pytester.makepyfile(test_reproduction=failure.reproduction)
    result = pytester.runpytest_inprocess(*INNER_PYTEST)
    assert result.ret == 1, result.stdout.str()
    result.stdout.fnmatch_lines(["*The check 'convergence' has failed*"])


def test_a_failing_baselines_reproduction_has_the_users_actions_alone() -> None:
    machine = OperatorMachine.configured(
        "BaselineFails",
        paths=[GALLERY / "optional_field_bug.py"],
        manifests=[CRD],
        resources=[RESOURCE],
        checks=["crash-restart"],
        names=["obj-0"],
    )()
    try:
        machine.perform(CrashAfterWrites(writes=50))
        machine.perform(Create({**gadget("obj-0"), "spec": {"size": 1}}))
        machine.perform(PatchSpec(RESOURCE, "obj-0", {"size": None}))  # the optional field removed: the bug
        with pytest.raises(OperatorCheckFailed) as info:
            machine.verify()
    finally:
        machine.close()
    failure = info.value
    assert failure.check == "convergence" and "fails by itself" in failure.details
    assert [type(step).__name__ for step in failure.steps] == ["CrashAfterWrites", "Create", "PatchSpec"]
    assert "crash_after(kopf_cluster, kopf_operator" not in failure.reproduction
    assert "kopf_cluster.patch(" in failure.reproduction and "checks=['convergence']" in failure.reproduction


IMPORT_TIME_CLIENT = """
import kubernetes

kubernetes.config.load_kube_config()
core = kubernetes.client.CoreV1Api()  # built once per load of the module: once per world
"""

CHILD_MAKER = """
import kopf
from kube import core


@kopf.on.create("gadgets")
def make(name, namespace, **_):
    core.create_namespaced_config_map(namespace, {"metadata": {"name": f"{name}-data"}})
"""


def test_a_closed_world_closes_the_connections_of_its_sync_clients(tmp_path: Path) -> None:
    """A client that the operator's module builds at its import keeps its pooled connections for as long as it lives;
    a check makes thousands of worlds: their connections must not outlive them (a default-budget check of such an
    operator ended with "Too many open files")."""
    (tmp_path / "kube.py").write_text(IMPORT_TIME_CLIENT)
    (tmp_path / "operator.py").write_text(CHILD_MAKER)

    def one_world() -> int:
        world = World(OperatorSpec(paths=(str(tmp_path / "operator.py"),), manifests=(str(CRD),)))
        try:
            world.run(world.cluster.create({**gadget("g"), "spec": {"size": 1}}))
            assert world.run(world.settle())
            assert world.run(world.cluster.get("configmaps", "g-data")) is not None
        finally:
            world.close()
        return len(os.listdir("/proc/self/fd"))

    first = one_world()
    assert [one_world() for _ in range(3)] == [first] * 3


def test_a_closed_world_is_not_kept_in_memory_by_its_sync_clients(tmp_path: Path) -> None:
    """Such a client's pool outlives its world (urllib3 keeps the pools' queues in a process-wide registry): the
    world's cluster and operator must not be kept with it (a default-budget check of such an operator grew by ~7 MB
    an example, to 5 GB)."""
    (tmp_path / "kube.py").write_text(IMPORT_TIME_CLIENT)
    (tmp_path / "operator.py").write_text(CHILD_MAKER)

    def one_world() -> weakref.ref[Any]:
        world = World(OperatorSpec(paths=(str(tmp_path / "operator.py"),), manifests=(str(CRD),)))
        try:
            world.run(world.cluster.create({**gadget("g"), "spec": {"size": 1}}))
            assert world.run(world.settle())
            assert world.run(world.cluster.get("configmaps", "g-data")) is not None
            return weakref.ref(world.cluster.sim.store)
        finally:
            world.close()

    clusters = [one_world() for _ in range(3)]
    gc.collect()
    assert [cluster() is None for cluster in clusters] == [True, True, True]


class Interruption(BaseException):
    """What pytest-timeout's signal handler raises (``Failed``) in whatever code runs: no error of the operator's."""


def interrupted_registry() -> kopf.OperatorRegistry:
    registry = kopf.OperatorRegistry()

    @kopf.on.create("gadgets", registry=registry)
    def interrupted(**_: Any) -> None:
        raise Interruption("the test's time is up")

    return registry


def test_an_interruption_in_an_operators_task_ends_the_check_and_is_not_judged() -> None:
    """asyncio keeps such an exception in the task and goes on: the operator went on without its worker, and a check
    at the default budget under pytest-timeout reported a difference of the end states instead of the timeout."""
    with pytest.raises(Interruption):
        check_operator(
            registry=interrupted_registry,
            manifests=[CRD],
            resources=[RESOURCE],
            checks=["idempotence"],
            max_examples=2,
            max_steps=2,
            names=["obj-0"],
        )
