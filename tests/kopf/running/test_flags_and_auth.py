"""Stop & ready flags of all supported kinds; kopf.run() synchronously; re-authentication on HTTP 401."""

from __future__ import annotations

import asyncio
import concurrent.futures
import signal
import threading
from typing import Any

import pytest

import kopf
from kopf._cogs.structs.credentials import ConnectionInfo, Vault
from kopf._core.reactor import running
from kopf_sim.http.app import build_app
from kopf_sim.store.cluster import Cluster
from kopf_sim.transports.inmemory import DEFAULT_BASE_URL, InMemoryServer
from kopf_sim.transports.serving import bearer_token_middleware
from tests.helpers import example, wait_for

from .conftest import kex, peek


@pytest.mark.parametrize(
    "make_flag",
    [
        lambda: asyncio.get_running_loop().create_future(),
        lambda: asyncio.Event(),
        lambda: concurrent.futures.Future(),
        lambda: threading.Event(),
    ],
    ids=["asyncio-future", "asyncio-event", "concurrent-future", "threading-event"],
)
async def test_flags_are_raised_and_awaited(make_flag: Any) -> None:
    flag = make_flag()
    waiter = asyncio.create_task(running.wait_flag(flag))
    await asyncio.sleep(0)
    assert not waiter.done()
    running.raise_flag(flag)
    running.raise_flag(flag)  # idempotent
    await asyncio.wait_for(waiter, timeout=5)


async def test_unsupported_flags_fail() -> None:
    with pytest.raises(TypeError):
        running.raise_flag(object())  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        await running.wait_flag(object())  # type: ignore[arg-type]


def test_sync_run_with_a_threading_stop_flag(registry: kopf.OperatorRegistry) -> None:
    stop_flag = threading.Event()
    ready_flag: concurrent.futures.Future[Any] = concurrent.futures.Future()
    calls: list[str] = []

    @kopf.on.startup()
    def startup_fn(**_: Any) -> None:
        calls.append("startup")

    @kopf.on.login()
    def login_fn(**_: Any) -> ConnectionInfo:
        return ConnectionInfo(server="http://127.0.0.1:9")  # nothing listens there: never reached anyway.

    @kopf.on.cleanup()
    def cleanup_fn(**_: Any) -> None:
        calls.append("cleanup")

    def stop_when_ready() -> None:
        ready_flag.result(timeout=10)
        stop_flag.set()

    stopper = threading.Thread(target=stop_when_ready)
    stopper.start()
    settings = kopf.OperatorSettings()
    settings.peering.standalone = True
    kopf.run(registry=registry, settings=settings, clusterwide=True, stop_flag=stop_flag, ready_flag=ready_flag)
    stopper.join()
    assert calls == ["startup", "cleanup"]


@pytest.mark.parametrize("os_signals", [True, False])
def test_os_signals_are_taken_unless_the_embedder_keeps_them(registry: kopf.OperatorRegistry, os_signals: bool) -> None:
    handlers: list[Any] = []
    original = signal.getsignal(signal.SIGTERM)  # asyncio.run() takes SIGINT itself; only kopf takes SIGTERM

    @kopf.on.startup()
    async def startup_fn(**_: Any) -> None:
        handlers.append(signal.getsignal(signal.SIGTERM))

    @kopf.on.login()
    def login_fn(**_: Any) -> ConnectionInfo:
        return ConnectionInfo(server="http://127.0.0.1:9")  # nothing listens there: never reached anyway.

    stop_flag = threading.Event()
    ready_flag: concurrent.futures.Future[Any] = concurrent.futures.Future()
    stopper = threading.Thread(target=lambda: (ready_flag.result(timeout=10), stop_flag.set()))
    stopper.start()
    settings = kopf.OperatorSettings()
    settings.peering.standalone = True
    token = running.os_signals_var.set(os_signals)
    try:
        kopf.run(registry=registry, settings=settings, clusterwide=True, stop_flag=stop_flag, ready_flag=ready_flag)
    finally:
        running.os_signals_var.reset(token)
        stopper.join()
    assert (handlers[0] is not original) == os_signals  # asyncio's own handler while the operator runs
    assert signal.getsignal(signal.SIGTERM) is original  # and restored after it


@pytest.mark.looptime
async def test_re_login_when_the_credentials_are_rejected(
    registry: kopf.OperatorRegistry, settings: kopf.OperatorSettings, cluster: Cluster
) -> None:
    app = build_app(cluster)
    app.middlewares.insert(0, bearer_token_middleware("good-token"))
    tokens = iter(["bad-token", "good-token"])
    logins: list[str] = []

    async with InMemoryServer(app) as server:

        @kopf.on.login()
        def login_fn(**_: Any) -> ConnectionInfo:
            token = next(tokens)
            logins.append(token)
            return ConnectionInfo(server=DEFAULT_BASE_URL, token=token).with_connector_factory(server.connector)

        @kopf.on.create("kopfexamples")
        def create_fn(**_: Any) -> str:
            return "done"

        stop_flag = asyncio.Event()
        task = asyncio.create_task(
            kopf.operator(registry=registry, settings=settings, vault=Vault(), clusterwide=True, stop_flag=stop_flag)
        )
        cluster.create(kex(cluster), "default", example("ex1"))
        await wait_for(lambda: (peek(cluster, "default", "ex1") or {}).get("status", {}).get("create_fn"))
        assert logins == ["bad-token", "good-token"]
        stop_flag.set()
        await asyncio.wait_for(task, timeout=30)
