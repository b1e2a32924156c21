from typing import Any

import pytest

from kopf._cogs.structs.dicts import (
    MappingView,
    MutableMappingView,
    cherrypick,
    deepcopy_json,
    ensure,
    parse_field,
    remove,
    render_field,
    resolve,
    unwrap,
    walk,
)


@pytest.mark.parametrize(
    ("field", "expected"),
    [
        (None, ()),
        ("", ()),
        ("spec", ("spec",)),
        ("spec.field", ("spec", "field")),
        (("spec", "field"), ("spec", "field")),
        (["spec", "field"], ("spec", "field")),
        ((), ()),
    ],
)
def test_parse_field(field: Any, expected: tuple[str, ...]) -> None:
    assert parse_field(field) == expected


@pytest.mark.parametrize("field", [123, object(), ("a", 1)])
def test_parse_field_rejects_wrong_types(field: Any) -> None:
    with pytest.raises(ValueError):
        parse_field(field)


def test_render_field() -> None:
    assert render_field(("spec", "field")) == "spec.field"
    assert render_field("spec.field") == "spec.field"


def test_resolve_existing_and_root() -> None:
    d = {"spec": {"field": "v", "none": None}}
    assert resolve(d, "spec.field") == "v"
    assert resolve(d, ("spec", "field")) == "v"
    assert resolve(d, None) is d
    assert resolve(d, "spec.none") is None


def test_resolve_missing_with_and_without_default() -> None:
    d = {"spec": {"field": "v"}}
    assert resolve(d, "spec.absent", "dflt") == "dflt"
    assert resolve(d, "absent.deeper", None) is None
    assert resolve(d, "spec.field.deeper", "dflt") == "dflt"
    with pytest.raises(KeyError):
        resolve(d, "spec.absent")
    with pytest.raises(TypeError):
        resolve(d, "spec.field.deeper")


def test_resolve_assume_empty() -> None:
    d = {"spec": None}
    assert resolve(d, "spec", assume_empty=True) == {}
    assert resolve(d, "status.x", assume_empty=True) == {}


def test_ensure_creates_parents_and_overwrites() -> None:
    d: dict[str, Any] = {"spec": {"keep": 1}, "status": None}
    ensure(d, "spec.deep.field", "v")
    ensure(d, "status.x", 1)
    ensure(d, "spec.keep", 2)
    assert d == {"spec": {"keep": 2, "deep": {"field": "v"}}, "status": {"x": 1}}


def test_ensure_fails_on_scalars_and_root() -> None:
    with pytest.raises(TypeError):
        ensure({"spec": "scalar"}, "spec.field", 1)
    with pytest.raises(ValueError):
        ensure({}, None, 1)


def test_remove_existing_missing_and_pruning() -> None:
    d: dict[str, Any] = {"a": {"b": {"c": 1}}, "x": {"y": 1, "z": 2}}
    remove(d, "a.b.absent")
    remove(d, "absent.deep")
    assert d == {"a": {"b": {"c": 1}}, "x": {"y": 1, "z": 2}}
    remove(d, "x.y", prune=True)
    assert d == {"a": {"b": {"c": 1}}, "x": {"z": 2}}
    remove(d, "a.b.c")
    assert d == {"a": {"b": {}}, "x": {"z": 2}}
    d["a"]["b"]["c"] = 1
    remove(d, "a.b.c", prune=True)
    assert d == {"x": {"z": 2}}


def test_cherrypick_copies_existing_fields_deeply() -> None:
    src = {"status": {"a": {"deep": 1}, "b": 2}}
    dst: dict[str, Any] = {"spec": {}}
    cherrypick(src, dst, ["status.a", "status.absent", "nothing.here"])
    assert dst == {"spec": {}, "status": {"a": {"deep": 1}}}
    assert dst["status"]["a"] is not src["status"]["a"]
    cherrypick(src, dst, None)


def test_deepcopy_json_copies_dicts_and_lists_and_keeps_scalars() -> None:
    src: dict[str, Any] = {"a": {"b": [1, 2.5, {"c": None}], "d": True}, "e": "text"}
    copied = deepcopy_json(src)
    assert copied == src
    assert copied is not src and copied["a"] is not src["a"]
    assert copied["a"]["b"] is not src["a"]["b"] and copied["a"]["b"][2] is not src["a"]["b"][2]
    copied["a"]["b"][2]["c"] = "changed"
    assert src["a"]["b"][2]["c"] is None


def test_deepcopy_json_copies_other_values_as_deepcopy_does() -> None:
    class Custom:
        def __init__(self) -> None:
            self.items = [1]

    original = Custom()
    copied = deepcopy_json({"x": original, "t": (1, [2])})
    assert isinstance(copied["x"], Custom) and copied["x"] is not original
    assert copied["x"].items == [1] and copied["x"].items is not original.items
    assert copied["t"] == (1, [2])


def test_unwrap_gives_a_views_current_content_and_anything_else_as_is() -> None:
    raw: dict[str, Any] = {"spec": {"a": {"b": 1}}}
    view: MappingView[str, Any] = MappingView(MappingView(raw), "spec")
    assert unwrap(view) is raw["spec"]
    assert unwrap(raw) is raw and unwrap(None) is None and unwrap([1]) == [1]
    assert unwrap(MappingView(raw, "absent")) == {}
    assert resolve(view, "a.b") == 1 and resolve(view, "a.x", None) is None
    assert resolve(view, ()) is view
    with pytest.raises(KeyError):
        resolve(view, "x")


def test_walk_single_many_and_nested() -> None:
    job = {"kind": "Job"}
    dep = {"kind": "Deployment", "spec": {"template": {}}}
    assert list(walk(job)) == [job]
    assert list(walk([job, dep])) == [job, dep]
    assert list(walk([job, dep], nested="spec.template")) == [job, dep, {}]
    assert list(walk(dep, nested=["spec.template", "spec.absent"])) == [dep, {}]


def test_mapping_view_follows_the_path_lazily() -> None:
    src: dict[str, Any] = {}
    view: MappingView[str, Any] = MappingView(src, "spec.sub")
    assert view == {}
    assert len(view) == 0
    src["spec"] = {"sub": {"a": 1}}
    assert view == {"a": 1}
    assert list(view) == ["a"]
    assert repr(view) == "{'a': 1}"
    src["spec"] = "not-a-dict"
    assert view == {}


def test_mutable_mapping_view_writes_on_demand() -> None:
    src: dict[str, Any] = {}
    view: MutableMappingView[str, Any] = MutableMappingView(src, "metadata.labels")
    assert view == {}
    assert src == {}  # reading does not create anything.
    view["a"] = "b"
    assert src == {"metadata": {"labels": {"a": "b"}}}
    del view["a"]
    assert src == {"metadata": {"labels": {}}}
    with pytest.raises(KeyError):
        del view["absent"]
    with pytest.raises(KeyError):
        del MutableMappingView({}, "x")["y"]
