"""The in-memory transport: aiohttp clients talking to aiohttp apps with no sockets."""

from __future__ import annotations

import asyncio
import io
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from kopf_sim.transports.inmemory import (
    HIGH_WATER,
    InMemoryConnector,
    InMemoryServer,
    _connect_pipe,
    in_memory_session,
)

WATCH_GAP = 10.0


class Probe:
    """What the test app saw: lifecycle calls, requests, handler outcomes."""

    def __init__(self) -> None:
        self.lifecycle: list[str] = []
        self.watch_started = asyncio.Event()
        self.watch_outcome: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self.handler_cancellation = True


def make_app(probe: Probe) -> web.Application:
    """A small app resembling an API server: JSON, echo, big bodies, watch-streams."""

    async def lifecycle(app: web.Application) -> AsyncIterator[None]:
        probe.lifecycle.append("startup")
        yield
        probe.lifecycle.append("cleanup")

    async def on_shutdown(app: web.Application) -> None:
        probe.lifecycle.append("shutdown")

    async def info(request: web.Request) -> web.Response:
        peername = request.transport.get_extra_info("peername") if request.transport else None
        return web.json_response(
            {
                "remote": request.remote,
                "peername": list(peername) if peername else None,
                "secure": request.secure,
                "host": request.host,
                "headers": [[k.decode(), v.decode()] for k, v in request.raw_headers],
            }
        )

    async def echo(request: web.Request) -> web.Response:
        body = await request.read()
        return web.Response(body=body, content_type=request.content_type)

    async def big(request: web.Request) -> web.Response:
        size = int(request.query["size"])
        return web.Response(body=b"x" * size)

    async def watch(request: web.Request) -> web.StreamResponse:
        count = int(request.query.get("count", "1000000"))
        response = web.StreamResponse()
        response.content_type = "application/json"
        await response.prepare(request)
        probe.watch_started.set()
        try:
            for i in range(count):
                await asyncio.sleep(WATCH_GAP)
                event = {"type": "ADDED", "object": {"metadata": {"name": f"obj{i}"}}}
                await response.write(json.dumps(event).encode() + b"\n")
        except asyncio.CancelledError:
            probe.watch_outcome.set_result("cancelled")
            raise
        except ConnectionResetError:
            probe.watch_outcome.set_result("reset")
            raise
        await response.write_eof()
        probe.watch_outcome.set_result("finished")
        return response

    app = web.Application(client_max_size=16 * 1024 * 1024)
    app.cleanup_ctx.append(lifecycle)
    app.on_shutdown.append(on_shutdown)
    app.router.add_get("/info", info)
    app.router.add_post("/echo", echo)
    app.router.add_get("/big", big)
    app.router.add_get("/watch", watch)
    return app


@pytest.fixture
async def probe() -> Probe:
    return Probe()


@pytest.fixture
def app(probe: Probe) -> web.Application:
    return make_app(probe)


async def test_plain_request_and_owned_lifecycle(app: web.Application, probe: Probe) -> None:
    async with in_memory_session(app) as session:
        assert probe.lifecycle == []  # started lazily, on the first connection
        async with session.get("/info") as resp:
            assert resp.status == 200
            data = await resp.json()
        async with session.get("/info") as resp:
            assert resp.status == 200
        assert probe.lifecycle == ["startup"]
    assert probe.lifecycle == ["startup", "shutdown", "cleanup"]
    assert data["remote"] == "127.0.0.1"
    assert data["peername"][0] == "127.0.0.1"
    assert isinstance(data["peername"][1], int)
    assert data["secure"] is False
    assert data["host"] == "kopf-sim.local"


async def test_server_starts_once_for_many_sessions(app: web.Application, probe: Probe) -> None:
    async with InMemoryServer(app) as server:
        assert probe.lifecycle == ["startup"]
        async with server.session() as s1, server.session() as s2, in_memory_session(server) as s3:
            for session in (s1, s2, s3):
                async with session.get("/info") as resp:
                    assert resp.status == 200
        assert probe.lifecycle == ["startup"]
    assert probe.lifecycle == ["startup", "shutdown", "cleanup"]


