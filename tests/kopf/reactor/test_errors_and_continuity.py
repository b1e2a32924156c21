"""End-to-end: errors & retries with delays (in virtual time), restarts of the operator, resuming."""

import asyncio
import itertools
import json
from typing import Any

import pytest

import kopf
from kopf._core.actions.loggers import is_postable
from kopf._core.intents.registries import OperatorRegistry
from tests.helpers import wait_for

from .conftest import DIFFBASE, Objects, Operator

pytestmark = pytest.mark.looptime


async def test_temporary_error_is_retried_after_its_delay(
    operator: Operator,
    registry: OperatorRegistry,
    objects: Objects,
) -> None:
    loop = asyncio.get_running_loop()
    times: list[float] = []
    retries: list[int] = []

    @kopf.on.create("kopfexamples", registry=registry)
    def create_fn(retry: int, **_: Any) -> str:
        times.append(loop.time())
        retries.append(retry)
        if retry < 1:
            raise kopf.TemporaryError("Not yet.", delay=120)
        return "done"

    objects.create("kex1")
    operator.start()
    await wait_for(lambda: len(times) == 1)
    await asyncio.sleep(1)
    progress = json.loads(objects.annotations("kex1")["kopf.zalando.org/create_fn"])
    assert progress["retries"] == 1
    assert progress["message"] == "Not yet."
    assert "delayed" in progress

    await wait_for(lambda: DIFFBASE in objects.annotations("kex1"), timeout=300, step=1)
    assert retries == [0, 1]
    assert 119 <= times[1] - times[0] <= 122
    assert objects.status("kex1")["create_fn"] == "done"
    assert "kopf" not in objects.status("kex1")  # the progress is in the annotations only (as published)
    assert "kopf.zalando.org/create_fn" not in objects.annotations("kex1")
    assert "kopf.zalando.org/touch-dummy" not in objects.annotations("kex1")


async def test_delayed_retry_is_not_blocking_other_events(
    operator: Operator,
    registry: OperatorRegistry,
    objects: Objects,
) -> None:
    events: list[str | None] = []

    @kopf.on.event("kopfexamples", registry=registry)
    def event_fn(type: str | None, **_: Any) -> None:
        events.append(type)

    @kopf.on.create("kopfexamples", registry=registry)
    def create_fn(retry: int, **_: Any) -> None:
        if retry < 1:
            raise kopf.TemporaryError("Not yet.", delay=600)

    objects.create("kex1")
    operator.start()
    await wait_for(lambda: "kopf.zalando.org/create_fn" in objects.annotations("kex1"))
    await asyncio.sleep(10)
    count = len(events)
    objects.patch("kex1", {"metadata": {"labels": {"a": "b"}}})
    await wait_for(lambda: len(events) > count, timeout=5)  # the sleep is interrupted by the new event.
    await wait_for(lambda: DIFFBASE in objects.annotations("kex1"), timeout=700, step=1)


async def test_permanent_error_fails_the_handler_without_retries(
    operator: Operator,
    registry: OperatorRegistry,
    objects: Objects,
    caplog: pytest.LogCaptureFixture,
) -> None:
    calls: list[int] = []

    @kopf.on.create("kopfexamples", registry=registry)
    def create_fn(retry: int, **_: Any) -> None:
        calls.append(retry)
        raise kopf.PermanentError("Never.")

    @kopf.on.create("kopfexamples", registry=registry)
    def create_ok(**_: Any) -> int:
        return 42

    objects.create("kex1")
    operator.start()
    await wait_for(lambda: DIFFBASE in objects.annotations("kex1"))
    await asyncio.sleep(100)
    assert calls == [0]
    assert objects.results("kex1") == {"create_ok": 42}
    messages = [r.getMessage() for r in caplog.records if r.name == "kopf.objects"]
    assert "Handler 'create_fn' failed permanently: Never." in messages
    assert "Creation is processed: 1 succeeded; 1 failed." in messages


