import json
from typing import Any

import pytest

from kopf._cogs.configs.conventions import make_safe_name
from kopf._cogs.configs.progress import (
    AnnotationsProgressStorage,
    MultiProgressStorage,
    ProgressRecord,
    ProgressStorage,
    SmartProgressStorage,
    StatusProgressStorage,
)
from kopf._cogs.structs.bodies import Body, BodyEssence
from kopf._cogs.structs.ids import HandlerId
from kopf._cogs.structs.patches import Patch

KEY = HandlerId("create_fn")
RECORD = ProgressRecord(
    started="2020-01-01T00:00:00",
    stopped=None,
    delayed=None,
    purpose="create",
    retries=1,
    success=False,
    failure=False,
    message=None,
    subrefs=None,
)
COMPACT = {"started": "2020-01-01T00:00:00", "purpose": "create", "retries": 1, "success": False, "failure": False}


def _apply(body: dict[str, Any], patch: Patch) -> Body:
    """Apply a merge-patch as the API would (simplified RFC 7386)."""

    def merge(target: Any, patch: Any) -> Any:
        if not isinstance(patch, dict):
            return patch
        result = dict(target) if isinstance(target, dict) else {}
        for key, value in patch.items():
            if value is None:
                result.pop(key, None)
            else:
                result[key] = merge(result.get(key), value)
        return result

    return Body(merge(body, dict(patch)))


def test_base_class_is_abstract() -> None:
    with pytest.raises(TypeError):
        ProgressStorage()  # type: ignore[abstract]


class OnlyTheDocumentedMethods(ProgressStorage):
    """A custom storage as documented: fetch(), store(), purge(); here, in memory."""

    def __init__(self) -> None:
        super().__init__()
        self.records: dict[tuple[str, HandlerId], ProgressRecord] = {}

    def fetch(self, *, key: HandlerId, body: Body) -> ProgressRecord | None:
        return self.records.get((body.metadata.uid or "", key))

    def store(self, *, key: HandlerId, record: ProgressRecord, body: Body, patch: Patch) -> None:
        self.records[(body.metadata.uid or "", key)] = record

    def purge(self, *, key: HandlerId, body: Body, patch: Patch) -> None:
        self.records.pop((body.metadata.uid or "", key), None)


def test_custom_storage_needs_only_the_documented_methods() -> None:
    storage = OnlyTheDocumentedMethods()
    storage.flush()
    assert ProgressStorage.__abstractmethods__ == {"fetch", "store", "purge"}


def test_custom_storage_touches_the_object_with_a_dummy_annotation() -> None:
    storage = OnlyTheDocumentedMethods()
    body = Body({"metadata": {"annotations": {"other": "x"}}})
    patch = Patch()
    storage.touch(body=body, patch=patch, value="1")
    assert patch == {"metadata": {"annotations": {"kopf.zalando.org/touch-dummy": "1"}}}

    touched = _apply(dict(body), patch)
    patch = Patch()
    storage.touch(body=touched, patch=patch, value="1")  # the same value: no change
    assert not patch
    storage.touch(body=touched, patch=patch, value=None)
    assert patch == {"metadata": {"annotations": {"kopf.zalando.org/touch-dummy": None}}}


def test_custom_storage_clears_its_dummy_annotation_from_the_essence() -> None:
    storage = OnlyTheDocumentedMethods()
    essence = BodyEssence({"spec": {"a": 1}, "metadata": {"annotations": {"kopf.zalando.org/touch-dummy": "1"}}})
    assert storage.clear(essence=essence) == {"spec": {"a": 1}}
    assert essence["metadata"]["annotations"] == {"kopf.zalando.org/touch-dummy": "1"}  # a copy is changed