async def test_headers_arrive_exactly_as_sent(app: web.Application) -> None:
    headers = {"Authorization": "Bearer s3cr3t", "X-Custom": "Some  Value"}
    async with in_memory_session(app) as session, session.get("/info", headers=headers) as resp:
        data = await resp.json()
    received = dict(map(tuple, data["headers"]))
    assert received["Authorization"] == "Bearer s3cr3t"
    assert received["X-Custom"] == "Some  Value"
    assert received["Host"] == "kopf-sim.local"


async def test_request_bodies_plain_and_chunked(app: web.Application) -> None:
    async def chunks() -> AsyncIterator[bytes]:
        for i in range(100):
            yield f"chunk{i};".encode()

    big_body = bytes(range(256)) * 8192  # 2 MiB: beyond the flow-control water marks
    async with in_memory_session(app) as session:
        async with session.post("/echo", json={"spec": {"x": 1}}) as resp:
            assert await resp.json() == {"spec": {"x": 1}}
        async with session.post("/echo", data=chunks()) as resp:
            assert await resp.read() == b"".join([f"chunk{i};".encode() for i in range(100)])
        async with session.post("/echo", data=io.BytesIO(big_body)) as resp:
            assert await resp.read() == big_body


async def test_big_response(app: web.Application) -> None:
    size = 8 * 1024 * 1024
    async with in_memory_session(app) as session, session.get("/big", params={"size": size}) as resp:
        body = await resp.read()
    assert len(body) == size


async def test_many_concurrent_requests(app: web.Application) -> None:
    async def one(session: aiohttp.ClientSession, i: int) -> Any:
        async with session.post("/echo", json={"i": i}) as resp:
            return await resp.json()

    async with InMemoryServer(app) as server, server.session() as session:
        results = await asyncio.gather(*(one(session, i) for i in range(300)))
    assert results == [{"i": i} for i in range(300)]


async def test_connection_reuse(app: web.Application) -> None:
    async def client_ports(**connector_kwargs: Any) -> set[int]:
        ports = set()
        async with in_memory_session(app, connector_kwargs=connector_kwargs) as session:
            for _ in range(3):
                async with session.get("/info") as resp:
                    ports.add((await resp.json())["peername"][1])
        return ports

    assert len(await client_ports()) == 1
    assert len(await client_ports(force_close=True)) == 3


@pytest.mark.looptime
async def test_watch_stream_in_virtual_time(app: web.Application, probe: Probe) -> None:
    loop = asyncio.get_running_loop()
    wall_start, loop_start = time.perf_counter(), loop.time()
    async with InMemoryServer(app) as server, server.session() as session:
        events = []
        async with session.get("/watch", params={"count": "3"}) as resp:
            assert resp.status == 200
            async for line in resp.content:
                events.append((loop.time() - loop_start, json.loads(line)))
    wall_time = time.perf_counter() - wall_start
    assert [round(t) for t, _ in events] == [10, 20, 30]
    assert [e["object"]["metadata"]["name"] for _, e in events] == ["obj0", "obj1", "obj2"]
    assert all(e["type"] == "ADDED" for _, e in events)
    assert probe.watch_outcome.result() == "finished"
    assert wall_time < 3.0  # 30 virtual seconds in milliseconds; a margin for loaded machines


@pytest.mark.looptime
async def test_client_closing_a_stream_cancels_the_handler(app: web.Application, probe: Probe) -> None:
    async with InMemoryServer(app) as server, server.session() as session:
        async with session.get("/watch") as resp:
            line = await resp.content.readline()
            assert json.loads(line)["object"]["metadata"]["name"] == "obj0"
        # Leaving the response unread closes the connection: the server sees a disconnect.
        assert await probe.watch_outcome == "cancelled"
        assert asyncio.get_running_loop().time() < WATCH_GAP * 2
        async with session.get("/info") as resp:  # the session is still usable
            assert resp.status == 200


