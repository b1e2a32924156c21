"""The fixtures of these tests."""

from collections.abc import Iterator

import pytest

import kopf
from kopf._core.intents.registries import OperatorRegistry


@pytest.fixture
def registry() -> OperatorRegistry:
    return OperatorRegistry()


@pytest.fixture
def default_registry() -> Iterator[OperatorRegistry]:
    old = kopf.get_default_registry()
    new = OperatorRegistry()
    kopf.set_default_registry(new)
    try:
        yield new
    finally:
        kopf.set_default_registry(old)
