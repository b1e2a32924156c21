"""The progress stored in the status."""

from kopf._cogs.configs.progress import (
    StatusProgressStorage,
)
from kopf._cogs.structs.bodies import Body, BodyEssence
from kopf._cogs.structs.ids import HandlerId
from kopf._cogs.structs.patches import Patch

from .helpers import COMPACT, KEY, RECORD, applied


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
    body = applied({}, patch)
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
