"""The operator's findings become events of the object, of the types Normal, Warning and Error."""

import asyncio
import logging
from pathlib import Path

HERE = Path(__file__).parent
CRD = HERE.parent / "crd.yaml"


async def wait_for_events(kopf_cluster, name: str, *reasons: str, timeout: float = 30) -> list[dict]:
    """The object's events once all the reasons are among them (the events are posted in the background)."""
    async with asyncio.timeout(timeout):
        while True:
            events = await kopf_cluster.events("kopfexamples", name)
            if set(reasons) <= {event["reason"] for event in events}:
                return events
            await asyncio.sleep(0.5)


async def wait_for_message(kopf_cluster, name: str, message: str, timeout: float = 30) -> list[dict]:
    """The object's events once one of them has the message."""
    async with asyncio.timeout(timeout):
        while True:
            events = await kopf_cluster.events("kopfexamples", name)
            if any(event["message"] == message for event in events):
                return events
            await asyncio.sleep(0.5)


def example(name: str, items: list[str]) -> dict:
    return {"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "metadata": {"name": name}, "spec": {"items": items}}


async def test_findings_are_reported_as_events(kopf_cluster, kopf_operator):
    await kopf_cluster.apply(CRD)
    await kopf_operator.start(paths=[HERE / "example.py"], namespaces=[kopf_cluster.namespace], log_level=logging.DEBUG)
    await kopf_cluster.create(example("mixed", ["db:5432", "db:5432", "cache", "web:80"]))

    events = await wait_for_events(kopf_cluster, "mixed", "EndpointsChecked", "DuplicateEndpoints", "BadEndpoint")
    by_reason = {event["reason"]: event for event in events}
    assert by_reason["EndpointsChecked"]["type"] == "Normal"
    assert by_reason["EndpointsChecked"]["message"] == "3 of 4 endpoints are usable."
    assert by_reason["DuplicateEndpoints"]["type"] == "Warning"
    assert by_reason["DuplicateEndpoints"]["message"] == "Listed more than once: db:5432."
    assert by_reason["BadEndpoint"]["type"] == "Error"
    assert by_reason["BadEndpoint"]["message"].startswith("Cannot use the endpoint 'cache'.")
    assert by_reason["BadEndpoint"]["involvedObject"]["name"] == "mixed"
    # DEBUG log lines are below the operator's posting level: logged, but not posted.
    assert "Checking 4 endpoints." in kopf_operator.logs
    assert not any("Checking" in event["message"] for event in events)

    await kopf_cluster.patch("kopfexamples", "mixed", {"spec": {"items": ["nowhere:0"]}})
    events = await wait_for_message(kopf_cluster, "mixed", "No usable endpoints.")  # a logged warning
    assert {event["reason"] for event in events if event["message"] == "No usable endpoints."} == {"Logging"}
    messages = [event["message"] for event in events]
    assert "0 of 1 endpoints are usable." in messages

    await kopf_cluster.delete("kopfexamples", "mixed")
    await kopf_cluster.wait_gone("kopfexamples", "mixed", timeout=30)
    await kopf_operator.stop()
    assert kopf_operator.exception is None
