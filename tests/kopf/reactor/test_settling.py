"""The echo of the framework's own last patch: skipped when it changes nothing, processed whenever it might."""

import asyncio
import copy
import functools
import json
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

import kopf
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.structs.credentials import Vault
from kopf._cogs.structs.patches import Patch
from kopf._core.intents.registries import OperatorRegistry
from kopf._core.reactor import processing, settling
from kopf._core.reactor.memories import ResourceMemories

from .conftest import DIFFBASE, FINALIZER, KEX, Objects, process_event

pytestmark = pytest.mark.looptime


Process = Callable[..., Awaitable[None]]


@pytest.fixture
def memories() -> ResourceMemories:
    return ResourceMemories()


@pytest.fixture
def process(
    vault: Vault, settings: OperatorSettings, registry: OperatorRegistry, memories: ResourceMemories
) -> Process:
    """One event of the object to the processor, with the same operator's state each time."""
    return functools.partial(process_event, registry=registry, settings=settings, memories=memories, vault=vault)


@pytest.fixture
def updates(registry: OperatorRegistry) -> list[Any]:
    """The diffs seen by an update handler."""
    seen: list[Any] = []

    @kopf.on.update("kopfexamples", registry=registry)
    def update_fn(diff: Any, **_: Any) -> None:
        seen.append(list(diff))

    return seen


