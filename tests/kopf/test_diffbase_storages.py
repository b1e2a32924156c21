import json
from typing import Any

import pytest

from kopf._cogs.configs.diffbase import (
    AnnotationsDiffBaseStorage,
    DiffBaseStorage,
    MultiDiffBaseStorage,
    StatusDiffBaseStorage,
)
from kopf._cogs.structs.bodies import Body, BodyEssence
from kopf._cogs.structs.patches import Patch

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
DIFFBASE = "kopf.zalando.org/last-handled-configuration"

OBJ: dict[str, Any] = {
    "apiVersion": "kopf.dev/v1",
    "kind": "KopfExample",
    "metadata": {
        "name": "kex1",
        "namespace": "ns1",
        "uid": "uid1",
        "resourceVersion": "123",
        "generation": 5,
        "creationTimestamp": "2020",
        "finalizers": ["x"],
        "managedFields": [{}],
        "selfLink": "/x",
        "labels": {"l1": "v1"},
        "annotations": {"a1": "v1", LAST_APPLIED: "{}", DIFFBASE: '{"spec":{}}'},
    },
    "spec": {"field": "value", "items": [1, 2]},
    "data": {"extra": "top-level stanzas are kept"},
    "status": {"create_fn": {"done": True}, "watched": {"x": 1}},
}

ESSENCE = {
    "metadata": {"labels": {"l1": "v1"}, "annotations": {"a1": "v1"}},
    "spec": {"field": "value", "items": [1, 2]},
    "data": {"extra": "top-level stanzas are kept"},
}


def test_base_class_is_abstract() -> None:
    with pytest.raises(TypeError):
        DiffBaseStorage()  # type: ignore[abstract]


@pytest.mark.parametrize(
    "storage",
    [
        AnnotationsDiffBaseStorage(),
        StatusDiffBaseStorage(),
        MultiDiffBaseStorage([AnnotationsDiffBaseStorage(), StatusDiffBaseStorage()]),
    ],
    ids=["annotations", "status", "multi"],
)
def test_essence_keeps_only_meaningful_fields(storage: DiffBaseStorage) -> None:
    assert storage.build(body=Body(OBJ)) == ESSENCE


def test_essence_is_a_deep_copy() -> None:
    essence = AnnotationsDiffBaseStorage().build(body=Body(OBJ))
    essence["spec"]["items"].append(3)  # type: ignore[attr-defined]
    assert OBJ["spec"]["items"] == [1, 2]


def test_essence_of_an_empty_object_is_empty() -> None:
    assert AnnotationsDiffBaseStorage().build(body=Body({"apiVersion": "v1", "kind": "Pod"})) == {}
    body = Body({"metadata": {"labels": {}, "annotations": {DIFFBASE: "{}"}}, "status": {}})
    assert AnnotationsDiffBaseStorage().build(body=body) == {}


def test_essence_with_extra_fields() -> None:
    essence = AnnotationsDiffBaseStorage().build(body=Body(OBJ), extra_fields=["status.watched", "status.absent"])
    assert essence == {**ESSENCE, "status": {"watched": {"x": 1}}}


def test_custom_annotations_storages_keep_the_default_annotation_out() -> None:
    storage = AnnotationsDiffBaseStorage(prefix="my-op.example.com")
    assert storage.build(body=Body(OBJ)) == ESSENCE


def test_status_storage_removes_its_own_field_even_if_extra() -> None:
    body = Body({"spec": {}, "status": {"kopf": {"last-handled-configuration": "{}"}, "x": 1}})
    essence = StatusDiffBaseStorage().build(body=body, extra_fields=["status"])
    assert essence == {"spec": {}, "status": {"x": 1}}


def test_annotations_storage_defaults_and_keys() -> None:
    storage = AnnotationsDiffBaseStorage()
    assert storage.prefix == "kopf.zalando.org"
    assert storage.key == "last-handled-configuration"
    assert storage.v1 is True
    assert storage.make_keys(storage.key) == [DIFFBASE]


def test_annotations_store_and_fetch() -> None:
    storage = AnnotationsDiffBaseStorage()
    patch = Patch()
    storage.store(body=Body({}), patch=patch, essence=BodyEssence(ESSENCE))  # type: ignore[typeddict-item]
    encoded = patch["metadata"]["annotations"][DIFFBASE]
    assert isinstance(encoded, str)
    assert json.loads(encoded) == ESSENCE
    body = Body({"metadata": {"annotations": {DIFFBASE: encoded}}})
    assert storage.fetch(body=body) == ESSENCE


def test_annotations_fetch_absent_or_broken() -> None:
    storage = AnnotationsDiffBaseStorage()
    assert storage.fetch(body=Body({})) is None
    for value in ["", "not-json", "[1]"]:
        assert storage.fetch(body=Body({"metadata": {"annotations": {DIFFBASE: value}}})) is None


