"""Byte-level edge cases of watch-streams that the simulator never produces (served by aresponses)."""

import asyncio
import json
import logging
from typing import Any

import pytest
from aiohttp import web
from aresponses import ResponsesMockServer
from aresponses.main import RawResponse

from kopf._cogs.clients import watching
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.structs.credentials import ConnectionInfo, Vault

from .conftest import WIDGETS

HOST = "fake-apiserver.local"
PATH = "/apis/acme.example/v1/namespaces/default/widgets"


def obj(name: str, rv: str) -> dict[str, Any]:
    return {
        "apiVersion": "acme.example/v1",
        "kind": "Widget",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}", "resourceVersion": rv},
    }


def line(type: str, name: str, rv: str) -> bytes:
    return json.dumps({"type": type, "object": obj(name, rv)}).encode() + b"\n"


def listing(rv: str) -> web.Response:
    return web.json_response(
        {"kind": "WidgetList", "apiVersion": "acme.example/v1", "metadata": {"resourceVersion": rv}, "items": []}
    )


def raw_stream(body: bytes) -> web.StreamResponse:
    # No Content-Length and no chunking: the body lasts until the server closes the connection.
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"
    response: web.StreamResponse = RawResponse(head + body)
    return response


@pytest.fixture
def settings() -> OperatorSettings:
    settings = OperatorSettings()
    settings.watching.reconnect_backoff = 0
    settings.networking.error_backoffs = []
    return settings


async def watch_until(vault: Vault, settings: OperatorSettings, count: int) -> list[Any]:
    events: list[Any] = []
    stop = asyncio.Event()
    async with asyncio.timeout(10):
        async for event in watching.infinite_watch(
            resource=WIDGETS, namespace="default", settings=settings, vault=vault, stop=stop
        ):
            assert not isinstance(event, watching.Bookmark)
            events.append((event["type"], event["object"].get("metadata", {}).get("name")))
            if len(events) >= count:
                stop.set()
    return events


async def test_malformed_lines_are_skipped_with_errors_logged(
    aresponses: ResponsesMockServer, settings: OperatorSettings, caplog: pytest.LogCaptureFixture
) -> None:
    seen_rvs: list[str] = []

    def handler(request: web.Request) -> web.StreamResponse:
        seen_rvs.append(request.query.get("resourceVersion", ""))
        if len(seen_rvs) == 1:
            return raw_stream(
                line("ADDED", "a", "11") + b"{not json at all\n" + b"[1, 2, 3]\n" + b"\n" + line("ADDED", "b", "12")
            )
        return raw_stream(line("ADDED", "c", "13"))

    aresponses.add(HOST, PATH, "GET", lambda r: listing("10"), repeat=1)
    aresponses.add(HOST, PATH, "GET", handler, repeat=aresponses.INFINITY)
    caplog.set_level(logging.ERROR)
    async with Vault({"x": ConnectionInfo(f"http://{HOST}")}) as vault:
        events = await watch_until(vault, settings, 3)
    assert events == [("ADDED", "a"), ("ADDED", "b"), ("ADDED", "c")]
    assert seen_rvs[:2] == ["10", "12"]
    assert "malformed watch-event" in caplog.text
    assert "unexpected watch-event" in caplog.text


async def test_truncated_streams_resume_from_the_last_complete_event(
    aresponses: ResponsesMockServer, settings: OperatorSettings, caplog: pytest.LogCaptureFixture
) -> None:
    seen_rvs: list[str] = []

    def handler(request: web.Request) -> web.StreamResponse:
        seen_rvs.append(request.query.get("resourceVersion", ""))
        if len(seen_rvs) == 1:
            return raw_stream(line("ADDED", "a", "11") + line("ADDED", "b", "12")[:25])  # cut midway
        if len(seen_rvs) == 2:
            return raw_stream(line("ADDED", "b", "12").rstrip(b"\n"))  # complete, but with no newline
        return raw_stream(line("MODIFIED", "b", "13"))

    aresponses.add(HOST, PATH, "GET", lambda r: listing("10"), repeat=1)
    aresponses.add(HOST, PATH, "GET", handler, repeat=aresponses.INFINITY)
    caplog.set_level(logging.ERROR)
    async with Vault({"x": ConnectionInfo(f"http://{HOST}")}) as vault:
        events = await watch_until(vault, settings, 3)
    assert events == [("ADDED", "a"), ("ADDED", "b"), ("MODIFIED", "b")]
    assert seen_rvs[:3] == ["10", "11", "12"]
    assert "truncated watch-event" in caplog.text


async def test_in_stream_410_relists(aresponses: ResponsesMockServer, settings: OperatorSettings) -> None:
    expired = {"type": "ERROR", "object": {"kind": "Status", "code": 410, "reason": "Expired", "message": "old"}}
    aresponses.add(HOST, PATH, "GET", lambda r: listing("10"), repeat=1)
    aresponses.add(HOST, PATH, "GET", lambda r: raw_stream(json.dumps(expired).encode() + b"\n"), repeat=1)
    aresponses.add(
        HOST,
        PATH,
        "GET",
        lambda r: web.json_response(
            {"kind": "WidgetList", "metadata": {"resourceVersion": "20"}, "items": [obj("a", "15")]}
        ),
        repeat=1,
    )
    aresponses.add(HOST, PATH, "GET", lambda r: raw_stream(line("DELETED", "a", "21")), repeat=aresponses.INFINITY)
    async with Vault({"x": ConnectionInfo(f"http://{HOST}")}) as vault:
        events = await watch_until(vault, settings, 2)
    assert events == [(None, "a"), ("DELETED", "a")]  # new since the first listing: as listed