@pytest.fixture
def detected(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The changes that the processing detects: one per event processed in full, none for the skipped ones."""
    changes: list[Any] = []
    original = processing._detect_change

    def counted(context: Any) -> Any:
        change = original(context)
        changes.append(change.reason)
        return change

    monkeypatch.setattr(processing, "_detect_change", counted)
    return changes


async def test_the_echo_of_the_last_patch_is_skipped_with_the_same_debug_lines(
    process: Process,
    memories: ResourceMemories,
    registry: OperatorRegistry,
    objects: Objects,
    caplog: pytest.LogCaptureFixture,
    detected: list[Any],
) -> None:
    @kopf.on.create("kopfexamples", registry=registry)
    def create_fn(**_: Any) -> str:
        return "done"

    created = objects.create("kex1")
    await process(created, event_type=None)
    echo = objects.get("kex1")
    assert echo is not None and echo["status"]["create_fn"] == "done"
    memory = memories.recall(echo)
    assert memory.settled_version == echo["metadata"]["resourceVersion"] == memory.expected_version

    detected.clear()
    caplog.clear()
    await process(echo)
    assert detected == []
    assert memory.settled_version is None and memory.expected_version is None
    assert [record.getMessage() for record in caplog.records if record.name == "kopf.objects"] == [
        "Something has changed, but we are not interested (the essence is the same).",
        "Handling cycle is finished, waiting for new changes.",
    ]
    assert all(
        getattr(rec, "k8s_ref", {}).get("name") == "kex1" for rec in caplog.records if rec.name == "kopf.objects"
    )

    # The same version again (e.g. re-listed after an error of the watch-stream): processed in full as usual.
    await process(echo)
    assert detected == ["noop"]
    assert objects.get("kex1") == echo  # and nothing to patch either


async def test_the_echo_is_processed_when_others_have_changed_the_object_meanwhile(
    updates: list[Any],
    process: Process,
    memories: ResourceMemories,
    registry: OperatorRegistry,
    objects: Objects,
) -> None:
    @kopf.on.create("kopfexamples", registry=registry)
    def create_fn(name: str, **_: Any) -> None:
        objects.patch(name, {"spec": {"size": 2}})  # someone else, while the handler runs

    await process(objects.create("kex1"), event_type=None)
    echo = objects.get("kex1")
    assert echo is not None and memories.recall(echo).settled_version is None

    await process(echo)
    assert updates == [[("add", ("spec", "size"), None, 2)]]


async def test_the_echo_is_processed_when_a_when_filter_can_see_the_results(
    process: Process,
    registry: OperatorRegistry,
    objects: Objects,
) -> None:
    @kopf.on.create("kopfexamples", registry=registry)
    def create_fn(**_: Any) -> str:
        return "done"

    # Blocks the deletion only once the creation's result is in the status: the echo is the first to see it.
    @kopf.on.delete("kopfexamples", registry=registry, when=lambda status, **_: "create_fn" in status)
    def delete_fn(**_: Any) -> None:
        pass

    await process(objects.create("kex1"), event_type=None)
    assert objects.finalizers("kex1") == []

    await process(objects.get("kex1"))
    assert objects.finalizers("kex1") == [FINALIZER]


async def test_the_echo_is_processed_when_the_handlers_have_changed_the_essence(
    updates: list[Any],
    process: Process,
    registry: OperatorRegistry,
    objects: Objects,
) -> None:
    @kopf.on.create("kopfexamples", registry=registry)
    def create_fn(patch: kopf.Patch, **_: Any) -> None:
        patch.metadata.labels["handled"] = "yes"

    await process(objects.create("kex1"), event_type=None)
    await process(objects.get("kex1"))
    assert len(updates) == 1 and "handled" in repr(updates[0])


async def test_the_objects_with_daemons_never_skip_their_echoes(
    process: Process,
    memories: ResourceMemories,
    registry: OperatorRegistry,
    objects: Objects,
) -> None:
    seen: list[Any] = []

    @kopf.on.create("kopfexamples", registry=registry)
    def create_fn(**_: Any) -> str:
        return "done"

    @kopf.daemon("kopfexamples", registry=registry)
    async def daemon_fn(stopped: Any, status: Any, **_: Any) -> None:
        while not stopped:
            seen.append(dict(status))
            await stopped.wait(1)

    await process(objects.create("kex1"), event_type=None)
    await process(objects.get("kex1"))
    for _ in range(5):  # the finalizer, the creation, and their echoes: the daemon's body is always the latest
        echo = objects.get("kex1")
        assert echo is not None and memories.recall(echo).settled_version is None
        await process(echo)
    await asyncio.sleep(3)
    assert seen[-1] == {"create_fn": "done"}
    await process(objects.get("kex1"), event_type="DELETED")


def _bodies(**annotations: str) -> tuple[dict[str, Any], dict[str, Any]]:
    before: dict[str, Any] = {
        "apiVersion": "kopf.dev/v1",
        "kind": "KopfExample",
        "metadata": {"name": "kex1", "namespace": "default", "uid": "uid1", "resourceVersion": "1", "generation": 1},
        "spec": {"size": 1},
    }
    if annotations:
        before["metadata"]["annotations"] = dict(annotations)
    after = copy.deepcopy(before)
    after["metadata"]["resourceVersion"] = "3"
    after["metadata"]["managedFields"] = [{"manager": "kopf"}]
    after["metadata"].setdefault("annotations", {})[DIFFBASE] = '{"spec":{"size":1}}\n'
    after["status"] = {"create_fn": "done"}
    return before, after


def _settled(
    before: dict[str, Any], patch: dict[str, Any], after: dict[str, Any], registry: OperatorRegistry
) -> str | None:
    return settling.settled_version(
        before=before, patch=Patch(patch), after=after, resource=KEX, registry=registry, settings=OperatorSettings()
    )


PATCH: dict[str, Any] = {
    "status": {"create_fn": "done"},
    "metadata": {"annotations": {DIFFBASE: '{"spec":{"size":1}}\n'}},
}


def test_a_bookkeeping_patch_that_landed_as_is_settles(registry: OperatorRegistry) -> None:
    kopf.on.create("kopfexamples", registry=registry, labels={"app": kopf.ABSENT}, field="spec.size")(lambda **_: 0)
    before, after = _bodies(note="kept")
    assert _settled(before, PATCH, after, registry) == "3"


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda b: b["spec"].update(size=2), id="spec"),
        pytest.param(lambda b: b["metadata"].update(labels={"app": "x"}), id="labels"),
        pytest.param(lambda b: b["metadata"]["annotations"].update(note="other"), id="annotation"),
        pytest.param(lambda b: b["metadata"].update(finalizers=["x"]), id="finalizers"),
        pytest.param(lambda b: b["metadata"].update(deletionTimestamp="2020-01-01T00:00:00Z"), id="deletion"),
        pytest.param(lambda b: b["status"].update(other=1), id="status"),
        pytest.param(lambda b: b.update(data={"x": 1}), id="new-stanza"),
        pytest.param(lambda b: b["metadata"].pop("resourceVersion"), id="no-version"),
    ],
)
def test_an_object_changed_by_others_does_not_settle(registry: OperatorRegistry, change: Any) -> None:
    kopf.on.create("kopfexamples", registry=registry)(lambda **_: 0)
    before, after = _bodies(note="kept")
    change(after)
    assert _settled(before, PATCH, after, registry) is None


@pytest.mark.parametrize(
    ("stanza", "value"),
    [
        pytest.param("spec", {"size": 1}, id="spec"),
        pytest.param("labels", {"app": "x"}, id="labels"),
        pytest.param("annotations", {"note": "mine"}, id="own-annotation"),
        pytest.param("finalizers", [FINALIZER], id="finalizers"),
    ],
)
def test_a_patch_of_more_than_bookkeeping_does_not_settle(registry: OperatorRegistry, stanza: str, value: Any) -> None:
    kopf.on.create("kopfexamples", registry=registry)(lambda **_: 0)
    before, after = _bodies()
    patch = copy.deepcopy(PATCH)
    if stanza == "spec":
        patch["spec"] = value
    elif stanza == "annotations":
        patch["metadata"]["annotations"].update(value)
        after["metadata"]["annotations"].update(value)
    else:
        patch["metadata"][stanza] = after["metadata"][stanza] = value
    assert _settled(before, patch, after, registry) is None


def test_a_patch_with_functions_does_not_settle(registry: OperatorRegistry) -> None:
    kopf.on.create("kopfexamples", registry=registry)(lambda **_: 0)
    before, after = _bodies()
    assert (
        settling.settled_version(
            before=before,
            patch=Patch(PATCH, fns=[lambda body: None]),
            after=after,
            resource=KEX,
            registry=registry,
            settings=OperatorSettings(),
        )
        is None
    )


@pytest.mark.parametrize(
    "filters",
    [
        pytest.param({"when": lambda **_: True}, id="when"),
        pytest.param({"field": "status.create_fn"}, id="status-field"),
        pytest.param({"field": "metadata.annotations"}, id="metadata-field"),
        pytest.param({"field": "spec.size", "value": lambda value, **_: True}, id="value-callback"),
        pytest.param({"labels": {"app": lambda value, **_: True}}, id="label-callback"),
        pytest.param({"annotations": {"note": lambda value, **_: True}}, id="annotation-callback"),
        pytest.param({"annotations": {DIFFBASE: kopf.ABSENT}}, id="bookkeeping-annotation"),
    ],
)
def test_filters_that_can_see_the_patch_prevent_the_settling(registry: OperatorRegistry, filters: Any) -> None:
    kopf.on.delete("kopfexamples", registry=registry, **filters)(lambda **_: 0)
    before, after = _bodies()
    assert _settled(before, PATCH, after, registry) is None


def test_a_stray_progress_prevents_the_settling(registry: OperatorRegistry) -> None:
    kopf.on.create("kopfexamples", registry=registry)(lambda **_: 0)
    kopf.on.update("kopfexamples", registry=registry, id="update_fn")(lambda **_: 0)
    progress = json.dumps({"started": "2020-01-01T00:00:00.000000Z", "retries": 1})
    before, after = _bodies(**{"kopf.zalando.org/update_fn": progress})
    assert _settled(before, PATCH, after, registry) is None
    purged = copy.deepcopy(PATCH)
    purged["metadata"]["annotations"]["kopf.zalando.org/update_fn"] = None
    del after["metadata"]["annotations"]["kopf.zalando.org/update_fn"]
    assert _settled(before, purged, after, registry) == "3"


def test_the_annotations_set_by_the_patch_are_told_by_the_storages_by_their_values(
    registry: OperatorRegistry,
) -> None:
    kopf.on.create("kopfexamples", registry=registry)(lambda **_: 0)
    before, after = _bodies()
    # Under the framework's prefix, but not a progress record: the user's own annotation (in the essence).
    patch = copy.deepcopy(PATCH)
    patch["metadata"]["annotations"]["kopf.zalando.org/note"] = after["metadata"]["annotations"][
        "kopf.zalando.org/note"
    ] = "mine"
    assert _settled(before, patch, after, registry) is None
    # A progress record there: the storage's own (never in the essence); a touch-dummy removed: not there at all.
    record = json.dumps({"started": "2020-01-01T00:00:00.000000Z", "retries": 1})
    patch["metadata"]["annotations"]["kopf.zalando.org/note"] = after["metadata"]["annotations"][
        "kopf.zalando.org/note"
    ] = record
    patch["metadata"]["annotations"]["kopf.zalando.org/touch-dummy"] = None
    assert _settled(before, patch, after, registry) == "3"
