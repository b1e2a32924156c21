"""An endless update loop (no virtual time passing) fails the test clearly, in bounded real time, instead of hanging."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from kopf_sim.timing.virtualtime import LivelockError
from pytest_kopf.cluster import SimKopfCluster
from pytest_kopf.driving import settle
from pytest_kopf.operator import KopfOperator
from pytest_kopf.simcontrols import MAX_CHANGES_PER_INSTANT
from tests.helpers import stamping_registry

from .test_operator import ROOT, run_one

CRD = ROOT / "examples" / "crd.yaml"


def example(name: str) -> dict[str, Any]:
    return {"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "metadata": {"name": name}, "spec": {}}


async def test_settle_raises_the_livelock_naming_the_object_and_its_writes(
    kopf_cluster: SimKopfCluster, kopf_operator: KopfOperator
) -> None:
    await kopf_cluster.apply(CRD)
    await kopf_operator.start(registry=stamping_registry("kopfexamples"))
    started = time.perf_counter()
    await kopf_cluster.create(example("ex1"))
    with pytest.raises(LivelockError) as error:
        await settle(kopf_cluster, kopf_operator, timeout=60)
    assert time.perf_counter() - started < 30
    assert asyncio.get_running_loop().time() == pytest.approx(0.0, abs=0.01)  # no virtual time has passed
    message = str(error.value)
    assert f"kopfexamples.kopf.dev default/ex1 has changed {MAX_CHANGES_PER_INSTANT} times at loop time" in message
    assert "metadata.labels.stamp: '" in message  # the writes: what they change
    await kopf_operator.stop()


async def test_a_burst_of_changes_below_the_limit_is_no_livelock(kopf_cluster: SimKopfCluster) -> None:
    await kopf_cluster.apply(CRD)
    await kopf_cluster.create(example("ex1"))
    for index in range(MAX_CHANGES_PER_INSTANT - 10):  # all at one instant
        await kopf_cluster.patch("kopfexamples", "ex1", {"metadata": {"labels": {"n": str(index)}}})
    await kopf_cluster.sim.advance(1)  # the count starts anew at the next instant
    for index in range(MAX_CHANGES_PER_INSTANT - 10):
        await kopf_cluster.patch("kopfexamples", "ex1", {"metadata": {"labels": {"n": f"again-{index}"}}})
    assert await settle(kopf_cluster, quiet=5, timeout=60)


async def test_the_limit_is_per_cluster_and_can_be_changed(kopf_cluster: SimKopfCluster) -> None:
    guard = kopf_cluster.sim.guard
    assert guard is not None and guard.limit == MAX_CHANGES_PER_INSTANT
    guard.limit = 3
    await kopf_cluster.apply(CRD)
    paused = asyncio.create_task(guard.pause(1))
    await asyncio.sleep(0)
    await kopf_cluster.create(example("ex1"))
    await kopf_cluster.patch("kopfexamples", "ex1", {"metadata": {"labels": {"n": "1"}}})
    await kopf_cluster.patch("kopfexamples", "ex1", {"metadata": {"labels": {"n": "2"}}})
    with pytest.raises(LivelockError, match="ex1 has changed 3 times") as error:
        await paused  # tripped by the third change: the error goes to the code waiting in pause()
    assert guard.error is error.value
    assert "metadata.labels.n: '1' -> '2'" in str(error.value)


LIVELOCKED = """
def stamping():
    registry = kopf.OperatorRegistry()

    @kopf.on.create("kopfexamples", registry=registry)
    @kopf.on.update("kopfexamples", registry=registry)
    def stamp(labels, patch, **_):
        patch.metadata.labels["stamp"] = str(int(labels.get("stamp", "0")) + 1)

    return registry

async def test_sleep(kopf_cluster, kopf_operator):
    await kopf_cluster.apply("crd.yaml")
    await kopf_operator.start(registry=stamping())
    await kopf_cluster.create(example("ex1"))
    await asyncio.sleep(300)

async def test_wait_for(kopf_cluster, kopf_operator):
    await kopf_cluster.apply("crd.yaml")
    await kopf_operator.start(registry=stamping())
    await kopf_cluster.create(example("ex1"))
    await kopf_cluster.wait_for("kopfexamples", "ex1", condition=lambda obj: False, timeout=60)
"""


@pytest.mark.long_running
def test_sleeps_and_waits_under_the_fixtures_fail_with_the_livelock(pytester: pytest.Pytester) -> None:
    """What waits for a timer (a sleep, wait_for's timeout) would wait forever: the loop's run fails instead."""
    started = time.perf_counter()
    result = run_one(pytester, LIVELOCKED)
    result.assert_outcomes(failed=2)  # the tests themselves; the operators' teardown is clean
    result.stdout.fnmatch_lines(["*LivelockError: kopfexamples.kopf.dev default/ex1 has changed 500 times*"] * 2)
    assert time.perf_counter() - started < 60
