"""The liveness endpoint: probe handlers' results as JSON, cached; served on loopback only."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

import kopf
from kopf._cogs.structs.credentials import Vault
from kopf._core.engines import probing


@pytest.fixture
async def serve(registry: kopf.OperatorRegistry, settings: kopf.OperatorSettings) -> AsyncIterator[Any]:
    tasks: list[asyncio.Task[None]] = []

    async def serve_(cache_period: float = 10.0) -> str:
        ready: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        tasks.append(
            asyncio.create_task(
                probing.health_reporter(
                    "http://127.0.0.1:0/healthz",
                    registry=registry,
                    settings=settings,
                    ready_flag=ready,
                    cache_period=cache_period,
                )
            )
        )
        host, port = await asyncio.wait_for(ready, timeout=5)
        return f"http://{host}:{port}/healthz"

    yield serve_
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


async def get(url: str) -> tuple[int, Any]:
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        return response.status, await response.json()


def test_endpoint_parsing() -> None:
    assert probing.parse_endpoint("http://0.0.0.0:8080/healthz") == ("0.0.0.0", 8080, "/healthz")
    assert probing.parse_endpoint("http://localhost:1234") == ("localhost", 1234, "/")
    with pytest.raises(ValueError, match="http://"):
        probing.parse_endpoint("https://localhost:1234/")


async def test_no_probes_give_an_empty_object(serve: Any) -> None:
    url = await serve()
    assert await get(url) == (200, {})


async def test_probe_results_by_ids_and_cached(registry: kopf.OperatorRegistry, serve: Any) -> None:
    counter = {"calls": 0}

    @kopf.on.probe(id="counter")
    def count_fn(**_: Any) -> int:
        counter["calls"] += 1
        return counter["calls"]

    @kopf.on.probe(id="static")
    async def static_fn(**_: Any) -> dict[str, str]:
        return {"key": "value"}

    url = await serve(cache_period=3600)
    assert await get(url) == (200, {"counter": 1, "static": {"key": "value"}})
    assert await get(url) == (200, {"counter": 1, "static": {"key": "value"}})
    assert counter["calls"] == 1


async def test_probes_rerun_after_the_cache_period(registry: kopf.OperatorRegistry, serve: Any) -> None:
    counter = {"calls": 0}

    @kopf.on.probe(id="counter")
    def count_fn(**_: Any) -> int:
        counter["calls"] += 1
        return counter["calls"]

    url = await serve(cache_period=0)
    assert (await get(url))[1] == {"counter": 1}
    assert (await get(url))[1] == {"counter": 2}


async def test_failed_probes_make_an_error(registry: kopf.OperatorRegistry, serve: Any) -> None:

    @kopf.on.probe(id="broken", errors=kopf.ErrorsMode.PERMANENT)
    def broken_fn(**_: Any) -> None:
        raise ValueError("the database is down")

    url = await serve()
    status, data = await get(url)
    assert status == 500 and data == {"errors": {"broken": "the database is down"}}


@pytest.mark.parametrize(
    "error", [ValueError("the database is down"), kopf.TemporaryError("the database is down", delay=60)]
)
async def test_failing_probes_answer_at_once_and_are_retried_by_the_next_request(
    registry: kopf.OperatorRegistry, serve: Any, error: Exception
) -> None:
    # Not retried within the request after the back-off (60 s by default): the probe's timeout is ~1 s.
    calls: list[int] = []

    @kopf.on.probe(id="flaky")
    def flaky_fn(retry: int, **_: Any) -> str:
        calls.append(retry)
        if len(calls) == 1:
            raise error
        return "fine"

    url = await serve(cache_period=3600)
    status, data = await asyncio.wait_for(get(url), timeout=10)
    assert status == 500 and data == {"errors": {"flaky": "the database is down"}}
    assert await asyncio.wait_for(get(url), timeout=10) == (200, {"flaky": "fine"})  # failures are not cached
    assert calls == [0, 0]


async def test_the_operator_serves_the_liveness_endpoint(
    registry: kopf.OperatorRegistry, settings: kopf.OperatorSettings, vault: Vault
) -> None:

    @kopf.on.probe(id="alive")
    def alive_fn(**_: Any) -> bool:
        return True

    with socket.socket() as sock:  # a free port on loopback (it is released right away)
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    stop_flag, ready_flag = asyncio.Event(), asyncio.Event()
    task = asyncio.create_task(
        kopf.operator(
            registry=registry,
            settings=settings,
            vault=vault,
            clusterwide=True,
            liveness_endpoint=f"http://127.0.0.1:{port}/healthz",
            stop_flag=stop_flag,
            ready_flag=ready_flag,
        )
    )
    await asyncio.wait_for(ready_flag.wait(), timeout=10)
    for _ in range(100):
        try:
            result = await get(f"http://127.0.0.1:{port}/healthz")
            break
        except aiohttp.ClientConnectionError:
            await asyncio.sleep(0.01)
    assert result == (200, {"alive": True})
    stop_flag.set()
    await asyncio.wait_for(task, timeout=10)
    with pytest.raises(aiohttp.ClientConnectionError):
        await get(f"http://127.0.0.1:{port}/healthz")
