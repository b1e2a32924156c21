"""Timers keep their schedules: initial delay and interval, sharp starts, and idling after changes."""

import asyncio
import re
from pathlib import Path

import pytest

HERE = Path(__file__).parent
CRD = HERE.parent / "crd.yaml"


async def wait_for_log(kopf_operator, text: str, timeout: float = 30) -> float:
    """Wait until the text is logged; the loop time (virtual in sim mode) when it was noticed."""
    async with asyncio.timeout(timeout):
        while text not in kopf_operator.logs:  # noqa: ASYNC110 - polling the log: nothing else to wait on
            await asyncio.sleep(0.1)
    return asyncio.get_running_loop().time()


def example(name: str, **spec: object) -> dict:
    return {"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "metadata": {"name": name}, "spec": spec}


@pytest.fixture
def tolerance(kopf_cluster) -> float:
    """Tight in virtual time (the operator's reaction and the test's polling: a few 0.1 s), looser in real time."""
    return 0.5 if kopf_cluster.mode == "sim" else 1.5


async def start(kopf_cluster, kopf_operator, name: str, **spec: object) -> float:
    await kopf_cluster.apply(CRD)
    await kopf_operator.start(paths=[HERE / "example.py"], namespaces=[kopf_cluster.namespace])
    await kopf_cluster.create(example(name, **spec))
    return asyncio.get_running_loop().time()


async def finish(kopf_cluster, kopf_operator, name: str) -> None:
    await kopf_cluster.delete("kopfexamples", name)
    await kopf_cluster.wait_gone("kopfexamples", name, timeout=30)
    await kopf_operator.stop()
    assert kopf_operator.exception is None


async def test_heartbeat_after_initial_delay(kopf_cluster, kopf_operator, tolerance):
    created = await start(kopf_cluster, kopf_operator, "beating")
    first = await wait_for_log(kopf_operator, "Heartbeat #1 of beating.")
    third = await wait_for_log(kopf_operator, "Heartbeat #3 of beating.")
    assert first - created == pytest.approx(2, abs=tolerance)  # initial_delay
    assert third - first == pytest.approx(2 * 3, abs=tolerance)  # two intervals
    await finish(kopf_cluster, kopf_operator, "beating")


async def test_sharp_timer_keeps_its_pace(kopf_cluster, kopf_operator, tolerance):
    await start(kopf_cluster, kopf_operator, "reporting")
    first = await wait_for_log(kopf_operator, "Report #1 is being sent.")
    third = await wait_for_log(kopf_operator, "Report #3 is being sent.")
    assert third - first == pytest.approx(2 * 4, abs=tolerance)  # not 2 * (4 + 1)
    await finish(kopf_cluster, kopf_operator, "reporting")


async def test_idle_timer_waits_for_quiet(kopf_cluster, kopf_operator, tolerance):
    created = await start(kopf_cluster, kopf_operator, "changing", field="a")
    obj = await kopf_cluster.wait_for(
        "kopfexamples", "changing", timeout=30, condition=lambda o: "settled" in o.get("status", {})
    )
    loop = asyncio.get_running_loop()
    assert loop.time() - created == pytest.approx(5, abs=tolerance)
    assert obj["status"]["settled"] == {"field": "a"}

    # Changes every 3 s hold the idle timer back; it fires 5 s after the last one.
    for value in ("b", "c", "d"):
        await kopf_cluster.patch("kopfexamples", "changing", {"spec": {"field": value}})
        changed = loop.time()
        await asyncio.sleep(3)
        current = await kopf_cluster.get("kopfexamples", "changing")
        assert current["status"]["settled"] == {"field": "a"}
    await kopf_cluster.wait_for(
        "kopfexamples", "changing", timeout=30, condition=lambda o: o["status"]["settled"] == {"field": "d"}
    )
    assert loop.time() - changed == pytest.approx(5, abs=tolerance)
    assert len(re.findall(r"The field has settled", kopf_operator.logs)) == 2  # a, d; not again while the same
    await finish(kopf_cluster, kopf_operator, "changing")
