"""Fixtures for the API clients: a simulated cluster over the in-memory transport, a vault for it."""
from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from aiohttp import web

from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.structs.credentials import ConnectionInfo, Vault
from kopf._cogs.structs.references import Resource
from kopf_sim.http.app import ServerOptions, build_app
from kopf_sim.store.cluster import Cluster
from kopf_sim.timing.clock import ManualClock, SeededUids
from kopf_sim.transports.inmemory import InMemoryServer

from ..crds import permissive_crd

SERVER = 'http://kopf-sim.local'

CRD = permissive_crd('acme.example', 'widgets', 'widget', 'Widget', short_names=('wd',), categories=('acme',))

WIDGETS = Resource('acme.example', 'v1', 'widgets', kind='Widget', namespaced=True,
                   subresources=frozenset({'status'}))
CONFIGMAPS = Resource('', 'v1', 'configmaps', kind='ConfigMap', namespaced=True)


def widget(name: str, namespace: str = 'default', **spec: Any) -> dict[str, Any]:
    return {'apiVersion': 'acme.example/v1', 'kind': 'Widget',
            'metadata': {'name': name, 'namespace': namespace}, 'spec': dict(spec)}


class Recorder:
    """A middleware that records the requests and can inject faults (by a predicate)."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str, str]] = []  # (method, path, query)
        self.headers: list[dict[str, str]] = []
        self.faults: list[tuple[Callable[[web.Request], bool], Callable[[], web.StreamResponse]]] = []

    def fail(self, times: int, response: Callable[[], web.StreamResponse],
             when: Callable[[web.Request], bool] = lambda _: True) -> None:
        for _ in range(times):
            self.faults.append((when, response))

    @web.middleware
    async def middleware(
            self, request: web.Request,
            handler: Callable[[web.Request], Awaitable[web.StreamResponse]],
    ) -> web.StreamResponse:
        self.requests.append((request.method, request.path, request.query_string))
        self.headers.append(dict(request.headers))
        for idx, (when, response) in enumerate(self.faults):
            if when(request):
                del self.faults[idx]
                return response()
        return await handler(request)

    def paths(self, method: str | None = None) -> list[str]:
        return [path for m, path, _ in self.requests if method is None or m == method]


@pytest.fixture
def cluster() -> Cluster:
    cluster = Cluster(clock=ManualClock(), uids=SeededUids(1))
    cluster.create(cluster.resource('apiextensions.k8s.io', 'v1', 'customresourcedefinitions'), None, CRD)
    return cluster


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def server_options() -> ServerOptions:
    return ServerOptions(bookmark_interval=60)


@pytest.fixture
def app(cluster: Cluster, recorder: Recorder, server_options: ServerOptions) -> web.Application:
    app = build_app(cluster, server_options)
    app.middlewares.insert(0, recorder.middleware)
    return app


@pytest.fixture
async def server(app: web.Application) -> AsyncIterator[InMemoryServer]:
    async with InMemoryServer(app) as server:
        yield server


@pytest.fixture
def info(server: InMemoryServer) -> ConnectionInfo:
    return ConnectionInfo(server=SERVER).with_connector_factory(server.connector)


@pytest.fixture
async def vault(info: ConnectionInfo) -> AsyncIterator[Vault]:
    async with Vault({'sim': info}) as vault:
        yield vault


@pytest.fixture
def settings() -> OperatorSettings:
    settings = OperatorSettings()
    settings.networking.error_backoffs = [1, 2, 3]
    return settings


@pytest.fixture
def logger() -> logging.Logger:
    return logging.getLogger('kopf.tests.clients')


def status_response(code: int, reason: str = 'Failure', headers: dict[str, str] | None = None
                    ) -> Callable[[], web.StreamResponse]:
    def make() -> web.StreamResponse:
        payload = {'apiVersion': 'v1', 'kind': 'Status', 'status': 'Failure',
                   'message': f'injected {code}', 'reason': reason, 'code': code}
        return web.json_response(payload, status=code, headers=headers)
    return make


