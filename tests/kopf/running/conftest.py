"""Fixtures for running whole operators: a simulated cluster over the in-memory transport, a fresh registry."""
from __future__ import annotations

import asyncio
import logging
import pathlib
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest

import kopf
from kopf._cogs.structs.credentials import ConnectionInfo, Vault
from kopf_sim.http.app import build_app
from kopf_sim.manifests import read_manifests
from kopf_sim.store.cluster import Cluster
from kopf_sim.transports.inmemory import InMemoryServer

ROOT = pathlib.Path(__file__).parent.parent.parent.parent
SERVER = 'http://kopf-sim.local'


@pytest.fixture
def cluster() -> Cluster:
    cluster = Cluster()
    cluster.apply_manifests(read_manifests([ROOT / 'examples' / 'crd.yaml']))
    return cluster


@pytest.fixture
async def server(cluster: Cluster) -> AsyncIterator[InMemoryServer]:
    async with InMemoryServer(build_app(cluster)) as server:
        yield server


@pytest.fixture
def info(server: InMemoryServer) -> ConnectionInfo:
    return ConnectionInfo(server=SERVER).with_connector_factory(server.connector)


@pytest.fixture
def vault(info: ConnectionInfo) -> Vault:
    return Vault({'sim': info})


@pytest.fixture
def registry() -> Iterator[kopf.OperatorRegistry]:
    old = kopf.get_default_registry()
    registry = kopf.OperatorRegistry()
    kopf.set_default_registry(registry)
    yield registry
    kopf.set_default_registry(old)


@pytest.fixture
def settings() -> kopf.OperatorSettings:
    settings = kopf.OperatorSettings()
    settings.peering.standalone = True
    settings.batching.idle_timeout = 1.0
    return settings


def kex(cluster: Cluster) -> Any:
    return cluster.resource('kopf.dev', 'v1', 'kopfexamples')


def example(name: str, namespace: str = 'default', **spec: Any) -> dict[str, Any]:
    return {'apiVersion': 'kopf.dev/v1', 'kind': 'KopfExample',
            'metadata': {'name': name, 'namespace': namespace}, 'spec': dict(spec)}


def peek(cluster: Cluster, namespace: str | None, name: str) -> dict[str, Any] | None:
    return cluster.peek(kex(cluster).storage_key, namespace, name)


async def wait_for(predicate: Callable[[], Any], *, timeout: float = 60.0, step: float = 0.1) -> Any:
    """Poll until the predicate is truthy (virtual seconds under looptime); return its value."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if loop.time() >= deadline:
            raise AssertionError(f"The condition is not met in {timeout} seconds: {predicate}")
        await asyncio.sleep(step)


@pytest.fixture(autouse=True)
def _restored_logging() -> Iterator[None]:
    """The CLI configures the process-wide logging (levels, handlers): undo it, other tests rely on the defaults."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    named = {name: logging.getLogger(name).level for name in logging.root.manager.loggerDict}
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    for name, named_level in named.items():
        logging.getLogger(name).setLevel(named_level)
