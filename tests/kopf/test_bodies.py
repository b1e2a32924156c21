import copy
import gc
import weakref
from collections.abc import Mapping

import pytest

from kopf._cogs.structs.bodies import (
    Annotations,
    Body,
    Labels,
    Meta,
    Spec,
    Status,
    build_object_reference,
    build_owner_reference,
)
from kopf._cogs.structs.dicts import MappingView, ReplaceableMappingView

OBJ = {
    "apiVersion": "kopf.dev/v1",
    "kind": "KopfExample",
    "metadata": {
        "name": "kex1",
        "namespace": "ns1",
        "uid": "uid1",
        "labels": {"l1": "v1"},
        "annotations": {"a1": "v1"},
        "creationTimestamp": "2020-01-01T00:00:00Z",
        "deletionTimestamp": "2020-01-02T00:00:00Z",
    },
    "spec": {"field": "value", "items": [1, 2]},
    "status": {"create_fn": {"done": True}},
}


def test_body_is_a_readonly_mapping_view() -> None:
    body = Body(copy.deepcopy(OBJ))
    assert isinstance(body, Mapping)
    assert isinstance(body, ReplaceableMappingView)
    assert dict(body) == OBJ
    assert body["kind"] == "KopfExample"
    assert len(body) == 5
    assert set(body) == set(OBJ)
    assert not hasattr(body, "__setitem__")
    assert repr(body) == repr(OBJ)


def test_stanza_views_types_and_contents() -> None:
    body = Body(copy.deepcopy(OBJ))
    assert isinstance(body.metadata, Meta)
    assert body.meta is body.metadata
    assert isinstance(body.spec, Spec)
    assert isinstance(body.status, Status)
    assert isinstance(body.meta.labels, Labels)
    assert isinstance(body.meta.annotations, Annotations)
    assert isinstance(body.spec, MappingView)
    assert body.spec == {"field": "value", "items": [1, 2]}
    assert body.status == {"create_fn": {"done": True}}
    assert body.meta.labels == {"l1": "v1"}
    assert body.meta.annotations == {"a1": "v1"}


def test_meta_shortcuts() -> None:
    meta = Body(copy.deepcopy(OBJ)).meta
    assert meta.name == "kex1"
    assert meta.namespace == "ns1"
    assert meta.uid == "uid1"
    assert meta.creation_timestamp == "2020-01-01T00:00:00Z"
    assert meta.deletion_timestamp == "2020-01-02T00:00:00Z"


def test_absent_stanzas_are_empty_and_shortcuts_are_none() -> None:
    body = Body({})
    assert body.spec == {}
    assert body.status == {}
    assert body.meta == {}
    assert body.meta.labels == {}
    assert body.meta.annotations == {}
    assert body.meta.name is None
    assert body.meta.namespace is None
    assert body.meta.uid is None
    assert body.meta.creation_timestamp is None
    assert body.meta.deletion_timestamp is None
    assert body.spec.get("field") is None
    with pytest.raises(KeyError):
        body.spec["field"]


def test_null_stanzas_are_empty() -> None:
    body = Body({"spec": None, "metadata": {"labels": None}})
    assert body.spec == {}
    assert body.meta.labels == {}


def test_views_are_live_on_changes_of_the_source() -> None:
    raw = copy.deepcopy(OBJ)
    body = Body(raw)
    spec = body.spec
    labels = body.meta.labels
    raw["spec"]["field"] = "new"
    raw["metadata"]["labels"]["l2"] = "v2"
    assert spec["field"] == "new"
    assert labels == {"l1": "v1", "l2": "v2"}


def test_views_are_live_on_replacement_of_the_whole_body() -> None:
    body = Body(copy.deepcopy(OBJ))
    spec, status, meta, labels = body.spec, body.status, body.meta, body.meta.labels
    body._replace_with({"spec": {"other": 1}, "metadata": {"name": "renamed", "labels": {"x": "y"}}})
    assert spec == {"other": 1}
    assert status == {}
    assert meta.name == "renamed"
    assert labels == {"x": "y"}

    other = Body({"spec": {"third": 3}})
    body._replace_from(other)
    assert spec == {"third": 3}


def test_views_kept_without_their_body_stay_live() -> None:
    body = Body(copy.deepcopy(OBJ))
    spec, labels, annotations = body.spec, body.meta.labels, body.meta.annotations
    body._replace_with({"spec": {"other": 1}, "metadata": {"labels": {"x": "y"}}})
    del body
    assert spec == {"other": 1}
    assert labels == {"x": "y"}
    assert annotations == {}


def test_a_body_is_freed_without_the_garbage_collector() -> None:
    # A body is made per event: with a reference cycle (e.g. its views referring back to it), thousands
    # of them would wait for the garbage collector's rare full runs, holding their objects' JSON.
    body = Body(copy.deepcopy(OBJ))
    _ = body.meta.labels, body.meta.annotations, body.spec, body.status, body.meta.name
    gone = weakref.ref(body)
    gc.disable()
    try:
        del body, _
        assert gone() is None
    finally:
        gc.enable()


def test_build_object_reference() -> None:
    ref = build_object_reference(Body(copy.deepcopy(OBJ)))
    assert ref == {
        "apiVersion": "kopf.dev/v1",
        "kind": "KopfExample",
        "name": "kex1",
        "uid": "uid1",
        "namespace": "ns1",
    }


def test_build_object_reference_omits_absent_fields() -> None:
    ref = build_object_reference(Body({"kind": "Node", "metadata": {"name": "n1", "uid": "u"}}))
    assert ref == {"kind": "Node", "name": "n1", "uid": "u"}


def test_build_object_reference_accepts_raw_dicts() -> None:
    ref = build_object_reference({"kind": "Node", "metadata": {"name": "n1"}})
    assert ref == {"kind": "Node", "name": "n1"}


def test_build_owner_reference_defaults() -> None:
    ref = build_owner_reference(Body(copy.deepcopy(OBJ)))
    assert ref == {
        "controller": True,
        "blockOwnerDeletion": True,
        "apiVersion": "kopf.dev/v1",
        "kind": "KopfExample",
        "name": "kex1",
        "uid": "uid1",
    }
    assert list(ref) == ["controller", "blockOwnerDeletion", "apiVersion", "kind", "name", "uid"]
    assert "namespace" not in ref


@pytest.mark.parametrize(("controller", "block"), [(False, False), (True, False), (False, True)])
def test_build_owner_reference_flags(controller: bool, block: bool) -> None:
    ref = build_owner_reference(Body(copy.deepcopy(OBJ)), controller=controller, block_owner_deletion=block)
    assert ref["controller"] is controller
    assert ref["blockOwnerDeletion"] is block


def test_build_owner_reference_omits_none_flags() -> None:
    ref = build_owner_reference(Body(copy.deepcopy(OBJ)), controller=None, block_owner_deletion=None)
    assert "controller" not in ref
    assert "blockOwnerDeletion" not in ref
