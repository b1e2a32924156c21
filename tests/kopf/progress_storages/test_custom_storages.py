"""Custom storages: the base class is abstract; fetch/store/purge are all one must write."""

import pytest

from kopf._cogs.configs.progress import (
    ProgressRecord,
    ProgressStorage,
)
from kopf._cogs.structs.bodies import Body, BodyEssence
from kopf._cogs.structs.ids import HandlerId
from kopf._cogs.structs.patches import Patch

from .helpers import applied


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

    touched = applied(dict(body), patch)
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
