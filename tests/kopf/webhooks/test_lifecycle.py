"""The lifecycle (stopping, the context manager protocol, startup failures), and the magic hostnames."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import sys

import pytest

from kopf._cogs.helpers.certificates import MissingDependencyError
from kopf._cogs.structs import reviews
from kopf._kits.webhooks import (
    WebhookDockerDesktopServer,
    WebhookK3dServer,
    WebhookMinikubeServer,
    WebhookServer,
)

from .helpers import Recorder, Serve, cabundle, is_listening, port_of, post, sans_of, ssl_context


#
# The lifecycle: stopping, the context manager protocol, startup failures.
#
async def test_closing_the_iterator_stops_the_server(fn: Recorder) -> None:
    server = WebhookServer(addr="127.0.0.1", port=0, insecure=True)
    configs = server(fn)
    config = await anext(configs)
    assert await is_listening(port_of(config))
    await configs.aclose()  # type: ignore[attr-defined]
    assert not await is_listening(port_of(config))


async def test_exiting_the_context_manager_stops_the_servers(fn: Recorder) -> None:
    async with WebhookServer(addr="127.0.0.1", port=0, insecure=True) as server:
        configs1, configs2 = server(fn), server(fn)
        config1, config2 = await anext(configs1), await anext(configs2)
        assert await is_listening(port_of(config1))
        assert await is_listening(port_of(config2))
    assert not await is_listening(port_of(config1))
    assert not await is_listening(port_of(config2))


async def test_discarded_iterators_stop_the_servers(fn: Recorder) -> None:
    config = await anext(WebhookServer(addr="127.0.0.1", port=0, insecure=True)(fn))
    gc.collect()  # usually not needed in CPython, but not guaranteed
    for _ in range(100):
        if not await is_listening(port_of(config)):
            break
        await asyncio.sleep(0.001)
    assert not await is_listening(port_of(config))


async def test_exiting_the_context_manager_while_served_in_another_task(fn: Recorder) -> None:
    started: asyncio.Queue[reviews.WebhookClientConfig] = asyncio.Queue()

    async def consume(server: WebhookServer) -> None:
        async for config in server(fn):
            await started.put(config)

    async with WebhookServer(addr="127.0.0.1", port=0, insecure=True) as server:
        task = asyncio.create_task(consume(server))
        config = await started.get()
        await asyncio.sleep(0)  # let it get back into the iterator, waiting there
        assert await is_listening(port_of(config))
    assert not await is_listening(port_of(config))
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


async def test_cancelling_the_consumer_stops_the_server(fn: Recorder) -> None:
    started: asyncio.Queue[reviews.WebhookClientConfig] = asyncio.Queue()

    async def consume() -> None:
        async for config in WebhookServer(addr="127.0.0.1", port=0, insecure=True)(fn):
            await started.put(config)

    task = asyncio.create_task(consume())
    config = await started.get()
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    assert not await is_listening(port_of(config))


async def test_busy_port_fails_at_startup(serve: Serve, fn: Recorder) -> None:
    config, _ = await serve(WebhookServer(addr="127.0.0.1", port=0, insecure=True))
    with pytest.raises(OSError):
        async with WebhookServer(addr="127.0.0.1", port=port_of(config), insecure=True) as other:
            await anext(other(fn))


async def test_missing_cryptography_fails_at_startup_with_advice(
    monkeypatch: pytest.MonkeyPatch, fn: Recorder, serve: Serve
) -> None:
    monkeypatch.setitem(sys.modules, "cryptography", None)  # makes it unimportable
    with pytest.raises(MissingDependencyError, match=r"pip install kopf\[dev\]"):
        await anext(WebhookServer(addr="127.0.0.1", port=0)(fn))
    with pytest.raises(ImportError):  # the same, for those who catch the generic one
        await anext(WebhookK3dServer(addr="127.0.0.1", port=0)(fn))

    # Insecure servers need no certificates, and so no cryptography:
    config, _ = await serve(WebhookServer(addr="127.0.0.1", port=0, insecure=True))
    assert (await post(f"{config.get('url')}/h1"))[0] == 200


#
# Servers with magic hostnames.
#
@pytest.mark.parametrize(
    ("cls", "host"),
    [
        (WebhookK3dServer, "host.k3d.internal"),
        (WebhookMinikubeServer, "host.minikube.internal"),
        (WebhookDockerDesktopServer, "host.docker.internal"),
    ],
)
async def test_magic_hostnames(serve: Serve, fn: Recorder, cls: type[WebhookServer], host: str) -> None:
    assert host == cls.DEFAULT_HOST
    config, _ = await serve(cls(addr="127.0.0.1", port=0, path="/hooks"))
    assert config.get("url") == f"https://{host}:{port_of(config)}/hooks"
    cn, sans = sans_of(cabundle(config))
    assert cn == host
    assert sans == [host, "127.0.0.1"]
    # The same server, reached locally (as the magic hostname leads there from the cluster):
    status, _ = await post(f"https://127.0.0.1:{port_of(config)}/hooks/h1", context=ssl_context(cabundle(config)))
    assert status == 200
    assert fn.calls[0].webhook == "h1"


async def test_magic_servers_can_be_overridden(serve: Serve) -> None:
    config, _ = await serve(WebhookK3dServer(addr="127.0.0.1", port=0, host="k3d.example.com"))
    assert config.get("url") == f"https://k3d.example.com:{port_of(config)}"


async def test_magic_servers_listen_on_all_interfaces_by_default() -> None:
    assert await WebhookK3dServer()._endpoint() == ("host.k3d.internal", "0.0.0.0")
    assert await WebhookMinikubeServer(addr="127.0.0.1")._endpoint() == ("host.minikube.internal", "127.0.0.1")
    assert await WebhookServer()._endpoint() == (None, "localhost")
    assert await WebhookServer(host="example.com")._endpoint() == ("example.com", "localhost")
