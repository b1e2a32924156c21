"""The resource observer: one discovery after the CRDs are listed, one more per CRD change, none lost."""

from __future__ import annotations

import asyncio
import copy
import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web
from aiohttp.typedefs import Handler

import kopf
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.structs.credentials import Vault
from kopf._core.intents.registries import OperatorRegistry
from kopf._core.reactor.observation import Insights, _log_namespaces, resource_observer
from kopf_sim.http import faults
from kopf_sim.http.app import build_app
from kopf_sim.store.cluster import Cluster

from ..simvault import vault_over
from .conftest import CRD

pytestmark = pytest.mark.looptime

CRDS = "customresourcedefinitions.apiextensions.k8s.io"


class Requests:
    """The paths of the requests that reached the simulated apiserver, in order."""

    def __init__(self) -> None:
        self.paths: list[str] = []

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        self.paths.append(request.path)
        return await handler(request)


@pytest.fixture
def requests() -> Requests:
    return Requests()


@pytest.fixture
def injector() -> faults.FaultInjector:
    return faults.FaultInjector()


@pytest.fixture
async def observed_vault(cluster: Cluster, requests: Requests, injector: faults.FaultInjector) -> AsyncIterator[Vault]:
    app = build_app(cluster)
    faults.install(app, injector)
    app.middlewares.insert(0, requests.middleware)
    async with vault_over(app) as vault:
        yield vault


@pytest.fixture
def two_kinds(registry: OperatorRegistry) -> OperatorRegistry:
    @kopf.on.create("kopfexamples", registry=registry)
    def first(**_: Any) -> None:
        pass

    @kopf.on.create("kopfothers", registry=registry)
    def second(**_: Any) -> None:
        pass

    return registry


def another_crd() -> dict[str, Any]:
    crd: dict[str, Any] = copy.deepcopy(CRD)
    crd["metadata"]["name"] = "kopfothers.kopf.dev"
    crd["spec"]["names"] = {"plural": "kopfothers", "singular": "kopfother", "kind": "KopfOther"}
    return crd


async def observe(
    two_kinds: OperatorRegistry, settings: OperatorSettings, vault: Vault, insights: Insights
) -> asyncio.Task[None]:
    task = asyncio.create_task(resource_observer(registry=two_kinds, settings=settings, insights=insights, vault=vault))
    await asyncio.wait_for(insights.ready_resources.wait(), timeout=10)
    return task


async def test_one_discovery_after_the_crds_are_listed_and_one_per_change(
    cluster: Cluster, two_kinds: OperatorRegistry, settings: OperatorSettings, observed_vault: Vault, requests: Requests
) -> None:
    insights = Insights()
    task = await observe(two_kinds, settings, observed_vault, insights)
    try:
        assert {resource.plural for resource in insights.resources} == {"kopfexamples"}
        await asyncio.sleep(1)  # the watch-stream opens after the discovery
        crds_path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
        assert requests.paths == [crds_path, "/api", "/apis", crds_path]  # the list, the discovery, the watch

        cluster.create(cluster.resource("apiextensions.k8s.io", "v1", "customresourcedefinitions"), None, another_crd())
        seen = insights.revision
        await asyncio.wait_for(insights.wait_for_revision(seen), timeout=10)
        assert {resource.plural for resource in insights.resources} == {"kopfexamples", "kopfothers"}
        assert requests.paths[4:] == ["/api", "/apis"]
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_discovery_without_the_permissions_for_crds(
    two_kinds: OperatorRegistry,
    settings: OperatorSettings,
    observed_vault: Vault,
    injector: faults.FaultInjector,
    caplog: pytest.LogCaptureFixture,
) -> None:
    injector.error(403, resource=CRDS, message="no access to the CRDs")
    insights = Insights()
    task = await observe(two_kinds, settings, observed_vault, insights)
    try:
        assert {resource.plural for resource in insights.resources} == {"kopfexamples"}
        warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        assert any("Cannot watch the custom resource definitions" in message for message in warnings)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


def test_namespaces_served_are_logged_at_debug_only(caplog: pytest.LogCaptureFixture) -> None:
    """The published framework logs nothing at INFO about the namespaces it serves (nor at DEBUG)."""
    caplog.set_level(logging.DEBUG)
    _log_namespaces(old=["gone"], new=["default"])
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [
        (logging.DEBUG, "Serving the namespace 'default'."),
        (logging.DEBUG, "Not serving the namespace 'gone' anymore."),
    ]
