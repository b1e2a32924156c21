"""Fault injection in the simulated apiserver: status codes, latency, dropped & expired watches, conflicts."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import aiohttp
import pytest

from kopf_sim.http import faults
from kopf_sim.http.app import build_app
from kopf_sim.http.faults import FaultInjector
from kopf_sim.store.cluster import Cluster
from kopf_sim.timing import virtualtime
from kopf_sim.timing.clock import ManualClock, SeededUids
from kopf_sim.transports.inmemory import InMemoryServer
from tests.helpers import widget

from .conftest import CRD

WIDGETS = "/apis/acme.example/v1/namespaces/default/widgets"


def make_cluster() -> Cluster:
    cluster = Cluster(clock=ManualClock(), uids=SeededUids(1))
    cluster.create(cluster.resource("apiextensions.k8s.io", "v1", "customresourcedefinitions"), None, CRD)
    for name in ("w1", "w2"):
        cluster.create(cluster.resource("acme.example", "v1", "widgets"), "default", widget(name, size=1))
    return cluster


Session = tuple[aiohttp.ClientSession, FaultInjector, Cluster]


async def with_faults(
    fn: Callable[[aiohttp.ClientSession, FaultInjector, Cluster], Awaitable[Any]], seed: int = 0
) -> Any:
    cluster = make_cluster()
    injector = FaultInjector(seed)
    app = build_app(cluster)
    faults.install(app, injector)
    async with InMemoryServer(app) as server, server.session() as session:
        return await fn(session, injector, cluster)


@pytest.fixture
async def env() -> AsyncIterator[Session]:
    cluster = make_cluster()
    injector = FaultInjector()
    app = build_app(cluster)
    faults.install(app, injector)
    async with InMemoryServer(app) as server, server.session() as session:
        yield session, injector, cluster


async def status_of(session: aiohttp.ClientSession, method: str, path: str, **kwargs: Any) -> int:
    async with session.request(method, path, **kwargs) as response:
        await response.read()
        return response.status


async def watch_lines(session: aiohttp.ClientSession, path: str, **params: str) -> list[dict[str, Any]]:
    async with session.get(path, params={"watch": "true", **params}) as response:
        assert response.status == 200
        lines = (await response.read()).splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def test_classify_paths() -> None:
    info = faults.classify("patch", "/apis/acme.example/v1/namespaces/ns1/widgets/w1/status", {})
    assert (info.method, info.group, info.version, info.resource, info.namespace, info.name, info.subresource) == (
        "PATCH",
        "acme.example",
        "v1",
        "widgets",
        "ns1",
        "w1",
        "status",
    )
    assert info.qualified_resource == "widgets.acme.example"
    info = faults.classify("GET", "/api/v1/namespaces/ns1", {})
    assert (info.resource, info.name, info.namespace) == ("namespaces", "ns1", None)
    info = faults.classify("PUT", "/api/v1/namespaces/ns1/finalize", {})
    assert (info.resource, info.name, info.subresource) == ("namespaces", "ns1", "finalize")
    info = faults.classify("GET", "/api/v1/watch/namespaces/ns1/pods", {})
    assert (info.resource, info.namespace, info.watch) == ("pods", "ns1", True)
    assert faults.classify("GET", "/api/v1/pods", {"watch": "1"}).watch
    assert faults.classify("GET", "/version", {}).resource is None


def test_a_path_is_classified_once_and_its_watch_flag_still_counts() -> None:
    """Every request is classified (by the faults and the checks' traces): the same few paths, parsed once each."""
    path = "/apis/acme.example/v1/namespaces/ns1/widgets"
    listed = faults.classify("GET", path, {"limit": "500"})
    assert faults.classify("GET", path, {}) is listed
    watched = faults.classify("GET", path, {"watch": "true"})
    assert watched.watch and not listed.watch
    assert faults.classify("GET", path, {"watch": "1"}) is watched
    assert faults.classify("GET", path, {"watch": "false"}) is listed


async def test_error_with_count_status_body_and_retry_after(env: Session) -> None:
    session, injector, _ = env
    rule = injector.error(503, retry_after=7, resource="widgets", method="GET", count=2)
    for _ in range(2):
        async with session.get(f"{WIDGETS}/w1") as response:
            assert response.status == 503
            assert response.headers["Retry-After"] == "7"
            status = await response.json()
        assert status["kind"] == "Status" and status["status"] == "Failure"
        assert status["code"] == 503 and status["reason"] == "ServiceUnavailable"
        assert status["details"]["retryAfterSeconds"] == 7
        assert status["details"]["name"] == "w1"
    assert await status_of(session, "GET", f"{WIDGETS}/w1") == 200
    assert (rule.hits, rule.matched, rule.exhausted) == (2, 2, True)
    assert [i.request.name for i in injector.injections] == ["w1", "w1"]


async def test_error_custom_reason_and_message(env: Session) -> None:
    session, injector, _ = env
    injector.error(429, reason="TooManyRequests", message="slow down", path=r"/widgets$")
    async with session.get(WIDGETS) as response:
        assert response.status == 429
        status = await response.json()
    assert (status["reason"], status["message"]) == ("TooManyRequests", "slow down")
    assert await status_of(session, "GET", f"{WIDGETS}/w1") == 200  # the path does not match


async def test_matching_criteria(env: Session) -> None:
    session, injector, _ = env
    injector.error(500, resource="widgets.acme.example", namespace="default", name="w2", method=["DELETE"])
    injector.error(500, resource="widgets.other.example")  # another group: never matches
    assert await status_of(session, "GET", f"{WIDGETS}/w2") == 200
    assert await status_of(session, "DELETE", f"{WIDGETS}/w1") == 200
    assert await status_of(session, "DELETE", f"{WIDGETS}/w2") == 500


async def test_exempt_requests_and_clear(env: Session) -> None:
    session, injector, _ = env
    injector.error(500)
    headers = {faults.EXEMPT_HEADER: "1"}
    assert await status_of(session, "GET", f"{WIDGETS}/w1", headers=headers) == 200
    assert await status_of(session, "GET", f"{WIDGETS}/w1") == 500
    injector.clear()
    assert await status_of(session, "GET", f"{WIDGETS}/w1") == 200
    assert len(injector.injections) == 1


async def test_conflict_on_writes_only(env: Session) -> None:
    session, injector, cluster = env
    rule = injector.conflict(resource="widgets", count=1)
    assert await status_of(session, "GET", f"{WIDGETS}/w1") == 200
    async with session.patch(
        f"{WIDGETS}/w1", json={"spec": {"size": 5}}, headers={"Content-Type": "application/merge-patch+json"}
    ) as response:
        assert response.status == 409
        status = await response.json()
    assert status["reason"] == "Conflict"
    assert status["message"] == (
        'Operation cannot be fulfilled on widgets.acme.example "w1": the object has been'
        " modified; please apply your changes to the latest version and try again"
    )
    assert cluster.get(cluster.resource("acme.example", "v1", "widgets"), "default", "w1")["spec"]["size"] == 1
    async with session.patch(
        f"{WIDGETS}/w1", json={"spec": {"size": 5}}, headers={"Content-Type": "application/merge-patch+json"}
    ) as response:
        assert response.status == 200
    assert rule.hits == 1


async def test_a_preconditioned_only_conflict_spares_the_patches_that_name_no_version(env: Session) -> None:
    """A merge patch without a resourceVersion is applied to the latest version: no apiserver answers it with 409."""
    session, injector, cluster = env
    rule = injector.conflict(resource="widgets", count=1, preconditioned_only=True)
    merge = {"Content-Type": "application/merge-patch+json"}
    assert await status_of(session, "PATCH", f"{WIDGETS}/w1", json={"spec": {"size": 2}}, headers=merge) == 200
    assert rule.hits == 0 and rule.matched == 0  # not counted either
    live = cluster.get(cluster.resource("acme.example", "v1", "widgets"), "default", "w1")
    version = live["metadata"]["resourceVersion"]
    expecting = {"metadata": {"resourceVersion": version}, "spec": {"size": 3}}
    assert await status_of(session, "PATCH", f"{WIDGETS}/w1", json=expecting, headers=merge) == 409
    assert rule.hits == 1
    assert cluster.get(cluster.resource("acme.example", "v1", "widgets"), "default", "w1")["spec"]["size"] == 2


def test_a_preconditioned_only_conflict_spares_the_replacements_that_name_no_version() -> None:
    """A PUT of a ConfigMap without a resourceVersion is an unconditional update: no apiserver answers it with 409."""

    async def statuses(session: aiohttp.ClientSession, injector: FaultInjector, _: Cluster) -> list[int]:
        configmaps = "/api/v1/namespaces/default/configmaps"
        made = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1"}}
        assert await status_of(session, "POST", configmaps, json=made) == 201
        rule = injector.conflict(resource="configmaps", count=1, preconditioned_only=True)
        found = [await status_of(session, "PUT", f"{configmaps}/c", json={**made, "data": {"a": "2"}})]
        assert rule.hits == 0
        async with session.get(f"{configmaps}/c") as response:
            version = (await response.json())["metadata"]["resourceVersion"]
        expecting = {**made, "metadata": {"name": "c", "resourceVersion": version}, "data": {"a": "3"}}
        found.append(await status_of(session, "PUT", f"{configmaps}/c", json=expecting))
        return found

    assert virtualtime.run(with_faults(statuses)) == [200, 409]


def test_probability_is_seeded() -> None:
    async def outcomes(session: aiohttp.ClientSession, injector: FaultInjector, _: Cluster) -> list[int]:
        injector.error(500, probability=0.5)
        return [await status_of(session, "GET", f"{WIDGETS}/w1") for _ in range(40)]

    first = virtualtime.run(with_faults(outcomes, seed=5))
    again = virtualtime.run(with_faults(outcomes, seed=5))
    other = virtualtime.run(with_faults(outcomes, seed=6))
    assert first == again
    assert first != other
    assert 5 < first.count(500) < 35


def test_latency_in_loop_time() -> None:
    async def timed(session: aiohttp.ClientSession, injector: FaultInjector, _: Cluster) -> list[float]:
        injector.latency(30, method="GET", count=1)
        injector.latency(5, method="GET", count=1)
        loop = asyncio.get_running_loop()
        times = []
        for _ in range(2):
            start = loop.time()
            assert await status_of(session, "GET", f"{WIDGETS}/w1") == 200
            times.append(loop.time() - start)
        return times

    assert virtualtime.run(with_faults(timed)) == [35.0, 0.0]


async def test_latency_then_error(env: Session) -> None:
    session, injector, _ = env
    injector.latency(0.01)
    injector.error(500)
    assert await status_of(session, "GET", f"{WIDGETS}/w1") == 500
    assert [type(i.rule.effect) for i in injector.injections] == [faults.Latency, faults.Error]


async def test_drop_watch_after_events(env: Session) -> None:
    session, injector, _ = env
    rule = injector.drop_watch(after=1, resource="widgets", count=1)
    assert await status_of(session, "GET", WIDGETS) == 200  # lists are not watches
    events = await watch_lines(session, WIDGETS)  # two ADDED events queued, only one delivered
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "w1")]
    assert rule.hits == 1


