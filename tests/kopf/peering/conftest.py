"""The shared simulated cluster with the requests recorded in front of it; kopf's settings for peering."""

from __future__ import annotations

import pytest
from aiohttp import web

from kopf._cogs.configs.configuration import OperatorSettings

from .helpers import Requests


@pytest.fixture
def requests() -> Requests:
    return Requests()


@pytest.fixture
def app(app: web.Application, requests: Requests) -> web.Application:
    """The shared simulated apiserver's app, with the requests recorded (and faults injected) in front of it."""
    app.middlewares.insert(0, requests.middleware)
    return app


@pytest.fixture
def settings() -> OperatorSettings:
    settings = OperatorSettings()
    settings.networking.error_backoffs = [1, 2, 3]
    settings.peering.clusterwide = True
    return settings