def test_annotations_custom_prefix_and_key() -> None:
    storage = AnnotationsDiffBaseStorage(prefix="my-op.example.com", key="diff-base")
    patch = Patch()
    storage.store(body=Body({}), patch=patch, essence=BodyEssence(spec={}))
    assert patch == {
        "metadata": {
            "annotations": {
                "my-op.example.com/diff-base": '{"spec":{}}\n',
                "my-op.example.com/kopf-managed": "yes",  # as published, for the custom prefixes
            }
        }
    }
    body = Body({"metadata": {"annotations": {"my-op.example.com/diff-base": "{}", "x": "y"}}})
    assert storage.build(body=body) == {"metadata": {"annotations": {"x": "y"}}}


@pytest.mark.parametrize("prefix", ["kopf.zalando.org", None])
def test_annotations_default_prefix_writes_no_marker(prefix: str | None) -> None:
    storage = AnnotationsDiffBaseStorage() if prefix is None else AnnotationsDiffBaseStorage(prefix=prefix)
    patch = Patch()
    storage.store(body=Body({}), patch=patch, essence=BodyEssence(spec={}))
    assert list(patch["metadata"]["annotations"]) == ["kopf.zalando.org/last-handled-configuration"]


def test_annotations_custom_prefix_marker_is_written_if_absent_and_not_in_the_essence() -> None:
    """As published: ``{prefix}/kopf-managed: "yes"`` with every store to an unmarked object; never essential."""
    storage = AnnotationsDiffBaseStorage(prefix="my-op.example.com")
    marked = Body({"metadata": {"annotations": {"my-op.example.com/kopf-managed": "yes", "x": "y"}}})
    patch = Patch()
    storage.store(body=marked, patch=patch, essence=BodyEssence(spec={}))
    assert "my-op.example.com/kopf-managed" not in patch["metadata"]["annotations"]
    assert storage.build(body=marked) == {"metadata": {"annotations": {"x": "y"}}}


def test_status_storage_defaults_and_custom_fields() -> None:
    assert StatusDiffBaseStorage().field == ("status", "kopf", "last-handled-configuration")
    assert StatusDiffBaseStorage(name="op").field == ("status", "op", "last-handled-configuration")
    storage = StatusDiffBaseStorage(field="status.diff-base")
    assert storage.field == ("status", "diff-base")
    storage.field = ["status", "other"]
    assert storage.field == ("status", "other")


def test_status_store_and_fetch() -> None:
    storage = StatusDiffBaseStorage(field="status.diff-base")
    patch = Patch()
    storage.store(body=Body({}), patch=patch, essence=BodyEssence(spec={"a": 1}))
    assert patch == {"status": {"diff-base": '{"spec":{"a":1}}'}}
    assert storage.fetch(body=Body({"status": {"diff-base": '{"spec":{"a":1}}'}})) == {"spec": {"a": 1}}
    assert storage.fetch(body=Body({"status": {"diff-base": {"spec": {"a": 1}}}})) == {"spec": {"a": 1}}
    assert storage.fetch(body=Body({})) is None


def test_multi_storage_for_transitions() -> None:
    new = StatusDiffBaseStorage(field="status.diff-base")
    old = AnnotationsDiffBaseStorage(prefix="kopf.zalando.org", key="last-handled-configuration")
    storage = MultiDiffBaseStorage([new, old])
    assert storage.storages == [new, old]

    patch = Patch()
    storage.store(body=Body({}), patch=patch, essence=BodyEssence(spec={}))
    assert patch == {"status": {"diff-base": '{"spec":{}}'}, "metadata": {"annotations": {DIFFBASE: '{"spec":{}}\n'}}}

    old_only = Body({"metadata": {"annotations": {DIFFBASE: '{"spec":{"v":1}}'}}})
    assert storage.fetch(body=old_only) == {"spec": {"v": 1}}
    both = Body(
        {"metadata": {"annotations": {DIFFBASE: '{"spec":{"v":1}}'}}, "status": {"diff-base": '{"spec":{"v":2}}'}}
    )
    assert storage.fetch(body=both) == {"spec": {"v": 2}}
    assert storage.fetch(body=Body({})) is None


def test_custom_storage_inherits_the_essence_definition() -> None:
    class Memory(DiffBaseStorage):
        def __init__(self) -> None:
            super().__init__()
            self.stored: BodyEssence | None = None

        def fetch(self, *, body: Body) -> BodyEssence | None:
            return self.stored

        def store(self, *, body: Body, patch: Patch, essence: BodyEssence) -> None:
            self.stored = essence

    storage = Memory()
    essence = storage.build(body=Body(OBJ))
    assert essence == ESSENCE
    storage.store(body=Body(OBJ), patch=Patch(), essence=essence)
    assert storage.fetch(body=Body(OBJ)) == essence