@pytest.mark.looptime
async def test_cancelling_the_client_task_cancels_the_handler(app: web.Application, probe: Probe) -> None:
    async def consume(session: aiohttp.ClientSession) -> None:
        async with session.get("/watch") as resp:
            async for _ in resp.content:
                pass

    async with InMemoryServer(app) as server, server.session() as session:
        task = asyncio.create_task(consume(session))
        await asyncio.sleep(WATCH_GAP * 2.5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await probe.watch_outcome == "cancelled"
        assert asyncio.get_running_loop().time() == pytest.approx(WATCH_GAP * 2.5)


@pytest.mark.looptime
async def test_client_read_timeouts_run_in_loop_time(app: web.Application, probe: Probe) -> None:
    timeout = aiohttp.ClientTimeout(sock_read=WATCH_GAP / 2)
    async with InMemoryServer(app) as server, server.session(timeout=timeout) as session:
        async with session.get("/watch") as resp:
            with pytest.raises(asyncio.TimeoutError):
                await resp.content.readline()
        assert asyncio.get_running_loop().time() == pytest.approx(WATCH_GAP / 2)
        assert await probe.watch_outcome == "cancelled"


@pytest.mark.looptime
async def test_without_handler_cancellation_the_next_write_fails(app: web.Application, probe: Probe) -> None:
    async with InMemoryServer(app, handler_cancellation=False) as server, server.session() as session:
        async with session.get("/watch") as resp:
            await resp.content.readline()
        assert await probe.watch_outcome == "reset"


@pytest.mark.looptime
async def test_server_shutdown_ends_open_streams(app: web.Application, probe: Probe) -> None:
    server = InMemoryServer(app, shutdown_timeout=5)
    await server.start()
    try:
        async with server.session() as session:
            async with session.get("/watch") as resp:
                await probe.watch_started.wait()
                stopping = asyncio.create_task(server.stop())
                with pytest.raises(aiohttp.ClientPayloadError):
                    async for _ in resp.content:
                        pass
                await stopping
            assert probe.lifecycle == ["startup", "shutdown", "cleanup"]
            assert probe.watch_outcome.done()
            with pytest.raises(aiohttp.ClientConnectorError):
                await session.get("/info")
    finally:
        await server.stop()


async def test_idle_connections_are_closed_on_shutdown(app: web.Application) -> None:
    async with InMemoryServer(app) as server, server.session() as session:
        async with session.get("/info") as resp:
            await resp.read()
        low_level = server.server
        assert len(low_level.connections) == 1
        await server.stop()
        assert low_level.connections == []
        assert not server.running


async def test_low_level_server_as_a_protocol_factory() -> None:
    async def handler(request: web.BaseRequest) -> web.Response:
        return web.Response(text=f"{request.method} {request.path}")

    low_level = web.Server(handler)
    connector = InMemoryConnector(low_level)
    async with aiohttp.ClientSession("http://x", connector=connector) as session, session.get("/hi") as resp:
        assert await resp.text() == "GET /hi"
    await low_level.shutdown()


async def test_https_urls_are_rejected(app: web.Application) -> None:
    async with in_memory_session(app) as session:
        with pytest.raises(aiohttp.NonHttpUrlClientError):
            await session.get("https://kopf-sim.local/info")


async def test_websockets_work_too() -> None:
    async def ws_echo(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        async for msg in ws:
            await ws.send_str(msg.data.upper())
        return ws

    app = web.Application()
    app.router.add_get("/ws", ws_echo)
    async with in_memory_session(app) as session, session.ws_connect("/ws") as ws:
        await ws.send_str("hello")
        assert await ws.receive_str() == "HELLO"


class RecordingProtocol(asyncio.Protocol):
    """A bare protocol that records what a pipe end does to it."""

    def __init__(self) -> None:
        self.events: list[Any] = []
        self.transport: asyncio.BaseTransport | None = None
        self.lost: asyncio.Future[Exception | None] = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.events.append(data)

    def eof_received(self) -> None:
        self.events.append("eof")

    def pause_writing(self) -> None:
        self.events.append("pause_writing")

    def resume_writing(self) -> None:
        self.events.append("resume_writing")

    def connection_lost(self, exc: Exception | None) -> None:
        self.events.append("lost")
        self.lost.set_result(exc)


def make_pipe() -> tuple[RecordingProtocol, RecordingProtocol, asyncio.Transport, asyncio.Transport]:
    a, b = RecordingProtocol(), RecordingProtocol()
    _connect_pipe(asyncio.get_running_loop(), a, b, client_port=50000, server_port=80)
    assert isinstance(a.transport, asyncio.Transport)
    assert isinstance(b.transport, asyncio.Transport)
    return a, b, a.transport, b.transport


async def test_pipe_close_delivers_pending_bytes_then_eof() -> None:
    a, b, ta, tb = make_pipe()
    ta.write(b"hello ")
    ta.write(b"world")
    ta.close()
    assert ta.is_closing()
    ta.write(b"dropped")
    assert await b.lost is None
    assert await a.lost is None
    assert b.events == [b"hello ", b"world", "eof", "lost"]
    assert a.events == ["lost"]
    assert tb.get_extra_info("peername") == ("127.0.0.1", 50000)
    assert ta.get_extra_info("peername") == ("127.0.0.1", 80)


async def test_pipe_abort_resets_the_peer() -> None:
    a, b, ta, _ = make_pipe()
    ta.write(b"never delivered")
    ta.abort()
    assert isinstance(await b.lost, ConnectionResetError)
    assert await a.lost is None
    assert b.events == ["lost"]


async def test_pipe_flow_control() -> None:
    a, b, ta, tb = make_pipe()
    tb.pause_reading()
    assert not tb.is_reading()
    ta.write(b"x" * (HIGH_WATER + 1))
    assert a.events == ["pause_writing"]
    assert ta.get_write_buffer_size() == HIGH_WATER + 1
    await asyncio.sleep(0)
    assert b.events == []  # held while paused
    tb.resume_reading()
    await asyncio.sleep(0)
    assert b.events == [b"x" * (HIGH_WATER + 1)]
    assert a.events == ["pause_writing", "resume_writing"]
    assert ta.get_write_buffer_size() == 0
    tb.close()
    await a.lost


async def test_server_misuse_is_reported(app: web.Application) -> None:
    server = InMemoryServer(app)
    with pytest.raises(RuntimeError):
        server.server  # noqa: B018
    await server.start()
    with pytest.raises(RuntimeError):
        await server.start()
    await server.stop()
    with pytest.raises(ConnectionRefusedError):
        server.accept()


async def test_a_stopped_simulator_is_not_kept_in_memory() -> None:
    # aiohttp caches the middleware chains of recent apps; a stopped simulated cluster must not stay there.
    import gc
    import weakref

    from kopf_sim.http import faults
    from kopf_sim.http.app import build_app
    from kopf_sim.store.cluster import Cluster

    cluster = Cluster()
    app = build_app(cluster)
    faults.install(app, faults.FaultInjector())  # a middleware, as in the plugin's clusters
    async with (
        InMemoryServer(app) as server,
        server.session() as session,
        session.get("/api/v1/namespaces") as response,
    ):
        assert response.status == 200
    gone = weakref.ref(cluster)
    del cluster, app, server, session, response
    gc.collect()
    assert gone() is None


async def test_the_servers_side_is_marked_as_serving() -> None:
    """An operator under test tells its tasks by their context: the server's request handlers run in a copy of the
    connecting client's context with SERVING set, so that it can leave them alone (found by the checks: the exit
    waited for the server's idle keep-alive handler as for a hung task of its own)."""
    from kopf_sim.transports.inmemory import SERVING

    seen: list[bool] = []

    async def handler(request: web.Request) -> web.Response:
        seen.append(SERVING.get())
        return web.json_response({})

    app = web.Application()
    app.router.add_get("/", handler)
    async with in_memory_session(app) as session, session.get("http://sim/") as response:
        assert response.status == 200
    assert seen == [True]
    assert SERVING.get() is False
