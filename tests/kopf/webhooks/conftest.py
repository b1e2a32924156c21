"""The servers under test are served by the ``serve`` fixture, and stopped at the end of their test."""

from __future__ import annotations

import asyncio
import contextlib
import sys
import types
from collections.abc import AsyncIterator
from typing import Any

import pytest

from kopf._cogs.structs import reviews

from .helpers import Recorder, Serve


@pytest.fixture
def fn() -> Recorder:
    return Recorder()


@pytest.fixture
async def serve(fn: Recorder) -> AsyncIterator[Serve]:
    """Start a server/tunnel, return its first client config and the iterator for more of them."""
    iterators: list[AsyncIterator[reviews.WebhookClientConfig]] = []  # not garbage-collected while in use
    async with contextlib.AsyncExitStack() as stack:

        async def start(
            server: Any, callback: Any = fn
        ) -> tuple[reviews.WebhookClientConfig, AsyncIterator[reviews.WebhookClientConfig]]:
            await stack.enter_async_context(server)
            configs = server(callback)
            iterators.append(configs)
            config = await asyncio.wait_for(anext(configs), timeout=5)
            return config, configs

        yield start


@pytest.fixture
def fake_pyngrok(monkeypatch: pytest.MonkeyPatch) -> types.SimpleNamespace:
    state = types.SimpleNamespace(configs=[], connected=[], disconnected=[])

    class PyngrokConfig:
        def __init__(self, **kwargs: Any) -> None:
            self.kwargs = kwargs
            state.configs.append(kwargs)

    def connect(addr: str, **kwargs: Any) -> Any:
        state.connected.append((addr, kwargs))
        return types.SimpleNamespace(public_url="https://abc123.ngrok.example/")

    def disconnect(public_url: str, **kwargs: Any) -> None:
        state.disconnected.append(public_url)

    package = types.ModuleType("pyngrok")
    conf = types.ModuleType("pyngrok.conf")
    ngrok = types.ModuleType("pyngrok.ngrok")
    conf.PyngrokConfig = PyngrokConfig  # type: ignore[attr-defined]
    ngrok.connect = connect  # type: ignore[attr-defined]
    ngrok.disconnect = disconnect  # type: ignore[attr-defined]
    package.conf = conf  # type: ignore[attr-defined]
    package.ngrok = ngrok  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "pyngrok", package)
    monkeypatch.setitem(sys.modules, "pyngrok.conf", conf)
    monkeypatch.setitem(sys.modules, "pyngrok.ngrok", ngrok)
    return state
