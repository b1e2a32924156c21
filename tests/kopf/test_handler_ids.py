import functools
from typing import Any

import pytest

from kopf._cogs.structs.ids import build_handler_id, get_callable_id


def create_fn(**_: Any) -> None:
    pass


def test_function_ids_are_their_names() -> None:
    assert get_callable_id(create_fn) == "create_fn"


def test_partials_are_named_after_their_functions() -> None:
    assert get_callable_id(functools.partial(functools.partial(create_fn, a=1), b=2)) == "create_fn"


def test_lambdas_are_named_after_their_location() -> None:
    fn = lambda **_: None  # noqa: E731
    assert get_callable_id(fn).startswith("lambda:")
    assert get_callable_id(fn).endswith(f":{fn.__code__.co_firstlineno}")


def test_callable_objects_are_named_after_their_classes() -> None:
    class Handler:
        def __call__(self) -> None:
            pass

    assert get_callable_id(Handler()) == "Handler"


def test_missing_callables_are_rejected() -> None:
    with pytest.raises(ValueError):
        get_callable_id(None)


def test_handler_ids() -> None:
    assert build_handler_id(create_fn) == "create_fn"
    assert build_handler_id(create_fn, field="spec.field") == "create_fn/spec.field"
    assert build_handler_id(create_fn, field=("spec", "field")) == "create_fn/spec.field"
    assert build_handler_id(create_fn, id="explicit", field="spec.field") == "explicit"
    assert build_handler_id(create_fn, id="item1", prefix="create_fn") == "create_fn/item1"
    assert build_handler_id(None, id="x") == "x"