async def test_arbitrary_errors_are_retried_with_backoff_and_limited_retries(
    operator: Operator,
    registry: OperatorRegistry,
    objects: Objects,
) -> None:
    loop = asyncio.get_running_loop()
    times: list[float] = []

    @kopf.on.create("kopfexamples", registry=registry, retries=3, backoff=10)
    def create_fn(**_: Any) -> None:
        times.append(loop.time())
        raise ValueError("boom")

    objects.create("kex1")
    operator.start()
    await wait_for(lambda: DIFFBASE in objects.annotations("kex1"), timeout=300)
    assert len(times) == 3
    assert [round(b - a) for a, b in itertools.pairwise(times)] == [10, 10]


async def test_resuming_after_a_restart_mid_cycle(
    operator: Operator,
    registry: OperatorRegistry,
    objects: Objects,
) -> None:
    calls: list[str] = []
    gate = asyncio.Event()

    @kopf.on.create("kopfexamples", registry=registry)
    def first(**_: Any) -> str:
        calls.append("first")
        return "first"

    @kopf.on.create("kopfexamples", registry=registry)
    async def second(**_: Any) -> str:
        calls.append("second")
        await gate.wait()  # blocked in the 1st operator; unblocked in the 2nd one.
        return "second"

    @kopf.on.resume("kopfexamples", registry=registry)
    def resumed(**_: Any) -> None:
        calls.append("resumed")

    objects.create("kex1")
    operator.start()
    await wait_for(lambda: calls == ["first", "second"])
    assert objects.results("kex1") == {"first": "first"}

    # The operator "dies" in the middle of the second handler: its progress is already persisted.
    await operator.stop()
    calls.clear()
    gate.set()
    operator.start(fresh=True)
    await wait_for(lambda: DIFFBASE in objects.annotations("kex1"))
    assert calls == ["second"]  # the finished one is not repeated; no resuming in a creation (as published).
    assert objects.results("kex1") == {"first": "first", "second": "second"}

    # Another restart: the object is handled already, only the resuming handlers are called.
    await operator.restart()
    calls.clear()
    await wait_for(lambda: calls == ["resumed"])
    await asyncio.sleep(10)
    assert calls == ["resumed"]


async def test_resume_handlers_with_create_on_the_same_function(
    operator: Operator,
    registry: OperatorRegistry,
    objects: Objects,
) -> None:
    calls: list[str] = []

    @kopf.on.resume("kopfexamples", registry=registry)
    @kopf.on.create("kopfexamples", registry=registry)
    def fn(reason: str, **_: Any) -> None:
        calls.append(reason)

    objects.create("kex1")
    operator.start()
    await wait_for(lambda: DIFFBASE in objects.annotations("kex1"))
    assert calls == ["create"]  # mixed in, but the same function & id: called once.
    await operator.restart()
    await wait_for(lambda: len(calls) == 2)
    assert calls == ["create", "resume"]


async def test_changes_during_downtime_are_handled_as_updates(
    operator: Operator,
    registry: OperatorRegistry,
    objects: Objects,
) -> None:
    calls: list[tuple[str, Any]] = []

    @kopf.on.create("kopfexamples", registry=registry)
    def create_fn(**_: Any) -> None:
        calls.append(("create", None))

    @kopf.on.update("kopfexamples", registry=registry)
    def update_fn(diff: Any, **_: Any) -> None:
        calls.append(("update", diff))

    objects.create("kex1", field="a")
    operator.start()
    await wait_for(lambda: DIFFBASE in objects.annotations("kex1"))
    await operator.stop()
    objects.patch("kex1", {"spec": {"field": "b"}})
    objects.patch("kex1", {"spec": {"field": "c"}})
    operator.start(fresh=True)
    await wait_for(lambda: len(calls) == 2)
    assert calls == [("create", None), ("update", (("change", ("spec", "field"), "a", "c"),))]


async def test_deleted_during_downtime_no_resuming(
    operator: Operator,
    registry: OperatorRegistry,
    objects: Objects,
) -> None:
    calls: list[str] = []

    @kopf.on.resume("kopfexamples", registry=registry)
    def resume_fn(**_: Any) -> None:
        calls.append("resume")

    @kopf.on.resume("kopfexamples", registry=registry, deleted=True)
    def resume_deleted(**_: Any) -> None:
        calls.append("resume-deleted")

    @kopf.on.delete("kopfexamples", registry=registry)
    def delete_fn(**_: Any) -> None:
        calls.append("delete")

    operator.start()
    await asyncio.sleep(1)
    objects.create("kex1")
    await wait_for(lambda: DIFFBASE in objects.annotations("kex1"))
    assert calls == []  # not resumed: created while the operator is running.
    await operator.stop()
    objects.delete("kex1")
    operator.start(fresh=True)
    await wait_for(lambda: objects.get("kex1") is None)
    assert sorted(calls) == ["delete", "resume-deleted"]


