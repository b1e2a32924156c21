"""The fixtures of these tests."""

import pytest

from kopf._core.intents.registries import OperatorRegistry


@pytest.fixture
def registry() -> OperatorRegistry:
    return OperatorRegistry()