def test_custom_storage_may_still_override_touch_and_clear() -> None:
    class Custom(OnlyTheDocumentedMethods):
        def touch(self, *, body: Body, patch: Patch, value: str | None) -> None:
            patch.status["dummy"] = value

        def clear(self, *, essence: BodyEssence) -> BodyEssence:
            return essence

    patch = Patch()
    Custom().touch(body=Body({}), patch=patch, value="x")
    assert patch == {"status": {"dummy": "x"}}


#
# Key naming.
#


def test_annotation_defaults() -> None:
    storage = AnnotationsProgressStorage()
    assert storage.prefix == "kopf.zalando.org"
    assert storage.verbose is False
    assert storage.touch_key == "touch-dummy"
    assert storage.v1 is True


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("create_fn", "kopf.zalando.org/create_fn"),
        ("create_fn/item1", "kopf.zalando.org/create_fn.item1"),
        ("fn/spec.field", "kopf.zalando.org/fn.spec.field"),
    ],
)
def test_short_keys(key: str, expected: str) -> None:
    assert AnnotationsProgressStorage().make_keys(key) == [expected]
    assert AnnotationsProgressStorage(v1=False).make_keys(key) == [expected]


def test_keys_without_prefix() -> None:
    assert AnnotationsProgressStorage(prefix="").make_keys("fn/sub") == ["fn.sub"]


def test_keys_follow_the_prefix_and_v1_changed_later_and_are_fresh_lists() -> None:
    storage = AnnotationsProgressStorage()
    keys = storage.make_keys("fn")
    keys.append("mutated by the caller")
    assert storage.make_keys("fn") == ["kopf.zalando.org/fn"]
    storage.prefix = "example.com"
    assert storage.make_keys("fn") == ["example.com/fn"]
    storage.v1 = False
    long_key = "very-long-handler-name-" * 5
    assert len(storage.make_keys(long_key)) == 1


def test_long_keys_are_hashed_consistently_and_validly() -> None:
    key = "very-long-handler-name-" * 5
    v2, v1 = AnnotationsProgressStorage().make_keys(key)
    prefix, v2name = v2.split("/")
    assert prefix == "kopf.zalando.org"
    assert len(v2name) == 63
    assert len(v1) == 63  # the legacy format limits the whole key, prefix included.
    assert v1.startswith("kopf.zalando.org/very-long-handler-name-")
    assert v2name[:40] == key[:40]
    assert v2name[-7:] == v1[-7:]  # the same hash of the same id (it has no '/').
    assert AnnotationsProgressStorage().make_keys(key) == [v2, v1]
    assert AnnotationsProgressStorage(v1=False).make_keys(key) == [v2]
    other_v2 = AnnotationsProgressStorage().make_keys(key + "x")[0]
    assert other_v2 != v2


def test_medium_keys_differ_only_in_v1() -> None:
    key = "x" * 50  # fits into 63 chars of the name, but not with the prefix.
    v2, v1 = AnnotationsProgressStorage().make_keys(key)
    assert v2 == f"kopf.zalando.org/{key}"
    assert len(v1) == 63


@pytest.mark.parametrize("key", ["lambda:/path/to/file.py:12", "_private", "trailing_", "a b"])
def test_invalid_characters_are_sanitised_with_a_hash(key: str) -> None:
    name = make_safe_name(key)
    assert name[0].isalnum()
    assert name[-1].isalnum()
    assert all(c.isalnum() or c in "-_." for c in name)
    assert name != make_safe_name(key + "!")


def test_tiny_limits_leave_only_the_hash() -> None:
    assert len(make_safe_name("x" * 100, limit=5)) == 6


