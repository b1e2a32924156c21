"""An in-memory HTTP transport: an aiohttp client talks to a ``web.Application`` with no sockets.

The client's :class:`aiohttp.client_proto.ResponseHandler` and the server's
:class:`aiohttp.web_protocol.RequestHandler` are connected back to back through a pair
of fake :class:`asyncio.Transport` ends (a "pipe"). All bytes still go through aiohttp's
real HTTP writers and parsers on both sides, so the server sees the request exactly as
sent (headers, chunked bodies, ...), and the client sees a real HTTP response.

Everything happens via ``loop.call_soon`` in the same event loop: no threads, no
sockets, no real time. It is therefore deterministic and works under virtual-time loops
(e.g. ``looptime``), where long gaps in watch-streams take no wall-clock time.

Usage::

    async with InMemoryServer(app) as server:          # the app's startup runs once
        async with server.session() as session:       # any number of sessions
            async with session.get("/api/v1/pods") as resp:
                ...
    # the app's shutdown & cleanup ran here

    # Or, when one session is all that is needed (the app starts on the first request
    # and is cleaned up when the session is closed):
    async with in_memory_session(app) as session:
        ...

Disconnects behave like TCP: closing one end delivers the pending bytes and then
``connection_lost(None)`` to both protocols; aborting one end resets the other
(``ConnectionResetError``). By default, the server is set up with
``handler_cancellation=True``, so a request handler (e.g. a watch-stream) is cancelled
as soon as its client disconnects, and not only when it next writes to the client.
"""

from __future__ import annotations

import asyncio
import contextvars
import itertools
import weakref
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

import aiohttp
from aiohttp import web
from aiohttp.client_proto import ResponseHandler

if TYPE_CHECKING:
    from aiohttp.client_reqrep import ClientRequest
    from aiohttp.tracing import Trace

__all__ = ["InMemoryConnector", "InMemoryServer", "ProtocolFactory", "in_memory_session"]

DEFAULT_BASE_URL = "http://kopf-sim.local"
LOOPBACK = "127.0.0.1"
FIRST_EPHEMERAL_PORT = 49152
IDLE_CONNECTIONS_KEPT = (
    3600.0  # seconds an idle in-memory connection stays in a client's pool (the server may close it sooner)
)

# Flow control: the bytes a writer may have in flight before it is asked to pause.
HIGH_WATER = 256 * 1024
LOW_WATER = 64 * 1024

ProtocolFactory = Callable[[], asyncio.Protocol]


