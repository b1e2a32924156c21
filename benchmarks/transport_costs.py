"""What an in-process transport could save per request of the operator: the ceilings, measured before it is built.

Over the in-memory HTTP transport (:mod:`kopf_sim.transports.inmemory`), a request of kopf's client goes through
aiohttp's client (session, request, connector, response), HTTP written and parsed on both sides, aiohttp's server
(protocol, request, router) and the app's middlewares (the faults, the checks' trace) before the simulator's own
handling. Here the same GET, in one world, made three more ways, each keeping less of that path:

- ``client kept``: kopf's aiohttp ``ClientSession`` as it is, with a client middleware that hands the request to
  the app (its router, middlewares and response preparation) with no connection and no HTTP: the most that a
  transport below an unchanged aiohttp client can save;
- ``app only``: the app's handling alone (a ``web.Request`` made from the request's parts, no client at all): the
  most that a transport replacing kopf's aiohttp client can save while the middlewares still see every request;
- ``direct``: the simulator's API called as the test's own client does (:mod:`kopf_sim.transports.direct`): no
  middlewares, so no faults and no trace; the floor.

And a watch event as it happens (a ConfigMap created, its event read by the watcher before the next one), read
``over HTTP`` (a chunk written, piped and parsed) and ``direct`` (the simulator's stream as the test's client reads
it); the cost of the creations alone is taken off both.

These answer GETs and read watch events only (no request bodies, no disconnects): measurements, not a transport.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import aiohttp
from aiohttp import web
from aiohttp.abc import AbstractStreamWriter
from aiohttp.client_middlewares import ClientHandlerType
from aiohttp.client_reqrep import ClientRequest, ClientResponse
from aiohttp.helpers import TimerNoop
from aiohttp.http import HttpVersion11, RawRequestMessage
from aiohttp.streams import EMPTY_PAYLOAD, StreamReader
from multidict import CIMultiDict, CIMultiDictProxy
from yarl import URL

from kopf_sim.transports.direct import DirectClient
from pytest_kopf.stateful import World

__all__ = ["event_costs", "request_costs"]

JSON_BODY = {"Content-Type": "application/json"}
_PEER = ("127.0.0.1", 49152)
_HOST = ("127.0.0.1", 80)


class _Captured(AbstractStreamWriter):
    """A response's status line, headers and body as the app writes them (no HTTP framing)."""

    def __init__(self) -> None:
        self.buffer_size = 0
        self.output_size = 0
        self.length: int | None = None
        self.chunks: list[bytes] = []

    async def write(self, chunk: bytes | bytearray | memoryview) -> None:
        self.chunks.append(bytes(chunk))
        self.output_size += len(chunk)

    async def write_eof(self, chunk: bytes = b"") -> None:
        if chunk:
            await self.write(chunk)

    async def drain(self) -> None:
        pass

    def enable_compression(self, encoding: str = "deflate", strategy: int | None = None) -> None:
        pass

    def enable_chunking(self) -> None:
        pass

    async def write_headers(self, status_line: str, headers: CIMultiDict[str]) -> None:
        pass


class _NoTransport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__({"peername": _PEER, "sockname": _HOST})

    def is_closing(self) -> bool:
        return False


class _ServerSide:
    """What ``web.Request`` reads of its server protocol."""

    ssl_context = None
    peername = _PEER
    sockname = _HOST

    def __init__(self) -> None:
        self.transport = _NoTransport()


class _Reading:
    """What a ``StreamReader`` asks of its protocol (flow control: nothing to pause here)."""

    _reading_paused = False

    def pause_reading(self) -> None:
        pass

    def resume_reading(self, **_: Any) -> None:
        pass


async def _through_app(app: web.Application, method: str, url: URL, headers: CIMultiDictProxy[str]) -> tuple[Any, Any]:
    """The app's response to a request without a body, and what it has written."""
    message = RawRequestMessage(
        method, url.raw_path_qs, HttpVersion11, headers, (), False, None, False, False, URL(url.raw_path_qs)
    )
    written = _Captured()
    task = asyncio.current_task()
    assert task is not None
    server_side: Any = _ServerSide()  # what web.Request reads of aiohttp's RequestHandler
    request = web.Request(
        message, EMPTY_PAYLOAD, server_side, written, task, asyncio.get_running_loop(), client_max_size=1 << 22
    )
    response = await app._handle(request)
    await response.prepare(request)
    await response.write_eof()
    return response, written


