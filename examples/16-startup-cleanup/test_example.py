"""Startup prepares the shared state, handlers use it, the probe reports it, cleanup closes it."""

import asyncio
from pathlib import Path

import aiohttp
import pytest
import yaml

import kopf

HERE = Path(__file__).parent
CRD = HERE.parent / "crd.yaml"


def example(name: str, field: str) -> dict:
    return {"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "metadata": {"name": name}, "spec": {"field": field}}


async def test_startup_memo_and_cleanup(kopf_cluster, kopf_operator):
    await kopf_cluster.apply(CRD)
    memo = kopf.Memo()
    await kopf_operator.start(paths=[HERE / "example.py"], namespaces=[kopf_cluster.namespace], memo=memo)
    assert "The inventory is open." in kopf_operator.logs
    assert kopf_operator.settings.execution.max_workers == 4

    await kopf_cluster.create(example("one", "a"))
    await kopf_cluster.create(example("two", "b"))
    ns = kopf_cluster.namespace
    async with asyncio.timeout(30):
        while len(memo.inventory) < 2:  # noqa: ASYNC110 - the objects' handlers fill the operator's dict
            await asyncio.sleep(0.1)
    assert memo.inventory == {f"{ns}/one": "a", f"{ns}/two": "b"}

    await kopf_cluster.delete("kopfexamples", "two")
    await kopf_cluster.wait_gone("kopfexamples", "two", timeout=30)
    assert memo.inventory == {f"{ns}/one": "a"}

    await kopf_operator.restart()  # a new memo (the same object) is filled by the resuming handler
    assert f"The inventory is closed with 1 objects: ['{ns}/one']." in kopf_operator.logs
    await kopf_cluster.delete("kopfexamples", "one")
    await kopf_cluster.wait_gone("kopfexamples", "one", timeout=30)
    await kopf_operator.stop()
    assert "The inventory is closed with 0 objects: []." in kopf_operator.logs
    assert kopf_operator.exception is None


@pytest.mark.kopf_real_time  # a real `kopf run` process, with its real clock
async def test_kopf_run_with_login_and_liveness(kopf_cluster, kopf_run):
    await kopf_cluster.apply(CRD)
    await kopf_cluster.create(example("seen", "x"))
    async with kopf_run(HERE / "example.py", liveness=True) as operator:  # see examples/conftest.py
        kubeconfig = yaml.safe_load((await kopf_cluster.kubeconfig()).read_text())
        server = kubeconfig["clusters"][0]["cluster"]["server"]
        await operator.read_until(f"Logged in to {server}.")  # our login handler, from $KUBECONFIG
        await operator.read_until("Handler 'add_to_inventory' succeeded.")
        async with aiohttp.ClientSession() as session, session.get(operator.liveness_url) as response:
            assert response.status == 200
            assert await response.json() == {"inventory": 1}
        await kopf_cluster.delete("kopfexamples", "seen")
        await kopf_cluster.wait_gone("kopfexamples", "seen", timeout=30)  # the deletion handler has run
    assert "The inventory is open." in operator.output
    assert "The inventory is closed with 0 objects: []." in operator.output
