import copy
import dataclasses

import pytest

from kopf._cogs.structs.ephemera import Memo, fork_memo


def test_memo_is_a_dict() -> None:
    memo = Memo()
    assert isinstance(memo, dict)
    assert memo == {}


def test_attributes_are_keys_and_vice_versa() -> None:
    memo = Memo()
    memo.f1 = 100
    memo["f2"] = 200
    assert memo["f1"] == 100
    assert memo.f2 == 200
    assert set(memo.keys()) == {"f1", "f2"}
    assert memo.get("f3", "dflt") == "dflt"


def test_missing_attributes_raise_attribute_errors() -> None:
    memo = Memo()
    with pytest.raises(AttributeError):
        _ = memo.absent
    with pytest.raises(AttributeError):
        del memo.absent
    assert getattr(memo, "absent", "dflt") == "dflt"
    assert not hasattr(memo, "absent")


def test_attribute_deletion() -> None:
    memo = Memo(a=1)
    del memo.a
    assert memo == {}


def test_dict_methods_are_not_shadowed_by_default() -> None:
    memo = Memo()
    memo["keys"] = "a value"
    assert callable(memo.keys)
    assert memo["keys"] == "a value"


def test_repr() -> None:
    assert repr(Memo(a=1)) == "Memo({'a': 1})"


@pytest.mark.parametrize("copier", [copy.copy, Memo.copy, fork_memo])
def test_copies_are_shallow_and_of_the_same_class(copier: object) -> None:
    shared = Memo()
    memo = Memo(values=[1], nested=shared)
    clone = copier(memo)  # type: ignore[operator]
    assert type(clone) is Memo
    assert clone == memo
    assert clone is not memo
    clone.own = "x"
    assert "own" not in memo
    clone["values"].append(2)
    clone.nested.seen = True
    assert memo["values"] == [1, 2]
    assert shared.seen is True


def test_subclasses_are_copied_as_subclasses() -> None:
    class MyMemo(Memo):
        pass

    assert type(copy.copy(MyMemo(a=1))) is MyMemo


def test_custom_memo_classes_decide_on_copying() -> None:
    @dataclasses.dataclass
    class Global:
        value: int = 0

        def __copy__(self) -> "Global":
            return self

    memo = Global()
    assert fork_memo(memo) is memo
