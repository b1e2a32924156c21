"""End-to-end: the watcher & the processor against the simulated cluster: creation, update, deletion."""

import asyncio
import json
import logging
from typing import Any

import pytest

import kopf
from kopf._core.actions import loggers
from kopf._core.engines import posting
from kopf._core.intents.registries import OperatorRegistry
from kopf_sim.store.cluster import Cluster
from tests.helpers import wait_for

from .conftest import DIFFBASE, FINALIZER, Objects, Operator

pytestmark = pytest.mark.looptime


async def test_creation_runs_the_handler_and_stores_the_result_and_diffbase(
    operator: Operator,
    registry: OperatorRegistry,
    objects: Objects,
    caplog: pytest.LogCaptureFixture,
) -> None:
    calls: list[dict[str, Any]] = []

    @kopf.on.create("kopfexamples", registry=registry)
    def create_fn(spec: Any, name: str, namespace: str, reason: str, retry: int, **_: Any) -> Any:
        calls.append(dict(spec=dict(spec), name=name, namespace=namespace, reason=reason, retry=retry))
        return {"message": "hello"}

    objects.create("kex1", field="value")
    operator.start()
    await wait_for(lambda: DIFFBASE in objects.annotations("kex1"))

    assert calls == [dict(spec={"field": "value"}, name="kex1", namespace="default", reason="create", retry=0)]
    assert objects.status("kex1") == {"create_fn": {"message": "hello"}}
    essence = json.loads(objects.annotations("kex1")[DIFFBASE])
    assert essence == {"spec": {"field": "value"}}
    assert objects.annotations("kex1").keys() == {DIFFBASE}  # progress purged, no touch-dummy.
    assert objects.finalizers("kex1") == []  # no deletion handlers: no finalizer.

    messages = [r.getMessage() for r in caplog.records if r.name == "kopf.objects"]
    assert any(m.startswith("Creation is in progress: ") for m in messages)
    assert "Handler 'create_fn' succeeded." in messages
    assert "Creation is processed: 1 succeeded; 0 failed." in messages

    # Nothing happens on the follow-up events (noop): the handler is not called again.
    operator_calls_before = len(calls)
    objects.patch("kex1", {"status": {"irrelevant": 1}})
    objects.patch("kex1", {"metadata": {"labels": {"x": "y"}}})  # an essential change, but no update handlers.
    await wait_for(
        lambda: "x" in json.loads(objects.annotations("kex1")[DIFFBASE]).get("metadata", {}).get("labels", {})
    )
    assert len(calls) == operator_calls_before


async def test_update_gets_diff_old_new(
    operator: Operator,
    registry: OperatorRegistry,
    objects: Objects,
) -> None:
    updates: list[tuple[Any, Any, Any, str]] = []

    @kopf.on.create("kopfexamples", registry=registry)
    def create_fn(**_: Any) -> None:
        pass

    @kopf.on.update("kopfexamples", registry=registry)
    def update_fn(old: Any, new: Any, diff: Any, reason: str, **_: Any) -> None:
        updates.append((old, new, diff, reason))

    objects.create("kex1", field="a")
    operator.start()
    await wait_for(lambda: DIFFBASE in objects.annotations("kex1"))
    assert updates == []

    objects.patch("kex1", {"spec": {"field": "b", "extra": 1}})
    await wait_for(lambda: updates)
    await wait_for(lambda: json.loads(objects.annotations("kex1")[DIFFBASE])["spec"].get("field") == "b")
    assert len(updates) == 1
    old, new, diff, reason = updates[0]
    assert reason == "update"
    assert old == {"spec": {"field": "a"}}
    assert new == {"spec": {"field": "b", "extra": 1}}
    assert diff == (("change", ("spec", "field"), "a", "b"), ("add", ("spec", "extra"), None, 1))


