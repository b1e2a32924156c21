import logging

import pytest

from kopf._cogs.aiokits import clock
from kopf._cogs.clients import events
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.structs.bodies import build_object_reference
from kopf._cogs.structs.credentials import Vault
from kopf_sim.store.cluster import Cluster
from tests.helpers import widget

from .conftest import Recorder, status_response


def events_in(cluster: Cluster, namespace: str = "default") -> list[dict]:  # type: ignore[type-arg]
    rtype = cluster.resource("", "v1", "events")
    return list(cluster.objects(rtype.storage_key, namespace))


@pytest.mark.looptime
async def test_posting_an_event(cluster: Cluster, vault: Vault, settings: OperatorSettings) -> None:
    body = widget("w1")
    body["metadata"]["uid"] = "uid-123"
    ref = build_object_reference(body)
    before = clock.utcnow()
    await events.post_event(ref=ref, type="Normal", reason="Testing", message="Hello.", settings=settings, vault=vault)
    [event] = events_in(cluster)
    assert event["metadata"]["name"].startswith("kopf-event-")
    assert event["type"] == "Normal" and event["reason"] == "Testing" and event["message"] == "Hello."
    assert event["involvedObject"] == {
        "apiVersion": "acme.example/v1",
        "kind": "Widget",
        "name": "w1",
        "namespace": "default",
        "uid": "uid-123",
    }
    assert event["source"] == {"component": "kopf"}
    assert event["reportingComponent"] == "kopf"
    assert event["firstTimestamp"] == event["lastTimestamp"]
    assert event["firstTimestamp"].startswith(before.strftime("%Y-%m-%dT%H:%M"))


async def test_cluster_scoped_objects_get_events_in_default(
    cluster: Cluster, vault: Vault, settings: OperatorSettings
) -> None:
    ref = {"apiVersion": "v1", "kind": "Namespace", "name": "ns1", "uid": "u"}
    await events.post_event(ref=ref, type="Warning", reason="R", settings=settings, vault=vault)  # type: ignore[arg-type]
    [event] = events_in(cluster)
    assert event["involvedObject"]["name"] == "ns1" and event["message"] == ""


async def test_long_messages_are_truncated(cluster: Cluster, vault: Vault, settings: OperatorSettings) -> None:
    message = "begin " + "x" * 5000 + " the end"
    ref = build_object_reference(widget("w1"))
    await events.post_event(ref=ref, type="Normal", reason="Long", message=message, settings=settings, vault=vault)
    [event] = events_in(cluster)
    assert len(event["message"]) == events.MAX_MESSAGE_LENGTH
    assert event["message"].startswith("begin ") and event["message"].endswith(" the end")
    assert "..." in event["message"]


def test_truncation_edge_cases() -> None:
    assert events.truncate_message("x" * 1024) == "x" * 1024
    assert len(events.truncate_message("x" * 1025)) == 1024
    assert events.truncate_message("abcdefgh", limit=5) == "a...h"
    # As the published framework cuts them: the odd character goes to the head (511 + "..." + 510).
    assert events.truncate_message("a" * 600 + "b" * 600) == "a" * 511 + "..." + "b" * 510


async def test_no_events_for_events(
    cluster: Cluster, vault: Vault, settings: OperatorSettings, recorder: Recorder
) -> None:
    ref = {"apiVersion": "v1", "kind": "Event", "name": "e1", "namespace": "default"}
    await events.post_event(ref=ref, type="Normal", reason="R", settings=settings, vault=vault)  # type: ignore[arg-type]
    assert recorder.requests == []


async def test_posting_disabled(cluster: Cluster, vault: Vault, settings: OperatorSettings, recorder: Recorder) -> None:
    settings.posting.enabled = False
    await events.post_event(
        ref=build_object_reference(widget("w1")), type="Normal", reason="R", settings=settings, vault=vault
    )
    assert recorder.requests == []


async def test_failures_are_logged_not_raised(
    cluster: Cluster, vault: Vault, settings: OperatorSettings, recorder: Recorder, caplog: pytest.LogCaptureFixture
) -> None:
    recorder.fail(1, status_response(403, "Forbidden"))
    caplog.set_level(logging.WARNING)
    await events.post_event(
        ref=build_object_reference(widget("w1")), type="Normal", reason="R", settings=settings, vault=vault
    )
    assert "Failed to post an event" in caplog.text
    assert events_in(cluster) == []