class _PipeEnd(asyncio.Transport):
    """One end of an in-memory duplex byte pipe, with TCP-like close/abort semantics.

    Bytes written into this end are queued in the peer's inbox and delivered to the
    peer's protocol soon (never synchronously, to avoid re-entrance into the writer).
    The inbox doubles as this end's write buffer, so flow control works as with sockets.
    """

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        protocol: asyncio.Protocol,
        *,
        sockname: tuple[str, int],
        peername: tuple[str, int],
    ) -> None:
        super().__init__(extra={"sockname": sockname, "peername": peername, "socket": None})
        self._loop = loop
        self._protocol = protocol
        self._peer: _PipeEnd | None = None
        self._inbox: deque[bytes] = deque()
        self._inbox_size = 0
        self._eof_pending = False  # the peer has closed: lose the connection once drained
        self._delivery_scheduled = False
        self._reading_paused = False
        self._writing_paused = False
        self._closing = False
        self._lost = False

    # -- asyncio.Transport API --

    def get_protocol(self) -> asyncio.BaseProtocol:
        return self._protocol

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        assert isinstance(protocol, asyncio.Protocol)
        self._protocol = protocol

    def is_closing(self) -> bool:
        return self._closing

    def is_reading(self) -> bool:
        return not self._reading_paused and not self._closing

    def pause_reading(self) -> None:
        self._reading_paused = True

    def resume_reading(self) -> None:
        self._reading_paused = False
        self._schedule_delivery()

    def get_write_buffer_size(self) -> int:
        return self._peer._inbox_size if self._peer is not None else 0

    def get_write_buffer_limits(self) -> tuple[int, int]:
        return LOW_WATER, HIGH_WATER

    def can_write_eof(self) -> bool:
        return False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        peer = self._peer
        if self._closing or peer is None or peer._closing or not data:
            return  # like sockets, writes after close are dropped
        peer._inbox.append(bytes(data))
        peer._inbox_size += len(data)
        peer._schedule_delivery()
        if not self._writing_paused and peer._inbox_size > HIGH_WATER:
            self._writing_paused = True
            self._protocol.pause_writing()

    def close(self) -> None:
        """Half-close semantics of TCP: the peer gets our pending bytes, then EOF."""
        if self._closing:
            return
        self._closing = True
        self._drop_inbox()
        peer, self._peer = self._peer, None
        if peer is not None and not peer._closing:
            peer._eof_pending = True
            peer._schedule_delivery()
        self._loop.call_soon(self._lose, None)

    def abort(self) -> None:
        """Reset semantics of TCP: nothing more is delivered, the peer sees a reset."""
        if self._closing and self._peer is None:
            return
        self._closing = True
        self._drop_inbox()
        peer, self._peer = self._peer, None
        if peer is not None and not peer._closing:
            peer._reset()
        self._loop.call_soon(self._lose, None)

    # -- internals --

    def _reset(self) -> None:
        self._closing = True
        self._peer = None
        self._drop_inbox()
        self._loop.call_soon(self._lose, ConnectionResetError("Connection reset by peer"))

    def _drop_inbox(self) -> None:
        self._inbox.clear()
        self._inbox_size = 0
        self._eof_pending = False

    def _schedule_delivery(self) -> None:
        if not self._delivery_scheduled and (self._inbox or self._eof_pending):
            self._delivery_scheduled = True
            self._loop.call_soon(self._deliver)

    def _deliver(self) -> None:
        self._delivery_scheduled = False
        while self._inbox and not self._reading_paused and not self._closing:
            chunk = self._inbox.popleft()
            self._inbox_size -= len(chunk)
            self._protocol.data_received(chunk)
        writer = self._peer
        if writer is not None and writer._writing_paused and self._inbox_size <= LOW_WATER:
            writer._writing_paused = False
            writer._protocol.resume_writing()
        if self._eof_pending and not self._inbox and not self._closing:
            self._eof_pending = False
            self._protocol.eof_received()  # half-open connections are not supported
            self.close()

    def _lose(self, exc: Exception | None) -> None:
        if not self._lost:
            self._lost = True
            self._protocol.connection_lost(exc)


#: True in the tasks that serve an in-memory connection (made in the client's context, as in-memory, but the server's).
SERVING: contextvars.ContextVar[bool] = contextvars.ContextVar("kopf_sim_serving", default=False)


def _connect_pipe(
    loop: asyncio.AbstractEventLoop,
    client: asyncio.Protocol,
    server: asyncio.Protocol,
    *,
    client_port: int,
    server_port: int,
) -> None:
    """Connect two protocols back to back, as if over a loopback TCP connection.

    The server's side starts (its request-handling task) with :data:`SERVING` set, so that whoever
    connected can tell the server's tasks from its own (e.g. an operator's exit must not wait for them).
    """
    client_addr, server_addr = (LOOPBACK, client_port), (LOOPBACK, server_port)
    client_end = _PipeEnd(loop, client, sockname=client_addr, peername=server_addr)
    server_end = _PipeEnd(loop, server, sockname=server_addr, peername=client_addr)
    client_end._peer, server_end._peer = server_end, client_end
    # Synchronously: the connector must return a protocol with its transport already set.
    context = contextvars.copy_context()
    context.run(SERVING.set, True)
    context.run(server.connection_made, server_end)
    client.connection_made(client_end)