@pytest.mark.parametrize(
    ("key", "v2", "v1"),
    [  # as the published framework 1.45 writes them (measured)
        ("x" * 57, "x" * 57, "x" * 39 + "-PYZeGQ"),
        ("x" * 64, "x" * 56 + "-SItAqA", "x" * 39 + "-SItAqA"),
        ("a/" + "x" * 62, "a." + "x" * 54 + "-.7Lmyw", "a." + "x" * 37 + "-rXiUGg"),
        (
            "handler/with.long." + "y" * 70,
            "handler.with.long." + "y" * 38 + "-DrVPGg",
            "handler.with.long." + "y" * 21 + "-oFBxWw",
        ),
    ],
)
def test_long_keys_as_the_published_framework_writes_them(key: str, v2: str, v1: str) -> None:
    assert AnnotationsProgressStorage().make_keys(key) == [f"kopf.zalando.org/{v2}", f"kopf.zalando.org/{v1}"]


#
# Annotations storage.
#


def test_annotations_fetch_absent() -> None:
    assert AnnotationsProgressStorage().fetch(key=KEY, body=Body({})) is None


def test_annotations_store_compact_and_fetch_back() -> None:
    storage = AnnotationsProgressStorage()
    patch = Patch()
    storage.store(key=KEY, record=RECORD, body=Body({}), patch=patch)
    encoded = patch["metadata"]["annotations"]["kopf.zalando.org/create_fn"]
    assert json.loads(encoded) == COMPACT
    body = _apply({}, patch)
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


#
# Status storage.
#


def test_status_defaults() -> None:
    storage = StatusProgressStorage()
    assert storage.field == ("status", "kopf", "progress")
    assert storage.touch_field == ("status", "kopf", "dummy")


def test_status_custom_fields() -> None:
    storage = StatusProgressStorage(name="my-op", field="status.{name}.state", touch_field=["status", "poke"])
    assert storage.field == ("status", "my-op", "state")
    assert storage.touch_field == ("status", "poke")
    storage.field = "status.my-operator"
    storage.touch_field = "status.{name}.t"
    assert storage.field == ("status", "my-operator")
    assert storage.touch_field == ("status", "my-op", "t")


def test_status_store_and_fetch() -> None:
    storage = StatusProgressStorage()
    patch = Patch()
    storage.store(key=HandlerId("fn/sub"), record=RECORD, body=Body({}), patch=patch)
    assert patch == {"status": {"kopf": {"progress": {"fn/sub": dict(RECORD)}}}}
    body = _apply({}, patch)
    assert storage.fetch(key=HandlerId("fn/sub"), body=body) == COMPACT
    assert storage.fetch(key=KEY, body=body) is None


def test_status_legacy_field() -> None:
    storage = StatusProgressStorage(field="status.kopf.progress")
    body = Body({"status": {"kopf": {"progress": {"create_fn": {"retries": 2}}}}})
    assert storage.fetch(key=KEY, body=body) == {"retries": 2}


def test_status_purge() -> None:
    storage = StatusProgressStorage()
    body = Body({"status": {"kopf": {"progress": {"create_fn": {"retries": 2}}}}})
    patch = Patch()
    storage.purge(key=KEY, body=body, patch=patch)
    assert patch == {"status": {"kopf": {"progress": {"create_fn": None}}}}

    patch = Patch()
    storage.store(key=KEY, record=RECORD, body=Body({}), patch=patch)
    storage.purge(key=KEY, body=Body({}), patch=patch)
    assert patch == {}


def test_status_touch() -> None:
    storage = StatusProgressStorage()
    patch = Patch()
    storage.touch(body=Body({}), patch=patch, value="x")
    assert patch == {"status": {"kopf": {"dummy": "x"}}}
    patch = Patch()
    storage.touch(body=Body({"status": {"kopf": {"dummy": "x"}}}), patch=patch, value="x")
    assert patch == {}
    storage.touch(body=Body({"status": {"kopf": {"dummy": "x"}}}), patch=patch, value=None)
    assert patch == {"status": {"kopf": {"dummy": None}}}


def test_status_clear() -> None:
    essence = BodyEssence(status={"kopf": {"progress": {"a": {}}, "dummy": "x"}, "other": 1})
    assert StatusProgressStorage().clear(essence=essence) == {"status": {"other": 1}}


#
# Multi-storages & the smart storage.
#


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