async def test_drop_watch_at_once(env: Session) -> None:
    session, injector, _ = env
    injector.drop_watch(after=0)
    assert await watch_lines(session, WIDGETS) == []


async def test_drop_watch_abort_resets_the_connection(env: Session) -> None:
    session, injector, _ = env
    injector.drop_watch(after=1, abort=True)
    received = bytearray()

    async def read_all() -> None:
        async with session.get(WIDGETS, params={"watch": "true"}) as response:
            async for chunk in response.content.iter_any():
                received.extend(chunk)

    with pytest.raises(aiohttp.ClientPayloadError):
        await read_all()
    assert json.loads(received.splitlines()[0])["object"]["metadata"]["name"] == "w1"


async def test_dropped_watch_after_later_events(env: Session) -> None:
    session, injector, cluster = env
    injector.drop_watch(after=3)
    widgets = cluster.resource("acme.example", "v1", "widgets")

    async def writer() -> None:
        await asyncio.sleep(0)
        for size in (2, 3, 4):
            cluster.patch(widgets, "default", "w1", {"spec": {"size": size}}, "application/merge-patch+json")
            await asyncio.sleep(0)

    task = asyncio.create_task(writer())
    events = await watch_lines(session, WIDGETS, timeoutSeconds="5")
    await task
    assert [e["type"] for e in events] == ["ADDED", "ADDED", "MODIFIED"]


