"""Of two peers, the one with the higher priority works, the other one pauses; a freeze pauses both."""

import asyncio
from pathlib import Path

import pytest

import kopf
from kopf.testing import KopfRunner
from pytest_kopf.operator import KopfOperator

HERE = Path(__file__).parent
CRD = HERE.parent / "crd.yaml"
PEERING_CRDS = HERE.parent.parent / "peering.yaml"


async def wait_for_log(operator, text: str, timeout: float = 30) -> None:
    async with asyncio.timeout(timeout):
        while text not in operator.logs:  # noqa: ASYNC110 - polling the log: nothing else to wait on
            await asyncio.sleep(0.1)


def peer(priority: int) -> kopf.OperatorSettings:
    """Settings of a peering operator (the test's operators are standalone by default)."""
    settings = kopf.OperatorSettings()
    settings.peering.standalone = False
    settings.peering.priority = priority
    return settings


async def handled_by(kopf_cluster, name: str) -> int:
    await kopf_cluster.create({"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "metadata": {"name": name}})
    obj = await kopf_cluster.wait_for(
        "kopfexamples", name, timeout=30, condition=lambda o: "record_handler" in o.get("status", {})
    )
    return obj["status"]["record_handler"]["priority"]


async def setup(kopf_cluster) -> None:
    await kopf_cluster.apply(CRD)
    await kopf_cluster.apply(PEERING_CRDS)
    await kopf_cluster.apply(HERE / "peering.yaml")


async def test_the_highest_priority_works(kopf_cluster, kopf_operator):
    await setup(kopf_cluster)
    namespaces = [kopf_cluster.namespace]
    await kopf_operator.start(paths=[HERE / "example.py"], namespaces=namespaces, settings=peer(100))
    assert await handled_by(kopf_cluster, "first") == 100

    higher = KopfOperator(kopf_cluster)
    try:
        await higher.start(paths=[HERE / "example.py"], namespaces=namespaces, settings=peer(200))
        await wait_for_log(kopf_operator, "Pausing operations in favour of")
        assert await handled_by(kopf_cluster, "second") == 200
    finally:
        await higher.stop()
    assert higher.exception is None

    await wait_for_log(kopf_operator, "Resuming operations after the pause")  # the higher one is gone
    assert await handled_by(kopf_cluster, "third") == 100
    await kopf_operator.stop()
    assert kopf_operator.exception is None


async def test_the_peering_object_is_mandatory(kopf_cluster, kopf_operator):
    await kopf_cluster.apply(CRD)
    await kopf_cluster.apply(PEERING_CRDS)  # but no peering object "example" yet
    await kopf_operator.start(paths=[HERE / "example.py"], namespaces=[kopf_cluster.namespace], settings=peer(100))
    await wait_for_log(kopf_operator, "The mandatory peering 'example'")
    await kopf_cluster.create({"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "metadata": {"name": "waiting"}})
    await asyncio.sleep(1)
    assert "record_handler" not in (await kopf_cluster.get("kopfexamples", "waiting")).get("status", {})

    await kopf_cluster.apply(HERE / "peering.yaml")  # the operator starts working once the object appears
    obj = await kopf_cluster.wait_for(
        "kopfexamples", "waiting", timeout=30, condition=lambda o: "record_handler" in o.get("status", {})
    )
    assert obj["status"]["record_handler"] == {"priority": 100}
    await kopf_operator.stop()
    assert kopf_operator.exception is None


def kopf_command(*args: str, kubeconfig: str) -> None:
    """Run a `kopf` command line to its end, as in a shell (in this process, to save a second of start-up)."""
    with KopfRunner(list(args), env={"KUBECONFIG": kubeconfig}) as runner:
        runner.future.result(timeout=30)  # the command's end (leaving the block would stop it)
    assert runner.exit_code == 0, runner.output


@pytest.mark.kopf_real_time  # `kopf freeze` talks to the cluster over HTTP, in real time
async def test_kopf_freeze_pauses_the_operator(kopf_cluster, kopf_operator):
    await setup(kopf_cluster)
    await kopf_operator.start(paths=[HERE / "example.py"], namespaces=[kopf_cluster.namespace], settings=peer(100))
    kubeconfig = str(await kopf_cluster.kubeconfig())
    common = ["--peering", "example", "-n", kopf_cluster.namespace, "--id", "debugging"]
    # In a thread: this test's loop serves the simulated cluster to the command.
    await asyncio.to_thread(
        kopf_command, "freeze", "--lifetime", "600", "--priority", "1000", *common, kubeconfig=kubeconfig
    )
    await wait_for_log(kopf_operator, "Pausing operations in favour of")

    await kopf_cluster.create({"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "metadata": {"name": "frozen"}})
    await asyncio.sleep(1)
    assert "record_handler" not in (await kopf_cluster.get("kopfexamples", "frozen")).get("status", {})

    await asyncio.to_thread(kopf_command, "resume", *common, kubeconfig=kubeconfig)
    await wait_for_log(kopf_operator, "Resuming operations after the pause")
    obj = await kopf_cluster.wait_for(
        "kopfexamples", "frozen", timeout=30, condition=lambda o: "record_handler" in o.get("status", {})
    )
    assert obj["status"]["record_handler"] == {"priority": 100}
    await kopf_operator.stop()
    assert kopf_operator.exception is None
