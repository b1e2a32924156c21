"""
The fixtures that the tests share: a simulated cluster, served in memory, and kopf's pieces around it.

What they fake: the Kubernetes API server, by :mod:`kopf_sim` (an in-memory store with the apiserver's
semantics) on a manual clock with seeded uids, reached through the in-memory transport at
:data:`kopf_sim.transports.inmemory.DEFAULT_BASE_URL` (no sockets). Nothing else is faked: the vault,
settings and registry are kopf's own. A folder's conftest adds what its tests need (its CRDs in ``crds``,
its settings) and says what it fakes on top; helpers that are plain functions are in ``tests/helpers.py``.

pytest_plugins may only be declared here (not in tests/plugin/conftest.py).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import hypothesis
import pytest
from aiohttp import web

import kopf
from kopf._cogs.structs.credentials import ConnectionInfo, Vault
from kopf_sim.http.app import ServerOptions, build_app
from kopf_sim.store.cluster import Cluster
from kopf_sim.timing.clock import ManualClock, SeededUids
from kopf_sim.transports.inmemory import DEFAULT_BASE_URL, InMemoryServer

pytest_plugins = ["pytester"]  # the plugin's own tests run inner pytest sessions

# The property-based tests run the same examples on every run (a failure on CI shows again on a laptop),
# and with no deadline per example: on a busy 2-core CI machine, a slow example is no bug of the code.
hypothesis.settings.register_profile("kopf-tests", deadline=None, derandomize=True)
hypothesis.settings.load_profile("kopf-tests")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The longest tests first (in their order), then the rest as collected.

    pytest-xdist hands the tests out in this order: a test of a minute handed out last keeps one worker busy
    while the other has nothing left to do (the docs' build, collected near the end, did that).
    """
    items.sort(key=lambda item: item.get_closest_marker("long_running") is None)


@pytest.fixture
def clock() -> ManualClock:
    """The cluster's wall clock: it moves only when a test advances it."""
    return ManualClock()


@pytest.fixture
def crds() -> list[dict[str, Any]]:
    """The CRDs that the cluster serves from the start: none here; a folder's conftest names its own."""
    return []


@pytest.fixture
def cluster(clock: ManualClock, crds: list[dict[str, Any]]) -> Cluster:
    """A fresh simulated cluster, deterministic (manual clock, seeded uids), with the folder's CRDs."""
    cluster = Cluster(clock=clock, uids=SeededUids(1))
    for crd in crds:
        cluster.create(cluster.resource("apiextensions.k8s.io", "v1", "customresourcedefinitions"), None, crd)
    return cluster


@pytest.fixture
def server_options() -> ServerOptions:
    return ServerOptions(bookmark_interval=60)


@pytest.fixture
def app(cluster: Cluster, server_options: ServerOptions) -> web.Application:
    """The simulated apiserver's HTTP face over the cluster (a folder may add middlewares to it)."""
    return build_app(cluster, server_options)


@pytest.fixture
async def server(app: web.Application) -> AsyncIterator[InMemoryServer]:
    """The app served in memory: clients connect through its connector, with no sockets."""
    async with InMemoryServer(app) as server:
        yield server


@pytest.fixture
def info(server: InMemoryServer) -> ConnectionInfo:
    """kopf's credentials for the in-memory server (its base URL is a name that only the connector knows)."""
    return ConnectionInfo(server=DEFAULT_BASE_URL).with_connector_factory(server.connector)


@pytest.fixture
async def vault(info: ConnectionInfo) -> AsyncIterator[Vault]:
    """kopf's vault with those credentials, closed at the end."""
    async with Vault({"sim": info}) as vault:
        yield vault


@pytest.fixture
def settings() -> kopf.OperatorSettings:
    """kopf's settings, with short back-offs on API errors (seconds, not minutes)."""
    settings = kopf.OperatorSettings()
    settings.networking.error_backoffs = [1, 2, 3]
    return settings


@pytest.fixture
def registry() -> Iterator[kopf.OperatorRegistry]:
    """A fresh registry, also the default one for the test (decorators without ``registry=``); restored after."""
    old = kopf.get_default_registry()
    registry = kopf.OperatorRegistry()
    kopf.set_default_registry(registry)
    yield registry
    kopf.set_default_registry(old)