async def test_expired_watch_in_stream(env: Session) -> None:
    session, injector, _ = env
    injector.expire_watch(count=1)
    events = await watch_lines(session, WIDGETS, resourceVersion="1")
    assert len(events) == 1 and events[0]["type"] == "ERROR"
    assert (events[0]["object"]["code"], events[0]["object"]["reason"]) == (410, "Expired")
    events = await watch_lines(session, WIDGETS, timeoutSeconds="1")
    assert [e["type"] for e in events] == ["ADDED", "ADDED"]


async def test_expired_watch_as_http_410(env: Session) -> None:
    session, injector, _ = env
    injector.expire_watch(in_stream=False)
    async with session.get(WIDGETS, params={"watch": "1"}) as response:
        assert response.status == 410
        assert (await response.json())["reason"] == "Expired"


def test_rule_validation() -> None:
    injector = FaultInjector()
    with pytest.raises(ValueError, match="probability"):
        injector.error(500, probability=2)
    with pytest.raises(ValueError, match="count"):
        injector.error(500, count=-1)
    rule = injector.latency(1)
    injector.remove(rule)
    assert injector.rules == []


async def test_an_error_after_the_write_loses_only_the_answer(env: Session) -> None:
    """A 504 after a create: the object is there; the client's retry meets it ("already exists")."""
    session, injector, cluster = env
    injector.error(504, applied=True, count=1)  # writes only
    async with session.get(f"{WIDGETS}/w1") as response:
        assert response.status == 200  # a read is not a write: untouched, not counted
    async with session.post(WIDGETS, json=widget("w3", size=3)) as response:
        assert response.status == 504
        assert (await response.json())["reason"] == "Timeout"
    resource = cluster.resource("acme.example", "v1", "widgets")
    assert cluster.get(resource, "default", "w3")["spec"]["size"] == 3
    assert await status_of(session, "POST", WIDGETS, json=widget("w3", size=3)) == 409
    assert injector.log[-1].endswith(f"error 504 after the write: POST {WIDGETS}")


async def test_an_error_after_a_refused_write_is_the_refusal(env: Session) -> None:
    session, injector, _ = env
    injector.error(504, applied=True, count=1)
    assert await status_of(session, "POST", WIDGETS, json=widget("w1", size=3)) == 409  # there already: as it is
