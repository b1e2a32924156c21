import copy
from collections.abc import Sequence
from typing import Any

import hypothesis
import hypothesis.strategies as st
import pytest

from kopf._cogs.structs.dicts import ensure
from kopf._cogs.structs.diffs import Diff, DiffItem, DiffOperation, diff, reduce


def test_operations_are_strings() -> None:
    assert DiffOperation.ADD == "add"
    assert DiffOperation.CHANGE == "change"
    assert DiffOperation.REMOVE == "remove"
    assert isinstance(DiffOperation.ADD, str)
    assert str(DiffOperation.ADD) == "add"
    assert repr(DiffOperation.ADD) == "'add'"


def test_diff_item_fields_and_op_alias() -> None:
    item = DiffItem(DiffOperation.ADD, ("spec", "x"), None, 1)
    assert item.operation is DiffOperation.ADD
    assert item.op is DiffOperation.ADD
    assert item.field == ("spec", "x")
    assert item.old is None
    assert item.new == 1
    op, field, old, new = item
    assert (op, field, old, new) == ("add", ("spec", "x"), None, 1)
    assert repr(item) == "('add', ('spec', 'x'), None, 1)"


def test_diff_is_a_sequence_equal_to_tuples_and_lists() -> None:
    d = Diff([DiffItem(DiffOperation.ADD, ("x",), None, 1)])
    assert isinstance(d, Sequence)
    assert len(d) == 1
    assert d[0] == ("add", ("x",), None, 1)
    assert d == (("add", ("x",), None, 1),)
    assert d == [("add", ("x",), None, 1)]
    assert d == [["add", ("x",), None, 1]]
    assert d == Diff([("add", ("x",), None, 1)])  # type: ignore[list-item]
    assert d != (("remove", ("x",), 1, None),)
    assert d != ()
    assert d != "add"
    assert repr(d) == "(('add', ('x',), None, 1),)"
    assert list(d[0:1]) == [("add", ("x",), None, 1)]


def test_diff_from_plain_tuples_converts_operations() -> None:
    d = Diff([("change", ["a"], 1, 2)])  # type: ignore[list-item]
    assert d[0].operation is DiffOperation.CHANGE
    assert d[0].field == ("a",)


def test_diff_is_unhashable() -> None:
    with pytest.raises(TypeError):
        hash(Diff([]))


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (None, None),
        (1, 1),
        ("x", "x"),
        ({}, {}),
        ({"a": 1}, {"a": 1}),
        ([1, 2], [1, 2]),
        ({"a": None}, {}),  # None is absence.
    ],
)
def test_no_changes(a: Any, b: Any) -> None:
    assert diff(a, b) == ()


def test_root_level_scalars() -> None:
    assert diff(None, 1) == (("add", (), None, 1),)
    assert diff(1, None) == (("remove", (), 1, None),)
    assert diff(1, 2) == (("change", (), 1, 2),)
    assert diff("x", {"a": 1}) == (("change", (), "x", {"a": 1}),)


def test_documented_example() -> None:
    old = {"metadata": {"labels": {"label2": "old-value", "label3": "old-value"}}, "spec": {"size": "1G"}}
    new = {"metadata": {"labels": {"label1": "new-value", "label2": "new-value"}}, "spec": {"size": "2G"}}
    d = diff(old, new)
    assert set(d) == {
        ("add", ("metadata", "labels", "label1"), None, "new-value"),
        ("change", ("metadata", "labels", "label2"), "old-value", "new-value"),
        ("remove", ("metadata", "labels", "label3"), "old-value", None),
        ("change", ("spec", "size"), "1G", "2G"),
    }
    labels_diff = reduce(d, "metadata.labels")
    assert set(labels_diff) == {
        ("add", ("label1",), None, "new-value"),
        ("change", ("label2",), "old-value", "new-value"),
        ("remove", ("label3",), "old-value", None),
    }
    assert {field[0]: new for op, field, old, new in labels_diff} == {
        "label1": "new-value",
        "label2": "new-value",
        "label3": None,
    }


def test_nested_dicts_are_descended_lists_are_not() -> None:
    d = diff({"spec": {"items": [1, 2], "sub": {"x": 1}}}, {"spec": {"items": [1, 3], "sub": {"x": 1, "y": 2}}})
    assert d == (
        ("change", ("spec", "items"), [1, 2], [1, 3]),
        ("add", ("spec", "sub", "y"), None, 2),
    )


def test_whole_stanzas_added_and_removed() -> None:
    assert diff({}, {"spec": {"a": 1}}) == (("add", ("spec",), None, {"a": 1}),)
    assert diff({"spec": {"a": 1}}, {}) == (("remove", ("spec",), {"a": 1}, None),)
    assert diff({"spec": {"a": 1}}, {"spec": None}) == (("remove", ("spec",), {"a": 1}, None),)


def test_custom_path_prefix() -> None:
    assert diff(1, 2, ("spec", "x")) == (("change", ("spec", "x"), 1, 2),)


def test_reduce_descendants_and_unrelated() -> None:
    d = diff({"spec": {"a": {"b": 1}, "c": 1}}, {"spec": {"a": {"b": 2}, "c": 2}})
    assert reduce(d, "spec.a") == (("change", ("b",), 1, 2),)
    assert reduce(d, ("spec", "a", "b")) == (("change", (), 1, 2),)
    assert reduce(d, "spec.zzz") == ()
    assert reduce(d, None) == d


def test_reduce_expands_ancestors() -> None:
    added = diff({}, {"spec": {"field": {"x": 1}}})
    assert reduce(added, "spec.field") == (("add", (), None, {"x": 1}),)
    assert reduce(added, "spec.field.x") == (("add", (), None, 1),)
    assert reduce(added, "spec.other") == ()

    removed = diff({"spec": {"field": "v"}}, {})
    assert reduce(removed, "spec.field") == (("remove", (), "v", None),)

    changed = diff({"spec": "scalar"}, {"spec": {"field": {"x": 1}}})
    assert reduce(changed, "spec.field") == (("add", (), None, {"x": 1}),)


_scalars = st.one_of(st.integers(), st.text(max_size=3), st.booleans())
_values = st.recursive(
    _scalars | st.lists(_scalars, max_size=2),
    lambda children: st.dictionaries(st.sampled_from("abc"), children, max_size=3),
    max_leaves=8,
)
_objects = st.dictionaries(st.sampled_from("abcd"), _values, max_size=4)


@hypothesis.given(old=_objects, new=_objects)
def test_a_diff_as_a_merge_patch_turns_old_into_new(old: dict[str, Any], new: dict[str, Any]) -> None:
    patch: dict[str, Any] = {}
    for _, field, _, value in diff(old, new):
        assert field, "the root of two dicts is never changed as a whole"
        ensure(patch, field, value)
    assert _merge(copy.deepcopy(old), patch) == new
    assert (diff(old, new) == ()) == (old == new)


@hypothesis.given(old=_objects, new=_objects, key=st.sampled_from("abcd"))
def test_reducing_equals_diffing_the_sub_fields(old: dict[str, Any], new: dict[str, Any], key: str) -> None:
    assert reduce(diff(old, new), key) == diff(old.get(key), new.get(key))


def _merge(target: Any, patch: Any) -> Any:
    """A reference implementation of RFC 7386, for comparison."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = _merge(result.get(key), value)
    return result