async def test_field_handler_gets_the_field_values_only(
    operator: Operator,
    registry: OperatorRegistry,
    objects: Objects,
) -> None:
    calls: list[tuple[Any, Any, Any]] = []

    @kopf.on.field("kopfexamples", field="spec.field", registry=registry)
    def field_fn(old: Any, new: Any, diff: Any, **_: Any) -> None:
        calls.append((old, new, diff))

    objects.create("kex1", field="a", other=1)
    operator.start()
    await wait_for(lambda: DIFFBASE in objects.annotations("kex1"))
    assert calls == [(None, "a", (("add", (), None, "a"),))]

    objects.patch("kex1", {"spec": {"other": 2}})  # not the field: not called.
    await wait_for(lambda: json.loads(objects.annotations("kex1")[DIFFBASE])["spec"]["other"] == 2)
    assert len(calls) == 1

    objects.patch("kex1", {"spec": {"field": "b"}})
    await wait_for(lambda: len(calls) == 2)
    assert calls[1] == ("a", "b", (("change", (), "a", "b"),))
    assert objects.status("kex1") == {}  # None results are not stored.


async def test_deletion_runs_the_handler_and_releases_the_object(
    operator: Operator,
    registry: OperatorRegistry,
    objects: Objects,
    caplog: pytest.LogCaptureFixture,
) -> None:
    deleted: list[str] = []

    @kopf.on.create("kopfexamples", registry=registry)
    def create_fn(**_: Any) -> None:
        assert objects.finalizers("kex1") == [FINALIZER]  # the finalizer is added before the creation handlers.

    @kopf.on.delete("kopfexamples", registry=registry)
    def delete_fn(name: str, reason: str, **_: Any) -> None:
        deleted.append(f"{name}:{reason}")

    objects.create("kex1")
    operator.start()
    await wait_for(lambda: DIFFBASE in objects.annotations("kex1"))
    assert objects.finalizers("kex1") == [FINALIZER]
    assert objects.status("kex1") == {}

    objects.delete("kex1")
    await wait_for(lambda: objects.get("kex1") is None)
    await wait_for(lambda: len(operator.memories) == 0)  # forgotten when gone.
    assert deleted == ["kex1:delete"]
    messages = [r.getMessage() for r in caplog.records if r.name == "kopf.objects"]
    assert "Adding the finalizer, thus preventing the actual deletion." in messages
    assert "Deletion is processed: 1 succeeded; 0 failed." in messages
    assert "Removing the finalizer, thus allowing the actual deletion." in messages


async def test_optional_deletion_handlers_add_no_finalizer(
    operator: Operator,
    registry: OperatorRegistry,
    objects: Objects,
) -> None:
    @kopf.on.create("kopfexamples", registry=registry)
    def create_fn(**_: Any) -> None:
        pass

    @kopf.on.delete("kopfexamples", registry=registry, optional=True)
    def delete_fn(**_: Any) -> None:
        pass

    objects.create("kex1")
    operator.start()
    await wait_for(lambda: DIFFBASE in objects.annotations("kex1"))
    assert objects.finalizers("kex1") == []
    objects.delete("kex1")
    await wait_for(lambda: objects.get("kex1") is None)


async def test_finalizer_is_removed_when_no_longer_needed(
    operator: Operator,
    registry: OperatorRegistry,
    objects: Objects,
) -> None:
    @kopf.on.delete("kopfexamples", registry=registry, labels={"guarded": "yes"})
    def delete_fn(**_: Any) -> None:
        pass

    objects.create("kex1", labels={"guarded": "yes"})
    operator.start()
    await wait_for(lambda: objects.finalizers("kex1") == [FINALIZER])
    objects.patch("kex1", {"metadata": {"labels": {"guarded": "no"}}})
    await wait_for(lambda: objects.finalizers("kex1") == [])


async def test_foreign_finalizers_are_kept(
    operator: Operator,
    registry: OperatorRegistry,
    objects: Objects,
) -> None:
    calls: list[str] = []

    @kopf.on.delete("kopfexamples", registry=registry)
    def delete_fn(**_: Any) -> None:
        calls.append("delete")

    objects.create("kex1")
    objects.patch("kex1", {"metadata": {"finalizers": ["other/finalizer"]}})
    operator.start()
    await wait_for(lambda: objects.finalizers("kex1") == ["other/finalizer", FINALIZER])
    objects.delete("kex1")
    await wait_for(lambda: objects.finalizers("kex1") == ["other/finalizer"])
    assert calls == ["delete"]
    assert objects.get("kex1") is not None


