"""Permanent errors are not retried; temporary ones are, until a timeout; ordinary ones until the retries end."""

import asyncio
from pathlib import Path

HERE = Path(__file__).parent
CRD = HERE.parent / "crd.yaml"
APPROVAL = "example.kopf.dev/approved"


def example(name: str, *, approved: bool = True, **spec: object) -> dict:
    annotations = {APPROVAL: "true"} if approved else {}
    return {
        "apiVersion": "kopf.dev/v1",
        "kind": "KopfExample",
        "metadata": {"name": name, "annotations": annotations},
        "spec": spec,
    }


def has_status(*keys: str):
    return lambda obj: obj is not None and all(key in obj.get("status", {}) for key in keys)


async def wait_for_log(kopf_operator, text: str, timeout: float = 30) -> None:
    async with asyncio.timeout(timeout):
        while text not in kopf_operator.logs:  # noqa: ASYNC110 - polling the log: nothing else to wait on
            await asyncio.sleep(0.1)


async def start(kopf_cluster, kopf_operator) -> None:
    await kopf_cluster.apply(CRD)
    await kopf_operator.start(paths=[HERE / "example.py"], namespaces=[kopf_cluster.namespace])


async def finish(kopf_cluster, kopf_operator, *names: str) -> None:
    for name in names:
        await kopf_cluster.delete("kopfexamples", name)
        await kopf_cluster.wait_gone("kopfexamples", name, timeout=30)
    await kopf_operator.stop()
    assert kopf_operator.exception is None


async def test_permanent_error_is_not_retried(kopf_cluster, kopf_operator):
    await start(kopf_cluster, kopf_operator)
    await kopf_cluster.create(example("malformed", duration="soon"))

    obj = await kopf_cluster.wait_for(
        "kopfexamples", "malformed", timeout=30, condition=has_status("wait_for_approval", "register_in_catalogue")
    )
    await wait_for_log(kopf_operator, "Handler 'parse_duration' failed permanently")
    await asyncio.sleep(3)  # nothing more happens: no retries
    assert (
        kopf_operator.logs.count(
            "Handler 'parse_duration' failed permanently: Cannot parse the duration "
            "'soon': expected a number and s, m or h."
        )
        == 1
    )
    assert "parse_duration" not in obj["status"]
    events = await kopf_cluster.events("kopfexamples", "malformed")
    assert any("failed permanently" in event["message"] and event["type"] == "Error" for event in events)

    await finish(kopf_cluster, kopf_operator, "malformed")


async def test_temporary_error_until_approved(kopf_cluster, kopf_operator):
    await start(kopf_cluster, kopf_operator)
    await kopf_cluster.create(example("later", approved=False, duration="5m"))

    await wait_for_log(kopf_operator, "Not approved yet (check #2)")
    obj = await kopf_cluster.get("kopfexamples", "later")
    assert obj["status"]["parse_duration"] == {"seconds": 300}
    assert "wait_for_approval" not in obj["status"]

    await kopf_cluster.patch("kopfexamples", "later", {"metadata": {"annotations": {APPROVAL: "true"}}})
    obj = await kopf_cluster.wait_for("kopfexamples", "later", condition=has_status("wait_for_approval"), timeout=30)
    assert obj["status"]["wait_for_approval"]["approved"] is True
    assert obj["status"]["wait_for_approval"]["checks"] >= 3

    await finish(kopf_cluster, kopf_operator, "later")


async def test_temporary_error_times_out(kopf_cluster, kopf_operator):
    await start(kopf_cluster, kopf_operator)
    loop = asyncio.get_running_loop()
    started = loop.time()
    await kopf_cluster.create(example("never", approved=False, duration="1h"))

    await wait_for_log(kopf_operator, "Handler 'wait_for_approval' failed temporarily but will time out")
    assert loop.time() - started >= 5  # several checks, each some seconds apart, until the next would be too late
    obj = await kopf_cluster.get("kopfexamples", "never")
    assert "wait_for_approval" not in obj["status"]

    await finish(kopf_cluster, kopf_operator, "never")


async def test_arbitrary_errors_are_retried_with_backoff(kopf_cluster, kopf_operator):
    await start(kopf_cluster, kopf_operator)
    loop = asyncio.get_running_loop()
    started = loop.time()
    await kopf_cluster.create(example("flaky", duration="1m", outage=2))

    obj = await kopf_cluster.wait_for(
        "kopfexamples", "flaky", condition=has_status("register_in_catalogue"), timeout=30
    )
    assert loop.time() - started >= 2  # two failures, 1 s of backoff after each
    namespace = kopf_cluster.namespace
    assert obj["status"]["register_in_catalogue"] == {"entry": f"catalogue://{namespace}/flaky", "attempts": 3}
    assert kopf_operator.logs.count("Handler 'register_in_catalogue' failed with an exception and will try again") == 2

    await finish(kopf_cluster, kopf_operator, "flaky")


async def test_retries_run_out(kopf_cluster, kopf_operator):
    await start(kopf_cluster, kopf_operator)
    await kopf_cluster.create(example("down", duration="1m", outage=10))

    await wait_for_log(
        kopf_operator,
        "Handler 'register_in_catalogue' failed with an exception and will stop now "
        "(it would exceed 3 retries on the next attempt)",
    )
    obj = await kopf_cluster.get("kopfexamples", "down")
    assert "register_in_catalogue" not in obj["status"]
    assert obj["status"]["parse_duration"] == {"seconds": 60}

    await finish(kopf_cluster, kopf_operator, "down")
