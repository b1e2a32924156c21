from collections.abc import Sequence
from typing import Any

import pytest

from kopf._cogs.structs.diffs import Diff, DiffItem, DiffOperation, diff, reduce


def test_operations_are_strings() -> None:
    assert DiffOperation.ADD == 'add'
    assert DiffOperation.CHANGE == 'change'
    assert DiffOperation.REMOVE == 'remove'
    assert isinstance(DiffOperation.ADD, str)
    assert str(DiffOperation.ADD) == 'add'
    assert repr(DiffOperation.ADD) == "'add'"


def test_diff_item_fields_and_op_alias() -> None:
    item = DiffItem(DiffOperation.ADD, ('spec', 'x'), None, 1)
    assert item.operation is DiffOperation.ADD
    assert item.op is DiffOperation.ADD
    assert item.field == ('spec', 'x')
    assert item.old is None
    assert item.new == 1
    op, field, old, new = item
    assert (op, field, old, new) == ('add', ('spec', 'x'), None, 1)
    assert repr(item) == "('add', ('spec', 'x'), None, 1)"


def test_diff_is_a_sequence_equal_to_tuples_and_lists() -> None:
    d = Diff([DiffItem(DiffOperation.ADD, ('x',), None, 1)])
    assert isinstance(d, Sequence)
    assert len(d) == 1
    assert d[0] == ('add', ('x',), None, 1)
    assert d == (('add', ('x',), None, 1),)
    assert d == [('add', ('x',), None, 1)]
    assert d == [['add', ('x',), None, 1]]
    assert d == Diff([('add', ('x',), None, 1)])  # type: ignore[list-item]
    assert d != (('remove', ('x',), 1, None),)
    assert d != ()
    assert d != 'add'
    assert repr(d) == "(('add', ('x',), None, 1),)"
    assert list(d[0:1]) == [('add', ('x',), None, 1)]


def test_diff_from_plain_tuples_converts_operations() -> None:
    d = Diff([('change', ['a'], 1, 2)])  # type: ignore[list-item]
    assert d[0].operation is DiffOperation.CHANGE
    assert d[0].field == ('a',)


def test_diff_is_unhashable() -> None:
    with pytest.raises(TypeError):
        hash(Diff([]))


@pytest.mark.parametrize(('a', 'b'), [
    (None, None), (1, 1), ('x', 'x'), ({}, {}), ({'a': 1}, {'a': 1}), ([1, 2], [1, 2]),
    ({'a': None}, {}),  # None is absence.
])
def test_no_changes(a: Any, b: Any) -> None:
    assert diff(a, b) == ()


def test_root_level_scalars() -> None:
    assert diff(None, 1) == (('add', (), None, 1),)
    assert diff(1, None) == (('remove', (), 1, None),)
    assert diff(1, 2) == (('change', (), 1, 2),)
    assert diff('x', {'a': 1}) == (('change', (), 'x', {'a': 1}),)


def test_documented_example() -> None:
    old = {'metadata': {'labels': {'label2': 'old-value', 'label3': 'old-value'}}, 'spec': {'size': '1G'}}
    new = {'metadata': {'labels': {'label1': 'new-value', 'label2': 'new-value'}}, 'spec': {'size': '2G'}}
    d = diff(old, new)
    assert set(d) == {
        ('add', ('metadata', 'labels', 'label1'), None, 'new-value'),
        ('change', ('metadata', 'labels', 'label2'), 'old-value', 'new-value'),
        ('remove', ('metadata', 'labels', 'label3'), 'old-value', None),
        ('change', ('spec', 'size'), '1G', '2G'),
    }
    labels_diff = reduce(d, 'metadata.labels')
    assert set(labels_diff) == {
        ('add', ('label1',), None, 'new-value'),
        ('change', ('label2',), 'old-value', 'new-value'),
        ('remove', ('label3',), 'old-value', None),
    }
    assert {field[0]: new for op, field, old, new in labels_diff} == {
        'label1': 'new-value', 'label2': 'new-value', 'label3': None}


def test_nested_dicts_are_descended_lists_are_not() -> None:
    d = diff({'spec': {'items': [1, 2], 'sub': {'x': 1}}},
             {'spec': {'items': [1, 3], 'sub': {'x': 1, 'y': 2}}})
    assert d == (
        ('change', ('spec', 'items'), [1, 2], [1, 3]),
        ('add', ('spec', 'sub', 'y'), None, 2),
    )


def test_whole_stanzas_added_and_removed() -> None:
    assert diff({}, {'spec': {'a': 1}}) == (('add', ('spec',), None, {'a': 1}),)
    assert diff({'spec': {'a': 1}}, {}) == (('remove', ('spec',), {'a': 1}, None),)
    assert diff({'spec': {'a': 1}}, {'spec': None}) == (('remove', ('spec',), {'a': 1}, None),)


def test_custom_path_prefix() -> None:
    assert diff(1, 2, ('spec', 'x')) == (('change', ('spec', 'x'), 1, 2),)


def test_reduce_descendants_and_unrelated() -> None:
    d = diff({'spec': {'a': {'b': 1}, 'c': 1}}, {'spec': {'a': {'b': 2}, 'c': 2}})
    assert reduce(d, 'spec.a') == (('change', ('b',), 1, 2),)
    assert reduce(d, ('spec', 'a', 'b')) == (('change', (), 1, 2),)
    assert reduce(d, 'spec.zzz') == ()
    assert reduce(d, None) == d


def test_reduce_expands_ancestors() -> None:
    added = diff({}, {'spec': {'field': {'x': 1}}})
    assert reduce(added, 'spec.field') == (('add', (), None, {'x': 1}),)
    assert reduce(added, 'spec.field.x') == (('add', (), None, 1),)
    assert reduce(added, 'spec.other') == ()

    removed = diff({'spec': {'field': 'v'}}, {})
    assert reduce(removed, 'spec.field') == (('remove', (), 'v', None),)

    changed = diff({'spec': 'scalar'}, {'spec': {'field': {'x': 1}}})
    assert reduce(changed, 'spec.field') == (('add', (), None, {'x': 1}),)