async def test_posting_of_handler_logs_as_k8s_events(
    operator: Operator,
    registry: OperatorRegistry,
    objects: Objects,
    cluster: Cluster,
) -> None:
    @kopf.on.create("kopfexamples", registry=registry)
    def create_fn(logger: logging.LoggerAdapter[Any], **_: Any) -> None:
        logger.debug("Hidden.")
        logger.warning("Visible.")

    # The posting engine: the loggers' sink into the events queue & a background poster of the events.
    event_queue = posting.make_event_queue()
    token = posting.event_queue_var.set(event_queue)
    sink_token = loggers.event_sink_var.set(posting.queue_logged_event)
    poster = asyncio.create_task(
        posting.poster(event_queue=event_queue, settings=operator.settings, vault=operator.vault)
    )
    try:
        objects.create("kex1")
        operator.start()
        await wait_for(lambda: DIFFBASE in objects.annotations("kex1"))
        events_rtype = cluster.resource("", "v1", "events")
        await wait_for(lambda: len(list(cluster.objects(events_rtype.storage_key, "default"))) >= 3)
    finally:
        poster.cancel()
        await asyncio.gather(poster, return_exceptions=True)
        posting.event_queue_var.reset(token)
        loggers.event_sink_var.reset(sink_token)

    events = sorted(cluster.objects(events_rtype.storage_key, "default"), key=lambda e: e["metadata"]["name"])
    summary = sorted((e["type"], e["message"], e["involvedObject"]["name"]) for e in events)
    assert summary == [
        ("Normal", "Creation is processed: 1 succeeded; 0 failed.", "kex1"),
        ("Normal", "Handler 'create_fn' succeeded.", "kex1"),
        ("Warning", "Visible.", "kex1"),
    ]  # the framework's own debug messages ("in progress", "Patching") are not posted.


async def test_posting_level_filters_the_shortcuts_but_not_kopf_event(
    operator: Operator,
    registry: OperatorRegistry,
    objects: Objects,
    cluster: Cluster,
) -> None:
    # As documented and as the published framework does: kopf.info/warn/exception have their logging levels;
    # kopf.event() of any type (even 'Normal') has none and is always posted (while the posting is enabled).
    operator.settings.posting.level = logging.WARNING

    @kopf.on.create("kopfexamples", registry=registry)
    def create_fn(body: kopf.Body, **_: Any) -> None:
        kopf.info(body, reason="Info", message="filtered")
        kopf.warn(body, reason="Warn", message="posted")
        kopf.event(body, type="Normal", reason="Event", message="posted")
        kopf.event(body, type="Custom", reason="Event", message="posted")
        kopf.exception(body, reason="Exception", message="posted:", exc=ValueError("boom"))

    event_queue = posting.make_event_queue()
    token = posting.event_queue_var.set(event_queue)
    poster = asyncio.create_task(
        posting.poster(event_queue=event_queue, settings=operator.settings, vault=operator.vault)
    )
    events_rtype = cluster.resource("", "v1", "events")
    try:
        objects.create("kex1")
        operator.start()
        await wait_for(lambda: DIFFBASE in objects.annotations("kex1"))
        await wait_for(lambda: len(list(cluster.objects(events_rtype.storage_key, "default"))) >= 4)
        await asyncio.sleep(5)  # the filtered one does not come later either
    finally:
        poster.cancel()
        await asyncio.gather(poster, return_exceptions=True)
        posting.event_queue_var.reset(token)

    events = cluster.objects(events_rtype.storage_key, "default")
    assert sorted((e["type"], e["reason"], e["message"]) for e in events) == [
        ("Custom", "Event", "posted"),
        ("Error", "Exception", "posted: boom"),
        ("Normal", "Event", "posted"),
        ("Warning", "Warn", "posted"),
    ]


async def test_deletion_interrupts_an_unfinished_creation(
    operator: Operator,
    registry: OperatorRegistry,
    objects: Objects,
) -> None:
    calls: list[str] = []

    @kopf.on.create("kopfexamples", registry=registry)
    def create_fn(**_: Any) -> None:
        calls.append("create")
        raise kopf.TemporaryError("never ready", delay=1000)

    @kopf.on.delete("kopfexamples", registry=registry)
    def delete_fn(**_: Any) -> None:
        calls.append("delete")

    objects.create("kex1")
    operator.start()
    await wait_for(lambda: calls == ["create"])
    objects.delete("kex1")  # interrupts the sleep of the delayed creation handler.
    await wait_for(lambda: objects.get("kex1") is None, timeout=100)
    assert calls == ["create", "delete"]
