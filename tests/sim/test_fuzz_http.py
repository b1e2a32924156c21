"""Hostile and careless requests against a served simulator (HTTP on 127.0.0.1): never a 5xx, never slow.

Every response must be below 500; every error a ``kind: Status`` in JSON with its code; a refused
request (4xx) must leave the store as it was; no request may cost the server more than a second of CPU
(CPU time of the server's thread, not wall time: the machine's load does not matter); and the process
must not grow by more than a bounded amount over the run. CI runs a bounded profile (a few seconds);
``benchmarks/fuzz_sim.py`` runs the same checks for longer.
"""

from __future__ import annotations

import asyncio
import json

import pytest
from hypothesis import HealthCheck, given, settings

from .hostile import TOKEN, Outcome, Request, ServedSim, hand_written, requests

MAX_CPU_SECONDS = 1.0
MAX_RSS_GROWTH_MB = 150


def rss_mb() -> float:
    import os

    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1024 / 1024


def check(request: Request, outcome: Outcome) -> None:
    """What must hold for any request, whatever it is."""
    what = request.describe()
    assert outcome.status < 500, f"{outcome.status} for {what}: {outcome.body[:500]!r}"
    assert outcome.cpu_seconds < MAX_CPU_SECONDS, f"{outcome.cpu_seconds:.2f}s of CPU for {what}"
    if outcome.status >= 400 and request.method != "HEAD":
        assert outcome.content_type.startswith("application/json"), f"{outcome.content_type} for {what}"
        status = json.loads(outcome.body)
        assert status["kind"] == "Status" and status["code"] == outcome.status, f"{status} for {what}"
        assert not outcome.store_changed, f"the store changed on a {outcome.status} for {what}"


@pytest.fixture(scope="module")
def sim() -> ServedSim:  # type: ignore[misc]
    with ServedSim() as served:
        yield served


@pytest.mark.parametrize("request_", hand_written(), ids=lambda r: r.describe()[:60])
def test_hand_written_hostile_requests(sim: ServedSim, request_: Request) -> None:
    check(request_, sim.send(request_))


@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(request_=requests())
def test_any_request_is_answered_within_bounds(sim: ServedSim, request_: Request) -> None:
    check(request_, sim.send(request_))


def test_memory_stays_bounded_over_the_run(sim: ServedSim) -> None:
    """After all of the above (the module's requests on the same server): more of them grow nothing much."""
    before = rss_mb()
    for request_ in hand_written() * 2:
        check(request_, sim.send(request_))
    assert rss_mb() - before < MAX_RSS_GROWTH_MB


def test_a_non_utf8_authorization_header_is_unauthorized(sim: ServedSim) -> None:
    async def raw_request() -> bytes:
        host, port = sim.url.removeprefix("http://").split(":")
        reader, writer = await asyncio.open_connection(host, int(port))
        writer.write(
            b"GET /api/v1/namespaces HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \xff\xfe"
            + TOKEN.encode()
            + b"\r\nConnection: close\r\n\r\n"
        )
        await writer.drain()
        data = await reader.read()
        writer.close()
        return data

    response = sim.run(raw_request())
    head, _, body = response.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 401")
    assert json.loads(body)["reason"] == "Unauthorized"


@pytest.mark.parametrize("path", ["/healthz", "/livez", "/readyz", "/version"])
def test_health_and_version_are_public(sim: ServedSim, path: str) -> None:
    outcome = sim.send(Request("GET", path, authorized=False))
    assert outcome.status == 200


@pytest.mark.parametrize("path", ["/api", "/apis", "/openapi/v3", "/api/v1/namespaces"])
def test_everything_else_needs_the_token(sim: ServedSim, path: str) -> None:
    assert sim.send(Request("GET", path, authorized=False)).status == 401
    assert sim.send(Request("GET", path, headers=(("Authorization", "Bearer wrong"),))).status == 401
    assert sim.send(Request("GET", path)).status == 200
