"""Several storages at once, and the smart storage that reads both and writes one."""

from typing import Any

import pytest

from kopf._cogs.configs.progress import (
    AnnotationsProgressStorage,
    MultiProgressStorage,
    ProgressStorage,
    SmartProgressStorage,
    StatusProgressStorage,
)
from kopf._cogs.structs.bodies import Body, BodyEssence
from kopf._cogs.structs.patches import Patch

from .helpers import KEY, RECORD


def test_multi_storage_writes_all_and_reads_the_first_found() -> None:
    storage = MultiProgressStorage([AnnotationsProgressStorage(), StatusProgressStorage()])
    patch = Patch()
    storage.store(key=KEY, record=RECORD, body=Body({}), patch=patch)
    assert "kopf.zalando.org/create_fn" in patch["metadata"]["annotations"]
    assert "create_fn" in patch["status"]["kopf"]["progress"]

    both = Body(
        {
            "metadata": {"annotations": {"kopf.zalando.org/create_fn": '{"retries":1}'}},
            "status": {"kopf": {"progress": {"create_fn": {"retries": 2}}}},
        }
    )
    assert storage.fetch(key=KEY, body=both) == {"retries": 1}
    status_only = Body({"status": {"kopf": {"progress": {"create_fn": {"retries": 2}}}}})
    assert storage.fetch(key=KEY, body=status_only) == {"retries": 2}
    assert storage.fetch(key=KEY, body=Body({})) is None

    patch = Patch()
    storage.purge(key=KEY, body=both, patch=patch)
    assert patch == {
        "metadata": {"annotations": {"kopf.zalando.org/create_fn": None}},
        "status": {"kopf": {"progress": {"create_fn": None}}},
    }

    patch = Patch()
    storage.touch(body=Body({}), patch=patch, value="t")
    assert patch == {
        "metadata": {"annotations": {"kopf.zalando.org/touch-dummy": "t"}},
        "status": {"kopf": {"dummy": "t"}},
    }

    essence = BodyEssence(
        metadata={"annotations": {"kopf.zalando.org/touch-dummy": "t"}}, status={"kopf": {"dummy": "t"}}, spec={}
    )
    assert storage.clear(essence=essence) == {"spec": {}}


def test_multi_storage_flushes_all() -> None:
    flushed = []

    class Flushing(StatusProgressStorage):
        def flush(self) -> None:
            flushed.append(self)

    a, b = Flushing(), Flushing()
    MultiProgressStorage([a, b]).flush()
    assert flushed == [a, b]


def test_smart_storage_defaults() -> None:
    storage = SmartProgressStorage()
    assert isinstance(storage, MultiProgressStorage)
    annotations, status = storage.storages
    assert isinstance(annotations, AnnotationsProgressStorage)
    assert isinstance(status, StatusProgressStorage)
    assert annotations.prefix == "kopf.zalando.org"
    assert annotations.touch_key == "touch-dummy"
    assert annotations.v1 is True
    assert annotations.verbose is False
    assert status.field == ("status", "kopf", "progress")
    assert status.touch_field == ("status", "kopf", "dummy")


def test_smart_storage_options_are_passed_through() -> None:
    storage = SmartProgressStorage(
        name="op",
        field="status.{name}.p",
        touch_key="tk",
        touch_field="status.t",
        prefix="op.example.com",
        v1=False,
        verbose=True,
    )
    annotations, status = storage.storages
    assert isinstance(annotations, AnnotationsProgressStorage)
    assert isinstance(status, StatusProgressStorage)
    assert (annotations.prefix, annotations.touch_key, annotations.v1, annotations.verbose) == (
        "op.example.com",
        "tk",
        False,
        True,
    )
    assert status.field == ("status", "op", "p")
    assert status.touch_field == ("status", "t")


def test_smart_storage_reads_the_legacy_status_records() -> None:
    body = Body({"status": {"kopf": {"progress": {"create_fn": {"success": True}}}}})
    assert SmartProgressStorage().fetch(key=KEY, body=body) == {"success": True}


@pytest.mark.parametrize(
    "storage",
    [
        AnnotationsProgressStorage(),
        StatusProgressStorage(),
        SmartProgressStorage(),
    ],
)
def test_clearing_copies_the_essence_only_when_it_removes_something(storage: ProgressStorage) -> None:
    clean: Any = {"spec": {"x": 1}, "metadata": {"annotations": {"other": "1"}}}
    assert storage.clear(essence=clean) is clean  # nothing of the storage's own: the same essence, unchanged
    assert clean == {"spec": {"x": 1}, "metadata": {"annotations": {"other": "1"}}}

    record = '{"started": "2020-01-01T00:00:00.000000", "retries": 0}'
    marked: Any = {
        "spec": {"x": 1},
        "metadata": {"annotations": {"other": "1", "kopf.zalando.org/fn": record}},
        "status": {"kopf": {"progress": {"fn": {"retries": 0}}}},
    }
    cleared = storage.clear(essence=marked)
    assert cleared is not marked
    assert cleared["spec"] == {"x": 1} and cleared["metadata"]["annotations"]["other"] == "1"
    assert marked["metadata"]["annotations"]["kopf.zalando.org/fn"] == record  # the given one is left as it was
    assert marked["status"] == {"kopf": {"progress": {"fn": {"retries": 0}}}}
