"""What these tests share."""

from typing import Any


def fn(**_: Any) -> None:
    pass


def the_only(handlers: list[Any]) -> Any:
    assert len(handlers) == 1
    return handlers[0]
