"""The progress stored in the annotations."""

import json

from kopf._cogs.configs.progress import (
    AnnotationsProgressStorage,
    ProgressRecord,
)
from kopf._cogs.structs.bodies import Body, BodyEssence
from kopf._cogs.structs.ids import HandlerId
from kopf._cogs.structs.patches import Patch

from .helpers import (
    COMPACT,
    KEY,
    RECORD,
    applied,
)


def test_annotations_fetch_absent() -> None:
    assert AnnotationsProgressStorage().fetch(key=KEY, body=Body({})) is None


def test_annotations_store_compact_and_fetch_back() -> None:
    storage = AnnotationsProgressStorage()
    patch = Patch()
    storage.store(key=KEY, record=RECORD, body=Body({}), patch=patch)
    encoded = patch["metadata"]["annotations"]["kopf.zalando.org/create_fn"]
    assert json.loads(encoded) == COMPACT
    body = applied({}, patch)
    assert storage.fetch(key=KEY, body=body) == COMPACT


def test_annotations_store_verbose() -> None:
    patch = Patch()
    AnnotationsProgressStorage(verbose=True).store(key=KEY, record=RECORD, body=Body({}), patch=patch)
    assert json.loads(patch["metadata"]["annotations"]["kopf.zalando.org/create_fn"]) == RECORD


def test_annotations_store_subrefs_as_lists() -> None:
    patch = Patch()
    record = ProgressRecord(subrefs=[HandlerId("fn/a")])
    AnnotationsProgressStorage().store(key=KEY, record=record, body=Body({}), patch=patch)
    assert json.loads(patch["metadata"]["annotations"]["kopf.zalando.org/create_fn"]) == {"subrefs": ["fn/a"]}


def test_annotations_long_keys_written_to_both_formats_and_read_from_any() -> None:
    key = HandlerId("h" * 60)
    storage = AnnotationsProgressStorage()
    patch = Patch()
    storage.store(key=key, record=RECORD, body=Body({}), patch=patch)
    assert len(patch["metadata"]["annotations"]) == 2
    _v2, v1 = storage.make_keys(key)
    only_v1 = Body({"metadata": {"annotations": {v1: json.dumps(COMPACT)}}})
    assert storage.fetch(key=key, body=only_v1) == COMPACT
    assert AnnotationsProgressStorage(v1=False).fetch(key=key, body=only_v1) is None


def test_annotations_ignore_broken_and_foreign_values() -> None:
    storage = AnnotationsProgressStorage()
    for value in ["not-json", "[1, 2]", '{"unknown": 1}', ""]:
        body = Body({"metadata": {"annotations": {"kopf.zalando.org/create_fn": value}}})
        assert storage.fetch(key=KEY, body=body) is None


def test_annotations_purge() -> None:
    storage = AnnotationsProgressStorage()
    body = Body({"metadata": {"annotations": {"kopf.zalando.org/create_fn": "{}"}}})
    patch = Patch()
    storage.purge(key=KEY, body=body, patch=patch)
    assert patch == {"metadata": {"annotations": {"kopf.zalando.org/create_fn": None}}}


def test_annotations_purge_of_absent_records_makes_no_patch() -> None:
    patch = Patch()
    AnnotationsProgressStorage().purge(key=KEY, body=Body({}), patch=patch)
    assert patch == {}


def test_annotations_purge_of_pending_records_drops_them_from_the_patch() -> None:
    storage = AnnotationsProgressStorage()
    patch = Patch()
    storage.store(key=KEY, record=RECORD, body=Body({}), patch=patch)
    storage.purge(key=KEY, body=Body({}), patch=patch)
    assert patch == {}


def test_annotations_touch() -> None:
    storage = AnnotationsProgressStorage()
    patch = Patch()
    storage.touch(body=Body({}), patch=patch, value="2020")
    assert patch == {"metadata": {"annotations": {"kopf.zalando.org/touch-dummy": "2020"}}}

    patch = Patch()
    touched = Body({"metadata": {"annotations": {"kopf.zalando.org/touch-dummy": "2020"}}})
    storage.touch(body=touched, patch=patch, value="2020")
    assert patch == {}
    storage.touch(body=touched, patch=patch, value=None)
    assert patch == {"metadata": {"annotations": {"kopf.zalando.org/touch-dummy": None}}}

    patch = Patch()
    storage.touch(body=Body({}), patch=patch, value=None)
    assert patch == {}


