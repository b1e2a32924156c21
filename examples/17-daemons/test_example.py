"""Daemons run while their object exists, see its changes, and stop (or are cancelled) when it goes."""

import asyncio
from pathlib import Path

HERE = Path(__file__).parent
CRD = HERE.parent / "crd.yaml"


async def wait_for_log(kopf_operator, text: str, timeout: float = 30, since: int = 0) -> None:
    """Wait for a line in the operator's log (from the ``since``-th character on)."""
    async with asyncio.timeout(timeout):
        while text not in kopf_operator.logs[since:]:  # noqa: ASYNC110 - polling the log: nothing else to wait on
            await asyncio.sleep(0.1)


def example(name: str, labels: dict[str, str] | None = None, **spec: object) -> dict:
    return {
        "apiVersion": "kopf.dev/v1",
        "kind": "KopfExample",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": spec,
    }


async def test_daemons_follow_their_object(kopf_cluster, kopf_operator):
    await kopf_cluster.apply(CRD)
    await kopf_operator.start(paths=[HERE / "example.py"], namespaces=[kopf_cluster.namespace])
    loop = asyncio.get_running_loop()
    started = loop.time()
    await kopf_cluster.create(example("watched", field="a", countdown=3))

    obj = await kopf_cluster.wait_for(
        "kopfexamples", "watched", timeout=30, condition=lambda o: "countdown" in o.get("status", {})
    )
    assert obj["status"]["countdown"] == {"finished": True, "left": 0}
    assert loop.time() - started >= 4  # 1 s of initial delay, then 3 ticks of 1 s
    assert "Sample #1: the field is 'a'." in kopf_operator.logs
    assert "A connection for watched is open." in kopf_operator.logs

    await kopf_cluster.patch("kopfexamples", "watched", {"spec": {"field": "b"}})
    await wait_for_log(kopf_operator, "the field is 'b'.")  # the same daemon, a live view of the spec

    deleted = loop.time()
    await kopf_cluster.delete("kopfexamples", "watched")
    await kopf_cluster.wait_gone("kopfexamples", "watched", timeout=30)  # the finalizer waits for the daemons
    assert loop.time() - deleted < 2  # no waiting for the next sample: the stop-flag wakes the daemon
    assert "samples (RESOURCE_DELETED)." in kopf_operator.logs
    assert "The connection for watched is closed." in kopf_operator.logs
    assert kopf_operator.logs.count("3...") == 1  # the finished countdown was not restarted

    await kopf_operator.stop()
    assert kopf_operator.exception is None


async def test_daemons_stop_with_the_operator_and_start_again(kopf_cluster, kopf_operator):
    await kopf_cluster.apply(CRD)
    await kopf_operator.start(paths=[HERE / "example.py"], namespaces=[kopf_cluster.namespace])
    await kopf_cluster.create(example("lasting", field="x"))
    await wait_for_log(kopf_operator, "Sample #1: the field is 'x'.")

    await kopf_operator.restart()
    assert "The monitoring has stopped after 1 samples (OPERATOR_EXITING)." in kopf_operator.logs
    assert "The connection for lasting is closed." in kopf_operator.logs
    # Spawned again for the existing object (possibly already while restart() returned: the object's
    # listing is processed at once).
    stopped_at = kopf_operator.logs.index("The connection for lasting is closed.")
    await wait_for_log(kopf_operator, "Sample #1: the field is 'x'.", since=stopped_at)

    await kopf_cluster.delete("kopfexamples", "lasting")
    await kopf_cluster.wait_gone("kopfexamples", "lasting", timeout=30)
    await kopf_operator.stop()
    assert kopf_operator.exception is None


async def test_sync_daemon(kopf_cluster, kopf_operator):
    """A sync daemon in its thread: its ``stopped.wait(2)`` is an idle wait (virtual seconds in sim mode)."""
    await kopf_cluster.apply(CRD)
    await kopf_operator.start(paths=[HERE / "example.py"], namespaces=[kopf_cluster.namespace])
    loop = asyncio.get_running_loop()
    started = loop.time()
    await kopf_cluster.create(example("threaded", labels={"example.kopf.dev/sync": "yes"}, field="t"))
    await wait_for_log(kopf_operator, "Sync sample #3: the field is 't'.")
    assert loop.time() - started >= 4  # a sample every 2 s

    deleted = loop.time()
    await kopf_cluster.delete("kopfexamples", "threaded")
    await kopf_cluster.wait_gone("kopfexamples", "threaded", timeout=30)
    assert loop.time() - deleted < 2  # the flag wakes the thread from its wait
    assert "The sync monitoring has stopped after" in kopf_operator.logs
    await kopf_operator.stop()
    assert kopf_operator.exception is None
