"""kopf_cluster's discovery: aggregated (two requests) or legacy (per group-version), the same answers."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator, Mapping
from typing import Any

import aiohttp
import pytest

from kopf_sim.http.app import ServerOptions, build_app
from kopf_sim.store.cluster import Cluster
from kopf_sim.transports.inmemory import InMemoryServer
from pytest_kopf._discovery import Discovery, ResourceInfo

from ..kopf.crds import KOPFEXAMPLES_CRD

CRDS = ("apiextensions.k8s.io", "v1", "customresourcedefinitions")


class Fetcher:
    """GETs over the in-memory transport, remembering the paths."""

    def __init__(self, session: aiohttp.ClientSession, *, aggregated: bool) -> None:
        self.session = session
        self.aggregated = aggregated
        self.paths: list[str] = []

    async def __call__(self, path: str, headers: Mapping[str, str]) -> bytes | None:
        self.paths.append(path)
        async with self.session.get(path, headers=headers) as response:
            return await response.read() if response.status < 400 else None


@pytest.fixture
def cluster() -> Cluster:
    cluster = Cluster()
    cluster.create(cluster.resource(*CRDS), None, KOPFEXAMPLES_CRD)
    return cluster


@pytest.fixture(params=[True, False], ids=["aggregated", "legacy"])
async def fetcher(request: pytest.FixtureRequest, cluster: Cluster) -> AsyncIterator[Fetcher]:
    app = build_app(cluster, ServerOptions(aggregated_discovery=request.param))
    async with InMemoryServer(app) as server, server.session() as session:
        yield Fetcher(session, aggregated=request.param)


KEX = ResourceInfo(
    group="kopf.dev",
    version="v1",
    plural="kopfexamples",
    kind="KopfExample",
    namespaced=True,
    singular="kopfexample",
    short_names=("kex",),
)


async def test_the_same_resources_either_way(fetcher: Fetcher) -> None:
    discovery = Discovery(fetcher)
    assert (await discovery.preferred_versions())[0] == "v1"
    assert await discovery.preferred_of("kopf.dev") == "kopf.dev/v1"
    assert await discovery.group_version("kopf.dev/v1") == [KEX]
    core = await discovery.group_version("v1") or []
    assert (
        ResourceInfo(
            group="",
            version="v1",
            plural="events",
            kind="Event",
            namespaced=True,
            singular="event",
            short_names=("ev",),
        )
        in core
    )
    assert await discovery.group_version("kopf.dev/v2") is None


async def test_aggregated_discovery_takes_two_requests_and_one_per_change(fetcher: Fetcher, cluster: Cluster) -> None:
    discovery = Discovery(fetcher)
    await discovery.group_version("kopf.dev/v1")
    await discovery.group_version("v1")
    await discovery.group_version("apps/v1")
    if fetcher.aggregated:
        assert fetcher.paths == ["/api", "/apis"]
    else:
        assert fetcher.paths == ["/api", "/apis", "/apis/kopf.dev/v1", "/api/v1", "/apis/apps/v1"]

    other: dict[str, Any] = copy.deepcopy(KOPFEXAMPLES_CRD)
    other["metadata"]["name"] = "kopfothers.kopf.dev"
    other["spec"]["names"] = {"plural": "kopfothers", "singular": "kopfother", "kind": "KopfOther"}
    cluster.create(cluster.resource(*CRDS), None, other)
    fetcher.paths.clear()
    discovery.forget("kopf.dev")
    plurals = {info.plural for info in await discovery.group_version("kopf.dev/v1") or ()}
    assert plurals == {"kopfexamples", "kopfothers"}
    assert fetcher.paths == (["/apis"] if fetcher.aggregated else ["/api", "/apis", "/apis/kopf.dev/v1"])