class InMemoryServer:
    """Runs an application's lifecycle (startup/shutdown/cleanup) for in-memory clients.

    It is the in-memory equivalent of ``AppRunner`` + ``TCPSite``: the app is started
    exactly once on :meth:`start`, and every connection made through its connectors
    gets a new server-side ``RequestHandler``, just as an accepted socket would.

    On :meth:`stop`, aiohttp's shutdown sequence runs: idle connections are closed, the
    app's ``on_shutdown`` hooks run, in-flight handlers get ``shutdown_timeout`` seconds
    (up to twice that, as aiohttp waits in two steps) to finish and are then cancelled,
    their connections closed (clients see a disconnect), and the app is cleaned up.
    The default grace is short because watch-streams never finish by themselves.
    """

    def __init__(
        self,
        app: web.Application,
        *,
        handler_cancellation: bool = True,
        shutdown_timeout: float = 0.1,
        **runner_kwargs: Any,
    ) -> None:
        self.app = app
        self._runner = web.AppRunner(
            app,
            handler_cancellation=handler_cancellation,
            shutdown_timeout=shutdown_timeout,
            **runner_kwargs,
        )
        self._server_kwargs = {"handler_cancellation": handler_cancellation, **runner_kwargs}
        self._servers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, web.Server] = weakref.WeakKeyDictionary()
        self._ports = itertools.count(FIRST_EPHEMERAL_PORT)
        self._started = False
        self._stopped = False
        self._runner_loop: asyncio.AbstractEventLoop | None = None

    @property
    def running(self) -> bool:
        return self._started and not self._stopped

    @property
    def server(self) -> web.Server:
        """The low-level aiohttp server, e.g. to inspect ``.connections``."""
        if self._runner.server is None:
            raise RuntimeError("The in-memory server is not running.")
        return self._runner.server

    async def start(self) -> None:
        if self._started:
            raise RuntimeError("The in-memory server can be started only once.")
        self._started = True
        self._runner_loop = asyncio.get_running_loop()
        await self._runner.setup()

    async def stop(self) -> None:
        """Shut down as aiohttp does: close idle connections, on_shutdown, wait/cancel handlers."""
        if self._started and not self._stopped:
            self._stopped = True
            await self._runner.cleanup()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> None:
        await self.stop()

    def accept(self) -> tuple[asyncio.Protocol, int]:
        """Make a server-side protocol for a new connection (in the running loop), and the client's "port"."""
        if not self.running:
            raise ConnectionRefusedError("The in-memory server is not running.")
        return self._server_here()(), next(self._ports)

    def _server_here(self) -> web.Server:
        """The low-level server whose handlers run in the running loop: the app's own, or one for another loop.

        The app runs in the loop that started it; a connection made in another loop of the same thread (e.g.
        one that serves a request while the app's loop is blocked by a sync client in its own thread) gets
        a server of the same app whose request handlers run in that loop.
        """
        server = self.server
        loop = asyncio.get_running_loop()
        if self._runner_loop in (None, loop):
            return server
        here = self._servers.get(loop)
        if here is None:
            here = self._servers[loop] = web.Server(
                server.request_handler, request_factory=server.request_factory, loop=loop, **self._server_kwargs
            )
        return here

    def connect(self, client: asyncio.Protocol, *, server_port: int = 80) -> None:
        """Connect a client's protocol to a new server-side one, as over a loopback TCP connection (in the loop).

        For clients that make their own protocols (e.g. an aiohttp ``ResponseHandler``, or a bridge to a thread).
        """
        server, client_port = self.accept()
        _connect_pipe(asyncio.get_running_loop(), client, server, client_port=client_port, server_port=server_port)

    def connector(self, **kwargs: Any) -> InMemoryConnector:
        return InMemoryConnector(self, **kwargs)

    def session(
        self,
        *,
        base_url: str = DEFAULT_BASE_URL,
        connector_kwargs: Mapping[str, Any] | None = None,
        **session_kwargs: Any,
    ) -> aiohttp.ClientSession:
        """A new client session to this server (the caller closes it)."""
        connector = self.connector(**(connector_kwargs or {}))
        return aiohttp.ClientSession(base_url=base_url, connector=connector, **session_kwargs)