def _answering_from(app: web.Application) -> Callable[[ClientRequest, ClientHandlerType], Awaitable[ClientResponse]]:
    """A client middleware that answers every request from the app, with no connection."""

    async def answer(request: ClientRequest, handler: ClientHandlerType) -> ClientResponse:
        loop = asyncio.get_running_loop()
        response, written = await _through_app(app, request.method, request.url, CIMultiDictProxy(request.headers))
        answered = ClientResponse(
            request.method,
            request.url,
            writer=None,
            continue100=None,
            timer=TimerNoop(),
            request_info=request.request_info,
            traces=[],
            loop=loop,
            session=request._session,
            stream_writer=written,
        )
        answered.version, answered.status, answered.reason = HttpVersion11, response.status, response.reason
        answered._headers = CIMultiDictProxy(CIMultiDict(response.headers))
        answered._raw_headers = ()
        content = StreamReader(_Reading(), 1 << 16, loop=loop)  # type: ignore[arg-type]
        for chunk in written.chunks:
            content.feed_data(chunk)
        content.feed_eof()
        answered.content = content
        return answered

    return answer


def request_costs(world: World, path: str, count: int, rounds: int = 5) -> dict[str, float]:
    """The CPU seconds per GET of ``path`` in the world, each way (see the module's docs), ``count`` times each in
    every one of the ``rounds``."""
    connection = world.cluster.connection
    app = world.cluster.sim.app
    token = world.cluster.sim.operator_token
    headers = {"Accept": "application/json", "Authorization": f"Bearer {token}", "User-Agent": "kopf/benchmark"}

    async def timed(calls: Iterable[Callable[[], Awaitable[None]]]) -> float:
        started = time.process_time()
        for call in calls:
            await call()
        return (time.process_time() - started) / count

    async def over_http() -> float:
        connector = connection.connector_factory()
        async with aiohttp.ClientSession(connector=connector, headers=headers) as session:

            async def get() -> None:
                async with session.get(f"{connection.base_url}{path}") as response:
                    await response.read()

            return await timed([get] * count)

    async def client_kept() -> float:
        async with aiohttp.ClientSession(headers=headers, middlewares=(_answering_from(app),)) as session:

            async def get() -> None:
                async with session.get(f"{connection.base_url}{path}") as response:
                    await response.read()

            return await timed([get] * count)

    async def app_only() -> float:
        url = URL(f"{connection.base_url}{path}")
        plain = CIMultiDictProxy(CIMultiDict({"Host": url.host or "", **headers}))

        async def get() -> None:
            await _through_app(app, "GET", url, plain)

        return await timed([get] * count)

    async def direct() -> float:
        client = DirectClient(app)

        async def get() -> None:
            await (await client.request("GET", path)).close()

        return await timed([get] * count)

    ways = {"over HTTP": over_http, "client kept": client_kept, "app only": app_only, "direct": direct}
    for way in ways.values():  # warmed up (the caches of the paths and of the first answers filled)
        world.run(way())
    spent = dict.fromkeys(ways, 0.0)
    for _ in range(rounds):  # in turns: each way meets the machine's speed of the moment as often
        for label, way in ways.items():
            spent[label] += world.run(way())
    return {label: seconds / rounds for label, seconds in spent.items()}


_CONFIGMAPS = "/api/v1/namespaces/default/configmaps"


def event_costs(world: World, count: int, rounds: int = 10) -> dict[str, float]:
    """The CPU seconds per watch event delivered live (see the module's docs), over HTTP and direct.

    The ways take turns in rounds (the store grows as it goes: each way gets its share of every size).
    """
    connection = world.cluster.connection
    client = DirectClient(world.cluster.sim.app)
    names = iter(range(1 << 30))
    headers = {"Authorization": f"Bearer {world.cluster.sim.operator_token}"}
    batch = max(1, count // rounds)

    async def change() -> None:
        body = json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"cm-{next(names)}"}})
        created = await client.request("POST", _CONFIGMAPS, body=body.encode(), headers=JSON_BODY)
        await created.close()

    async def changes_alone() -> float:
        started = time.process_time()
        for _ in range(batch):
            await change()
        return time.process_time() - started

    async def over_http() -> float:
        async with aiohttp.ClientSession(connector=connection.connector_factory(), headers=headers) as session:
            url = f"{connection.base_url}{_CONFIGMAPS}?watch=true&resourceVersion={world.cluster.sim.store.rv}"
            async with session.get(url) as response:
                started = time.process_time()
                for _ in range(batch):
                    await change()
                    await response.content.readline()
                return time.process_time() - started

    async def direct() -> float:
        since = str(world.cluster.sim.store.rv)
        stream = await client.request("GET", _CONFIGMAPS, params={"watch": "true", "resourceVersion": since})
        chunks = aiter(stream.chunks())
        started = time.process_time()
        try:
            for _ in range(batch):
                await change()
                await anext(chunks)
            return time.process_time() - started
        finally:
            await stream.close()

    world.run(changes_alone())  # warmed up (the first creations of a kind cost more)
    spent = {"alone": 0.0, "over HTTP": 0.0, "direct": 0.0}
    for _ in range(rounds):
        for label, way in (("alone", changes_alone), ("over HTTP", over_http), ("direct", direct)):
            spent[label] += world.run(way())
    total = batch * rounds
    return {label: (spent[label] - spent["alone"]) / total for label in ("over HTTP", "direct")}
