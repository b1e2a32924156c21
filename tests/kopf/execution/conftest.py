"""The execution tests run with each progress storage, and leave the default lifecycle as it was."""

import asyncio
from typing import Any

import pytest

from kopf._cogs.configs.configuration import OperatorSettings
from kopf._core.actions import lifecycles

from .helpers import STORAGES, Calls


@pytest.fixture(params=list(STORAGES))
def settings(request: pytest.FixtureRequest) -> OperatorSettings:
    settings = OperatorSettings()
    settings.persistence.progress_storage = STORAGES[request.param]()
    return settings


@pytest.fixture(autouse=True)
def _default_lifecycle() -> Any:
    yield
    lifecycles.set_default_lifecycle(None)


@pytest.fixture
async def calls() -> Calls:
    return Calls(asyncio.get_running_loop())