async def test_unexpected_errors_are_throttled_and_do_not_stop_the_watcher(
    operator: Operator,
    registry: OperatorRegistry,
    objects: Objects,
    caplog: pytest.LogCaptureFixture,
) -> None:
    loop = asyncio.get_running_loop()
    operator.settings.batching.error_delays = [10, 20]
    times: list[float] = []

    class Broken:
        def __copy__(self) -> Any:
            times.append(loop.time())
            raise RuntimeError("a framework-level failure")

    operator.memo = Broken()

    @kopf.on.create("kopfexamples", registry=registry)
    def create_fn(**_: Any) -> None:
        pass

    objects.create("kex1")
    operator.start()
    await wait_for(lambda: len(times) >= 1)
    objects.patch("kex1", {"spec": {"x": 1}})
    objects.patch("kex1", {"spec": {"x": 2}})
    await wait_for(lambda: len(times) >= 2)
    objects.patch("kex1", {"spec": {"x": 3}})
    await wait_for(lambda: len(times) >= 3)
    assert [round(b - a) for a, b in itertools.pairwise(times)] == [10, 20]
    assert "Throttling for 10 seconds" in caplog.text
    assert operator.task is not None and not operator.task.done()


async def test_throttling_messages_are_not_posted_as_k8s_events(
    operator: Operator,
    registry: OperatorRegistry,
    objects: Objects,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """As in the published framework: the throttling is in the object's log only."""
    operator.settings.batching.error_delays = [10]
    crashes: list[str] = []

    def crashing(spec: kopf.Spec, **_: Any) -> bool:
        if spec.get("field") == "crash" and not crashes:
            crashes.append("crash")
            raise RuntimeError("when crashed")
        return True

    @kopf.on.update("kopfexamples", registry=registry, when=crashing)
    def update_fn(**_: Any) -> None:
        pass

    objects.create("kex1", field="ok")
    operator.start()
    await wait_for(lambda: DIFFBASE in objects.annotations("kex1"))
    objects.patch("kex1", {"spec": {"field": "crash"}})
    await wait_for(lambda: "Throttling is over" in caplog.text, timeout=20)
    throttling = [r for r in caplog.records if r.getMessage().startswith("Throttling")]
    assert [r.getMessage() for r in throttling] == [
        "Throttling for 10 seconds due to an unexpected error: RuntimeError('when crashed')",
        "Throttling is over. Switching back to normal operations.",
    ]
    assert all(r.name == "kopf.objects" and not is_postable(r) for r in throttling)


async def test_custom_progress_storage_with_only_the_documented_methods(
    operator: Operator,
    registry: OperatorRegistry,
    objects: Objects,
    settings: kopf.OperatorSettings,
) -> None:
    """A storage written as documented (fetch, store, purge: e.g. an external database) retries and finishes."""
    records: dict[tuple[str, str], kopf.ProgressRecord] = {}

    class ExternalStorage(kopf.ProgressStorage):
        def fetch(self, *, key: kopf.HandlerId, body: kopf.Body) -> kopf.ProgressRecord | None:
            return records.get((str(body.metadata.uid), key))

        def store(
            self, *, key: kopf.HandlerId, record: kopf.ProgressRecord, body: kopf.Body, patch: kopf.Patch
        ) -> None:
            records[(str(body.metadata.uid), key)] = record

        def purge(self, *, key: kopf.HandlerId, body: kopf.Body, patch: kopf.Patch) -> None:
            records.pop((str(body.metadata.uid), key), None)

    settings.persistence.progress_storage = ExternalStorage()
    retries: list[int] = []

    @kopf.on.create("kopfexamples", registry=registry)
    def create_fn(retry: int, **_: Any) -> str:
        retries.append(retry)
        if retry < 2:
            raise kopf.TemporaryError("Not yet.", delay=30)
        return "done"

    objects.create("kex1")
    operator.start()
    await wait_for(lambda: DIFFBASE in objects.annotations("kex1"), timeout=300, step=1)
    assert retries == [0, 1, 2]
    assert objects.status("kex1")["create_fn"] == "done"
    assert not records  # purged when finished
    assert not any(key.startswith("kopf.zalando.org/create_fn") for key in objects.annotations("kex1"))
    assert "kopf.zalando.org/touch-dummy" not in objects.annotations("kex1")


@pytest.mark.parametrize("superseded", ["creation", "updating"])
async def test_unfinished_handling_is_superseded_by_deletion(
    operator: Operator,
    registry: OperatorRegistry,
    objects: Objects,
    caplog: pytest.LogCaptureFixture,
    superseded: str,
) -> None:
    """As in the published framework: reported once (top-level handlers only), its records purged at once."""
    deletions: list[int] = []
    on_cause = kopf.on.create if superseded == "creation" else kopf.on.update

    @on_cause("kopfexamples", registry=registry)
    def ok(**_: Any) -> None:
        pass

    @on_cause("kopfexamples", registry=registry)
    def bad(**_: Any) -> None:
        raise kopf.PermanentError("Never.")

    @on_cause("kopfexamples", registry=registry)
    def parent(**_: Any) -> None:
        @kopf.subhandler(id="child")
        def child(**_: Any) -> None:
            raise kopf.TemporaryError("Not yet.", delay=600)

    @kopf.on.delete("kopfexamples", registry=registry)
    def gone(retry: int, **_: Any) -> None:
        deletions.append(retry)
        if retry < 1:
            raise kopf.TemporaryError("Not yet.", delay=60)

    objects.create("kex1", field="a")
    operator.start()
    if superseded == "updating":
        await wait_for(lambda: DIFFBASE in objects.annotations("kex1"))
        objects.patch("kex1", {"spec": {"field": "b"}})
    await wait_for(lambda: "kopf.zalando.org/parent.child" in objects.annotations("kex1"))
    await asyncio.sleep(10)
    objects.delete("kex1")
    await wait_for(lambda: deletions == [0])
    await asyncio.sleep(1)
    remaining = [key for key in objects.annotations("kex1") if key.startswith("kopf.zalando.org/")]
    assert sorted(remaining) == ["kopf.zalando.org/gone"] + (
        ["kopf.zalando.org/last-handled-configuration"] if superseded == "updating" else []
    )

    await wait_for(lambda: objects.get("kex1") is None, timeout=100)
    messages = [r.getMessage() for r in caplog.records if r.name == "kopf.objects"]
    title = superseded.capitalize()
    assert messages.count(f"{title} is superseded by deletion: 1 succeeded; 1 failed; 1 left to the moment.") == 1
    assert not any("is superseded" in message and not message.startswith(title) for message in messages)
    assert deletions == [0, 1]


async def test_custom_prefixes_mark_the_objects_as_managed(
    operator: Operator,
    registry: OperatorRegistry,
    objects: Objects,
) -> None:
    """As in the published framework: ``{prefix}/kopf-managed: "yes"``, which is not a change of the object."""
    operator.settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix="progress.example.com")
    operator.settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(prefix="diff.example.com")
    updates: list[Any] = []

    @kopf.on.create("kopfexamples", registry=registry)
    def create_fn(**_: Any) -> None:
        pass

    @kopf.on.update("kopfexamples", registry=registry)
    def update_fn(diff: Any, **_: Any) -> None:
        updates.append(diff)

    objects.create("kex1", field="a")
    operator.start()
    await wait_for(lambda: "diff.example.com/last-handled-configuration" in objects.annotations("kex1"))
    await asyncio.sleep(10)
    annotations = objects.annotations("kex1")
    assert annotations["progress.example.com/kopf-managed"] == "yes"
    assert annotations["diff.example.com/kopf-managed"] == "yes"
    assert json.loads(annotations["diff.example.com/last-handled-configuration"]) == {"spec": {"field": "a"}}
    assert updates == []  # the markers are not the object's changes.
