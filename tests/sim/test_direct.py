"""Direct calls into the simulated apiserver: the same answers as over HTTP, without the HTTP framing."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from kopf_sim.http import faults
from kopf_sim.http.app import build_app
from kopf_sim.store.cluster import Cluster
from kopf_sim.timing.clock import ManualClock, SeededUids
from kopf_sim.transports.direct import DirectClient
from kopf_sim.transports.inmemory import InMemoryServer
from tests.helpers import widget

from .conftest import CRD

WIDGETS = "/apis/acme.example/v1/namespaces/default/widgets"
AGENT = {"User-Agent": "tester/1.0"}
JSON = {"Content-Type": "application/json"}
MERGE = {"Content-Type": "application/merge-patch+json"}
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"

#: (method, path, query, body, headers): successes, warnings and errors of many kinds.
EXCHANGES: list[tuple[str, str, dict[str, str], Any, dict[str, str]]] = [
    ("GET", "/api", {}, None, {}),
    ("GET", "/apis", {}, None, {"Accept": "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"}),
    ("GET", "/apis/acme.example/v1", {}, None, {}),
    ("POST", WIDGETS, {}, widget("w1", size=1), JSON),
    ("POST", WIDGETS, {}, widget("w1", size=1), JSON),  # 409 AlreadyExists
    ("POST", WIDGETS, {"fieldValidation": "Warn"}, {**widget("w2"), "spec": {"size": 2, "oops": 1}}, JSON),
    ("POST", WIDGETS, {}, widget("w3", size=-1), JSON),  # 422 Invalid
    ("POST", WIDGETS, {}, "not json", {"Content-Type": "application/json"}),  # 400 BadRequest
    ("GET", f"{WIDGETS}/w1", {}, None, {}),
    ("PATCH", f"{WIDGETS}/w1", {}, {"metadata": {"labels": {"a": "b"}}, "spec": {"size": 3}}, MERGE),
    ("PATCH", f"{WIDGETS}/w1/status", {}, {"status": {"phase": "Up"}}, MERGE),
    ("GET", WIDGETS, {"labelSelector": "a=b"}, None, {}),
    ("GET", WIDGETS, {"limit": "many"}, None, {}),  # 400: not an integer
    ("GET", "/api/v1/namespaces/default/configmaps", {}, None, {"Accept": TABLE}),
    ("DELETE", f"{WIDGETS}/w1", {}, None, {}),
    ("GET", f"{WIDGETS}/w1", {}, None, {}),  # 404 NotFound
    ("GET", "/apis/nowhere.example/v1/things", {}, None, {}),  # 404 page not found
    ("PUT", WIDGETS, {}, None, {}),  # 405
]


def fresh_cluster() -> Cluster:
    cluster = Cluster(clock=ManualClock(), uids=SeededUids(7))
    cluster.create(cluster.resource("apiextensions.k8s.io", "v1", "customresourcedefinitions"), None, CRD)
    return cluster


def encoded(body: Any) -> bytes | None:
    if body is None:
        return None
    return body.encode() if isinstance(body, str) else json.dumps(body).encode()


async def test_the_same_statuses_headers_and_bytes_as_over_http() -> None:
    over_http: list[tuple[int, str, list[str], bytes]] = []
    server = InMemoryServer(build_app(fresh_cluster()))
    async with server, server.session(headers=AGENT) as session:
        for method, path, query, body, headers in EXCHANGES:
            async with session.request(method, path, params=query, data=encoded(body), headers=headers) as response:
                over_http.append(
                    (
                        response.status,
                        response.headers.get("Content-Type", ""),
                        response.headers.getall("Warning", []),
                        await response.read(),
                    )
                )

    direct: list[tuple[int, str, list[str], bytes]] = []
    app = build_app(fresh_cluster())
    client = DirectClient(app, headers=AGENT)
    for method, path, query, body, headers in EXCHANGES:
        answer = await client.request(method, path, params=query, body=encoded(body), headers=headers)
        direct.append(
            (answer.status, answer.headers.get("Content-Type", ""), answer.headers.getall("Warning", []), answer.body)
        )

    assert [status for status, *_ in direct] == [
        200,
        200,
        200,
        201,
        409,
        201,
        422,
        400,
        200,
        200,
        200,
        200,
        400,
        200,
        200,
        404,
        404,
        405,
    ]
    assert direct[5][2] and "unknown field" in direct[5][2][0]  # the warning is there, as a header
    assert direct == over_http


async def test_a_watch_streams_its_events_and_stops_when_closed() -> None:
    cluster = fresh_cluster()
    client = DirectClient(build_app(cluster))
    response = await client.request("GET", WIDGETS, params={"watch": "true", "resourceVersion": str(cluster.rv)})
    assert response.status == 200 and response.stream is not None
    chunks = response.chunks()
    cluster.create(cluster.resource("acme.example", "v1", "widgets"), "default", widget("w1", size=1))
    event = json.loads(await anext(chunks))
    assert (event["type"], event["object"]["metadata"]["name"]) == ("ADDED", "w1")
    assert len(cluster._subscriptions) == 1
    await chunks.aclose()
    assert cluster._subscriptions == []


@pytest.mark.looptime
async def test_a_watch_ends_at_its_timeout() -> None:
    cluster = fresh_cluster()
    client = DirectClient(build_app(cluster))
    loop = asyncio.get_running_loop()
    start = loop.time()
    response = await client.request("GET", WIDGETS, params={"watch": "true", "timeoutSeconds": "150"})
    assert [chunk async for chunk in response.chunks()] == []
    assert round(loop.time() - start) == 150
    assert cluster._subscriptions == []


async def test_a_bad_watch_is_an_error_response() -> None:
    client = DirectClient(build_app(fresh_cluster()))
    response = await client.request("GET", WIDGETS, params={"watch": "true", "timeoutSeconds": "soon"})
    assert response.status == 400 and response.stream is None
    assert json.loads(response.body)["reason"] == "BadRequest"


async def test_faults_are_not_injected_into_direct_calls() -> None:
    app = build_app(fresh_cluster())
    injector = faults.FaultInjector()
    faults.install(app, injector)
    injector.error(500)
    response = await DirectClient(app).request("GET", WIDGETS)
    assert response.status == 200


@pytest.mark.parametrize(("agent", "manager"), [("tester/1.0", "tester"), (None, "unknown")])
async def test_the_field_manager_comes_from_the_user_agent(agent: str | None, manager: str) -> None:
    client = DirectClient(build_app(fresh_cluster()), headers={"User-Agent": agent} if agent else None)
    response = await client.request("POST", WIDGETS, body=json.dumps(widget("w1")).encode(), headers=JSON)
    assert [entry["manager"] for entry in json.loads(response.body)["metadata"]["managedFields"]] == [manager]