class InMemoryConnector(aiohttp.BaseConnector):
    """An aiohttp connector that connects every request to an in-memory server.

    ``app_or_server`` may be:

    - an :class:`InMemoryServer`, started by the caller (preferred, for many sessions);
    - a ``web.Application``: the connector then owns an :class:`InMemoryServer`, starts
      it on the first connection, and stops it (app shutdown/cleanup) when closed;
    - any protocol factory, e.g. a low-level ``web.Server`` or ``AppRunner.server``.

    Only ``http://`` (and ``ws://``) URLs are accepted: there is no TLS in memory.
    The host & port of URLs are irrelevant, all requests go to the same server.
    """

    allowed_protocol_schema_set = frozenset({"http", "ws"})

    def __init__(
        self,
        app_or_server: web.Application | InMemoryServer | ProtocolFactory,
        *,
        loop: asyncio.AbstractEventLoop | None = None,
        **kwargs: Any,
    ) -> None:
        if not kwargs.get("force_close"):
            # An idle connection in memory holds nothing real; aiohttp's pool clean-up, every 15 s by default,
            # is a timer that makes an idle virtual-time loop jump (~6,000 jumps per simulated day).
            kwargs.setdefault("keepalive_timeout", IDLE_CONNECTIONS_KEPT)
        super().__init__(loop=loop, **kwargs)
        self._owned: InMemoryServer | None = None
        self._target: InMemoryServer | ProtocolFactory
        if isinstance(app_or_server, web.Application):
            self._owned = self._target = InMemoryServer(app_or_server)
        else:
            self._target = app_or_server
        self._start_lock = asyncio.Lock()
        self._ports = itertools.count(FIRST_EPHEMERAL_PORT)
        self._made: list[ResponseHandler] = []  # in the order made: closed in that order (the same in every run)

    async def _create_connection(
        self,
        req: ClientRequest,
        traces: list[Trace],
        timeout: aiohttp.ClientTimeout,
    ) -> ResponseHandler:
        client = ResponseHandler(self._loop)
        try:
            server, client_port = await self._accept()
        except OSError as exc:
            raise aiohttp.ClientConnectorError(req.connection_key, exc) from exc
        _connect_pipe(self._loop, client, server, client_port=client_port, server_port=req.port or 80)
        if len(self._made) >= 64:
            self._made = [made for made in self._made if made.is_connected()]
        self._made.append(client)
        return client

    async def _accept(self) -> tuple[asyncio.Protocol, int]:
        target = self._target
        if not isinstance(target, InMemoryServer):
            return target(), next(self._ports)
        if target is self._owned and not target._started:
            async with self._start_lock:
                if not target._started:
                    await target.start()
        return target.accept()

    def close(self, *, abort_ssl: bool = False) -> Awaitable[None]:
        """Close all connections; also stop the app if it was started by this connector.

        The connections are closed in the order they were made (aiohttp's own closing goes through a set of
        them): the server's side sees them go in the same order in every run.
        """
        made, self._made = self._made, []
        for client in made:
            if client.is_connected():
                client.close()
        closing = super().close(abort_ssl=abort_ssl)
        owned, self._owned = self._owned, None
        if owned is None:
            return closing

        async def close_and_stop() -> None:
            await closing
            await owned.stop()

        return self._loop.create_task(close_and_stop())


def in_memory_session(
    app: web.Application | InMemoryServer,
    *,
    base_url: str = DEFAULT_BASE_URL,
    connector_kwargs: Mapping[str, Any] | None = None,
    **session_kwargs: Any,
) -> aiohttp.ClientSession:
    """A client session to an app in memory.

    Given a not-yet-started app, the session owns it: the app starts on the first request
    and is shut down & cleaned up when the session is closed. For several sessions to one
    app, use :class:`InMemoryServer` and its :meth:`InMemoryServer.session` instead.
    """
    connector = InMemoryConnector(app, **(connector_kwargs or {}))
    return aiohttp.ClientSession(base_url=base_url, connector=connector, **session_kwargs)