def test_annotations_custom_prefix_and_touch_key() -> None:
    storage = AnnotationsProgressStorage(prefix="my-op.example.com", touch_key="poke")
    patch = Patch()
    storage.store(key=KEY, record=RECORD, body=Body({}), patch=patch)
    storage.touch(body=Body({}), patch=patch, value="x")
    assert set(patch["metadata"]["annotations"]) == {
        "my-op.example.com/create_fn",
        "my-op.example.com/poke",
        "my-op.example.com/kopf-managed",  # as published, for the custom prefixes
    }


def test_annotations_custom_prefix_marker_when_written() -> None:
    """
    As the published framework writes ``{prefix}/kopf-managed: "yes"``: with the records stored, purged (even if
    none), and the touches that set the dummy, to the objects without it; not when the dummy is only removed.
    """
    storage = AnnotationsProgressStorage(prefix="my-op.example.com")
    marker = "my-op.example.com/kopf-managed"
    unmarked, marked = Body({}), Body({"metadata": {"annotations": {marker: "yes"}}})
    patches = {name: Patch() for name in ["store", "purge", "touch", "untouch", "marked"]}
    storage.store(key=KEY, record=RECORD, body=unmarked, patch=patches["store"])
    storage.purge(key=KEY, body=unmarked, patch=patches["purge"])
    storage.touch(body=unmarked, patch=patches["touch"], value="x")
    storage.touch(body=unmarked, patch=patches["untouch"], value=None)
    storage.store(key=KEY, record=RECORD, body=marked, patch=patches["marked"])
    storage.purge(key=KEY, body=marked, patch=patches["marked"])
    storage.touch(body=marked, patch=patches["marked"], value="x")
    assert {name: patch.get("metadata", {}).get("annotations", {}).get(marker) for name, patch in patches.items()} == {
        "store": "yes",
        "purge": "yes",
        "touch": "yes",
        "untouch": None,
        "marked": None,
    }
    essence = BodyEssence(metadata={"annotations": {marker: "yes", "x": "y"}}, spec={})
    assert storage.clear(essence=essence) == {"metadata": {"annotations": {"x": "y"}}, "spec": {}}


def test_annotations_default_prefix_writes_no_marker() -> None:
    for storage in [AnnotationsProgressStorage(), AnnotationsProgressStorage(prefix="kopf.zalando.org")]:
        patch = Patch()
        storage.store(key=KEY, record=RECORD, body=Body({}), patch=patch)
        storage.purge(key=KEY, body=Body({}), patch=patch)
        storage.touch(body=Body({}), patch=patch, value="x")
        assert not any(key.endswith("/kopf-managed") for key in patch.get("metadata", {}).get("annotations", {}))


def test_annotations_clear_removes_own_records_and_touches_only() -> None:
    essence = BodyEssence(
        metadata={
            "annotations": {
                "kopf.zalando.org/create_fn": json.dumps(COMPACT),
                "kopf.zalando.org/touch-dummy": "x",
                "kopf.zalando.org/users-own": "not-a-record",
                "other.example.com/create_fn": json.dumps(COMPACT),
            }
        },
        spec={"a": 1},
    )
    cleared = AnnotationsProgressStorage().clear(essence=essence)
    assert cleared == {
        "metadata": {
            "annotations": {
                "kopf.zalando.org/users-own": "not-a-record",
                "other.example.com/create_fn": json.dumps(COMPACT),
            }
        },
        "spec": {"a": 1},
    }
    assert len(essence["metadata"]["annotations"]) == 4  # not modified in place.


def test_annotations_clear_removes_empty_parents() -> None:
    essence = BodyEssence(metadata={"annotations": {"kopf.zalando.org/touch-dummy": "x"}}, spec={})
    assert AnnotationsProgressStorage().clear(essence=essence) == {"spec": {}}
