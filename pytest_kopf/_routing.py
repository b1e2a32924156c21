"""Requests of any HTTP client in the process to a test's host name go into its simulated cluster, with no sockets.

A sim-mode test's cluster gets a host name of its own (``kopf-sim-N.test``: the ``.test`` domain never
resolves), written into a kubeconfig (:mod:`pytest_kopf._clientconfig`). Connections to that host are
made in memory, to the simulated apiserver's HTTP server in the test's loop (the in-memory transport
of :mod:`kopf_sim.transports.inmemory`), whatever the client:

- aiohttp (``kubernetes_asyncio``, kopf's own client with credentials from a kubeconfig): the
  ``TCPConnector`` connects the client's protocol to the server's in the loop, as the in-memory
  connector does;
- urllib3 (the official ``kubernetes`` client, ``requests`` and so ``pykube-ng``), in threads:
  ``urllib3.util.connection.create_connection`` returns a :class:`LoopSocket` for that host, a socket-like
  object whose bytes go to the server in the loop (``call_soon_threadsafe``) and come back into a buffer
  that the thread reads. While the thread waits for the answer, it waits in a way the virtual-time loop
  knows of (:meth:`kopf_sim.timing.virtualtime.VirtualTimeLoop.wait_in_thread`): it is idle, so the loop may
  let time pass (e.g. a watch request with ``timeoutSeconds``, or a thread blocked in ``watch.stream()``
  while the test sleeps for an hour), and it wakes when the bytes are there.

All bytes go through the real HTTP machinery on both sides (the client's own, and aiohttp's server), so
the requests are exactly those the client would send to a real apiserver (and the simulator's faults
apply to them as to the operator's). Other hosts are not touched. A sync client called in the loop's own
thread (e.g. in an async handler or an async test) blocks that loop, as it would in production: its
requests are served in that thread by another loop meanwhile (:mod:`pytest_kopf._blocking`), with a warning.
"""

from __future__ import annotations

import asyncio
import asyncio.events
import contextlib
import contextvars
import dataclasses
import io
import itertools
import re
import socket
import threading
import weakref
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import aiohttp
from aiohttp.client_proto import ResponseHandler

from kopf_sim.timing.virtualtime import VirtualTimeLoop, job_loop
from kopf_sim.transports.inmemory import InMemoryServer

from . import _blocking as blocking
from ._blocking import BlockedLoopServer
from .errors import SyncClientInLoopError

__all__ = ["HEADER_HOOKS", "LoopSocket", "Route", "add_route", "new_host", "remove_route"]

#: Functions called in a sync client's thread as it sends a request: the headers to add to it (e.g. the kopf
#: handler whose code sends it, for the trace: :func:`pytest_kopf._tracing.handler_header`).
HEADER_HOOKS: list[Callable[[], Mapping[str, str]]] = []
_REQUEST_LINE = re.compile(rb"^[A-Z]+ \S+ HTTP/1\.[01]\r\n")

_hosts = itertools.count(1)


@dataclasses.dataclass(frozen=True)
class Route:
    """Where the connections to a host go: an in-memory server, in a loop."""

    host: str
    loop: asyncio.AbstractEventLoop
    server: InMemoryServer
    #: The sync clients' connections to it: closed with the route (a client kept by a module of the operator's,
    #: e.g. built at its import, never closes its pooled connections; a check makes thousands of worlds).
    sockets: weakref.WeakSet[LoopSocket] = dataclasses.field(default_factory=weakref.WeakSet, compare=False)


_routes: dict[str, Route] = {}
_lock = threading.Lock()


def new_host() -> str:
    """A host name for a test's cluster, never the same twice in the process (and never resolvable)."""
    return f"kopf-sim-{next(_hosts)}.test"


def add_route(route: Route) -> None:
    with _lock:
        _routes[route.host.lower()] = route
        _patch()


def remove_route(host: str) -> None:
    with _lock:
        route = _routes.pop(host.lower(), None)
    if route is not None:
        for sock in list(route.sockets):
            sock.abandon()
        blocking.close_server_for(route.loop)


def _find(host: str | None, loop: asyncio.AbstractEventLoop | None) -> Route | None:
    """
    The route for a simulated cluster's host; from a loop with a cluster of its own, to that cluster.

    Two clusters may run at once, each in its own loop: e.g. the operator checks' world and its baseline. The
    official clients' configuration is one per process (``KUBECONFIG``, the default configuration), so it names
    the cluster set up last; the requests of the other's handlers (its loop's tasks and executor jobs) still
    go to the cluster of their own loop.
    """
    route = _routes.get(host.lower().rstrip(".")) if host else None
    if route is not None and loop is not None and route.loop is not loop:
        return next((other for other in _routes.values() if other.loop is loop), route)
    return route


# -- aiohttp -----------------------------------------------------------------------------------------------

_original_tcp_connection: Callable[..., Any] | None = None


async def _tcp_create_connection(self: aiohttp.TCPConnector, req: Any, traces: Any, timeout: Any) -> ResponseHandler:
    loop = asyncio.get_running_loop()
    route = _find(req.url.host, loop)
    if route is None or route.loop is not loop or req.url.scheme not in ("http", "ws"):
        assert _original_tcp_connection is not None
        return await _original_tcp_connection(self, req, traces, timeout)  # type: ignore[no-any-return]
    client = ResponseHandler(loop)
    try:
        route.server.connect(client, server_port=req.url.port or 80)
    except OSError as exc:
        raise aiohttp.ClientConnectorError(req.connection_key, exc) from exc
    return client


# -- urllib3 -----------------------------------------------------------------------------------------------

_original_create_connection: Callable[..., Any] | None = None


_DEFAULT_TIMEOUT = object()  # urllib3's own default: the socket module's default timeout


def _create_connection(address: tuple[str, int], timeout: Any = _DEFAULT_TIMEOUT, *args: Any, **kwargs: Any) -> Any:
    host, port = address[0], address[1]
    route = _find(host, job_loop() or asyncio.events._get_running_loop())
    if route is None:
        assert _original_create_connection is not None
        if timeout is _DEFAULT_TIMEOUT:
            return _original_create_connection(address, *args, **kwargs)
        return _original_create_connection(address, timeout, *args, **kwargs)
    sock = LoopSocket(route, port)
    sock.settimeout(timeout if isinstance(timeout, (int, float)) else None)
    sock.connect()
    return sock


def _patch() -> None:
    """Route the clients' connections (once per process; other hosts go where they went)."""
    global _original_tcp_connection, _original_create_connection
    if _original_tcp_connection is None:
        _original_tcp_connection = aiohttp.TCPConnector._create_connection
        aiohttp.TCPConnector._create_connection = _tcp_create_connection  # type: ignore[method-assign]
    try:
        import urllib3.util.connection
    except ImportError:  # no urllib3: no sync clients to route
        return
    # Once per module: a urllib3 imported anew (e.g. after a test has removed it from sys.modules) is patched too.
    if urllib3.util.connection.create_connection is not _create_connection:
        _original_create_connection = urllib3.util.connection.create_connection
        urllib3.util.connection.create_connection = _create_connection


# -- the socket of a sync client ----------------------------------------------------------------------------

#: The sync clients' connected sockets: those of a stopped operator's handlers are ended (see below).
_sockets: weakref.WeakSet[LoopSocket] = weakref.WeakSet()


def end_connections(loop: asyncio.AbstractEventLoop, made_in: Callable[[contextvars.Context], bool]) -> None:
    """
    In the loop: end the connections of the sync clients made in such contexts (e.g. by a stopped operator's handlers).

    The clients keep their connections alive in their pools, for as long as the client objects live (a module's
    global client; a handler's frame kept by a retried error's traceback): the simulator's side of each is a task
    of its own, which would outlive the operator. They end as a server ends idle keep-alive connections: the
    clients see them gone and connect anew when used again.
    """
    for sock in list(_sockets):
        if sock._loop is loop and made_in(sock.context):
            sock._end_in_loop()


class _Bridge(asyncio.Protocol):
    """The client's end of the in-memory connection, in the loop: it hands the bytes over to the thread."""

    def __init__(self, sock: LoopSocket) -> None:
        self.sock = sock

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.sock._connected(transport)

    def data_received(self, data: bytes) -> None:
        self.sock._received(data)

    def eof_received(self) -> bool | None:
        self.sock._ended_in_loop(None)
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self.sock._ended_in_loop(exc)


def _with_headers(chunk: bytes) -> bytes:
    """A request's first bytes with the hooks' headers added after its request line."""
    extra = {name: value for hook in HEADER_HOOKS for name, value in hook().items()}
    if not extra:
        return chunk
    line, _, rest = chunk.partition(b"\r\n")
    headers = b"".join(f"{name}: {value}\r\n".encode("latin-1") for name, value in extra.items())
    return line + b"\r\n" + headers + rest


class LoopSocket:
    """A connected TCP socket, as the sync clients use one, to an in-memory server in a loop (another thread).

    Reads wait for the loop's answer: idle waits in virtual time (in the loop's executor jobs), real ones
    elsewhere. ``fileno()`` is that of a socket pair that is readable whenever this socket is (bytes
    buffered, or the end of the stream): urllib3 polls it to see whether a kept connection is still alive.
    """

    family = socket.AF_INET
    type = socket.SOCK_STREAM
    proto = socket.IPPROTO_TCP

    def __init__(self, route: Route, port: int) -> None:
        self._route: Route | None = route  # None once abandoned: the world's cluster is not kept alive by it
        self._host = route.host
        self._loop = route.loop
        self._port = port
        self._timeout: float | None = None
        self._changed = threading.Condition()
        self._inbox = bytearray()
        self._transport: asyncio.Transport | None = None
        self._ended_by: BaseException | None = None
        self._ended = False
        self._closed = False
        self._io_refs = 0
        self._signal_r, self._signal_w = socket.socketpair()
        self._signal_r.setblocking(False)
        self._signalled = False
        self._released = False
        self.context = contextvars.copy_context()  # whose connection it is (e.g. an operator's handler's)
        # Made in the thread of the loop that serves the cluster, while that loop runs (e.g. in an async handler):
        # served with that loop blocked, by another in the same thread (:mod:`pytest_kopf._blocking`).
        self._blocked: BlockedLoopServer | None = None
        self._waker: Callable[[], None] | None = None  # called on every change (while served that way)
        route.sockets.add(self)

    def __repr__(self) -> str:
        return f"<LoopSocket to {self._host}:{self._port}{' closed' if self._closed else ''}>"

    # -- the loop's side ------------------------------------------------------------------------------

    def _connect_in_loop(self) -> None:
        try:
            if self._route is None:
                raise ConnectionRefusedError(f"The simulated cluster at {self._host} is gone.")
            self._route.server.connect(_Bridge(self), server_port=self._port)
        except OSError as exc:
            self._ended_in_loop(exc)

    def _connected(self, transport: asyncio.Transport) -> None:
        with self._changed:
            self._transport = transport
            self._notify()

    def _received(self, data: bytes) -> None:
        with self._changed:
            self._inbox += data
            self._update_signal()
            self._notify()

    def _ended_in_loop(self, exc: BaseException | None) -> None:
        with self._changed:
            if not self._ended:
                self._ended, self._ended_by = True, exc
            self._update_signal()
            self._notify()

    def _notify(self) -> None:
        """Wake the thread that waits (called with the lock held)."""
        self._changed.notify_all()
        if self._waker is not None:
            self._waker()

    def _set_waker(self, waker: Callable[[], None] | None) -> None:
        self._waker = waker

    def _end_in_loop(self) -> None:
        self._ended_in_loop(None)
        transport = self._transport
        if transport is not None and not transport.is_closing():
            transport.close()

    def _update_signal(self) -> None:
        """Keep the signal socket readable exactly while this one is (called with the lock held)."""
        if self._released:
            return
        readable = bool(self._inbox) or self._ended
        if readable and not self._signalled:
            self._signal_w.send(b"x")
            self._signalled = True
        elif not readable and self._signalled:
            with contextlib.suppress(BlockingIOError):
                self._signal_r.recv(1)
            self._signalled = False

    # -- the thread's side ----------------------------------------------------------------------------

    def _call_in_loop(self, callback: Callable[..., Any], *args: Any) -> None:
        loop = self._loop
        if loop.is_closed():
            raise ConnectionResetError(f"The simulated cluster at {self._host} is gone (its loop is closed).")
        if self._blocked is not None:
            self._blocked.call_soon(callback, *args)
        else:
            loop.call_soon_threadsafe(callback, *args)

    def _in_serving_loop(self) -> bool:
        """Whether the caller is the loop that serves the cluster, in its own thread (it would block it)."""
        return asyncio.events._get_running_loop() is self._loop

    def _check_thread(self) -> None:
        """A sync client must not wait in the thread of the loop that answers it: that would block the loop."""
        loop = self._loop
        if self._blocked is not None:
            return
        if asyncio.events._get_running_loop() is loop or getattr(loop, "_thread_id", None) == threading.get_ident():
            raise SyncClientInLoopError(
                f"A sync HTTP client (e.g. the official kubernetes client) was called for the simulated cluster at "
                f"{self._host} in the thread of the event loop that serves it (in an async handler, an async "
                f"test or fixture): the loop cannot answer while it is blocked. Call the sync client in a sync "
                f"handler, or as `await asyncio.to_thread(...)`, or use an async client (e.g. kubernetes_asyncio)."
            )
        if job_loop() is not loop and not loop.is_running() and threading.current_thread() is threading.main_thread():
            raise SyncClientInLoopError(
                f"A sync HTTP client was called for the simulated cluster at {self._host} while its loop "
                f"is not running (in a sync test or fixture); call it from the test's loop, e.g. as "
                f"`await asyncio.to_thread(...)` in an async test."
            )

    def _wait(self, until: Callable[[], bool], what: str) -> None:
        """Block until the condition holds (or the timeout passes: ``socket.timeout``)."""
        if until():
            return
        self._check_thread()
        loop = self._loop
        if self._blocked is not None:
            done = self._blocked.run_until(until, self._set_waker, self._timeout)
        elif job_loop() is loop and isinstance(loop, VirtualTimeLoop):
            done = loop.wait_in_thread(self._timeout, until)
        else:
            with self._changed:
                done = self._changed.wait_for(until, self._timeout)
        if not done:
            raise TimeoutError(f"timed out {what}")

    def connect(self, address: Any = None) -> None:
        if self._in_serving_loop():  # e.g. in an async handler: served with the loop blocked, as in production
            blocking.warn_once(self._host)
            self._blocked = blocking.server_for(self._loop)
        self._check_thread()  # before connecting: a connection made in vain would be left open
        self._call_in_loop(self._connect_in_loop)
        self._wait(lambda: self._transport is not None or self._ended, "connecting")
        if self._transport is None:
            raise ConnectionRefusedError(
                f"The simulated cluster at {self._host} refused the connection: "
                f"{self._ended_by or 'its server is not running'}"
            )
        _sockets.add(self)

    def sendall(self, data: Any, flags: int = 0) -> None:
        if self._closed:
            raise OSError(9, "Bad file descriptor")
        if self._ended or self._transport is None:
            raise BrokenPipeError(32, "Broken pipe")
        chunk = bytes(data)
        if HEADER_HOOKS and _REQUEST_LINE.match(chunk):
            chunk = _with_headers(chunk)
        if chunk:
            self._call_in_loop(self._write_in_loop, chunk)

    def send(self, data: Any, flags: int = 0) -> int:
        self.sendall(data, flags)
        return len(data)

    def _write_in_loop(self, chunk: bytes) -> None:
        transport = self._transport
        if transport is not None and not transport.is_closing():
            transport.write(chunk)

    def recv_into(self, buffer: Any, nbytes: int = 0, flags: int = 0) -> int:
        view = memoryview(buffer).cast("B")
        size = min(nbytes or len(view), len(view))
        if size == 0:
            return 0
        self._wait(lambda: bool(self._inbox) or self._ended or self._closed, "reading")
        with self._changed:
            if not self._inbox:
                if self._ended_by is not None:
                    raise ConnectionResetError(104, f"Connection reset by peer: {self._ended_by}")
                return 0
            count = min(size, len(self._inbox))
            view[:count] = self._inbox[:count]
            del self._inbox[:count]
            self._update_signal()
        return count

    def recv(self, bufsize: int, flags: int = 0) -> bytes:
        buffer = bytearray(bufsize)
        count = self.recv_into(buffer, bufsize)
        return bytes(buffer[:count])

    def makefile(self, mode: str = "r", buffering: int | None = None, **_: Any) -> Any:
        if "w" in mode:
            raise io.UnsupportedOperation("only reading files are made of a simulated cluster's socket")
        self._io_refs += 1
        raw = _SocketReader(self)
        return raw if buffering == 0 else io.BufferedReader(raw, buffering or io.DEFAULT_BUFFER_SIZE)

    def fileno(self) -> int:
        """The signal socket's (see the class); a connection kept by a client's pool and used where it cannot be
        (made in the loop's own thread and used elsewhere, or the other way around) is readable: ended.

        Clients look whether a kept connection is readable before using it again: then they connect anew.
        """
        if self._transport is not None and not self._ended and (self._blocked is not None) != self._in_serving_loop():
            with self._changed:
                self._ended = True
                self._update_signal()
        return self._signal_r.fileno()

    def settimeout(self, timeout: float | None) -> None:
        self._timeout = timeout

    def gettimeout(self) -> float | None:
        return self._timeout

    def setblocking(self, flag: bool) -> None:
        self._timeout = None if flag else 0.0

    def setsockopt(self, *args: Any) -> None:
        pass

    def getsockopt(self, *args: Any) -> int:
        return 0

    def getpeername(self) -> tuple[str, int]:
        return (self._host, self._port)

    def getsockname(self) -> tuple[str, int]:
        return ("127.0.0.1", 0)

    def shutdown(self, how: int) -> None:
        self._end_from_thread()

    def _end_from_thread(self) -> None:
        with self._changed:
            if not self._ended:
                self._ended, self._ended_by = True, None
            self._changed.notify_all()
        transport = self._transport
        if transport is not None and not self._loop.is_closed():
            if self._blocked is not None:
                if not self._blocked.loop.is_closed():
                    self._blocked.loop.call_soon_threadsafe(transport.close)
            else:
                self._loop.call_soon_threadsafe(transport.close)

    def _decref(self) -> None:
        self._io_refs -= 1
        if self._closed and self._io_refs <= 0:
            self._release()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._io_refs <= 0:
            self._release()

    def abandon(self) -> None:
        """
        Close it with its route, its files open or not: the server is gone, and every connection with it.

        A client kept alive (one built at the import of an operator's module: urllib3 keeps its pools' queues in
        a process-wide registry until the pools go) keeps its sockets: they let go of the world (its cluster,
        its operator in the context), or every world of a check would stay in memory (~7 MB an example).
        """
        self._closed = True
        self._release()
        self._route = None
        self._transport = None
        self._blocked = None
        self._waker = None
        self.context = contextvars.Context()

    def _release(self) -> None:
        if self._released:
            return
        self._end_from_thread()
        with self._changed:
            self._released = True
            self._signal_r.close()
            self._signal_w.close()

    def __enter__(self) -> LoopSocket:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _SocketReader(io.RawIOBase):
    """The reading file of a :class:`LoopSocket` (as ``socket.makefile("rb")`` makes)."""

    def __init__(self, sock: LoopSocket) -> None:
        super().__init__()
        self._sock = sock

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        return self._sock.recv_into(buffer)

    def fileno(self) -> int:
        return self._sock.fileno()

    def close(self) -> None:
        if not self.closed:
            self._sock._decref()
        super().close()


def routes() -> Iterator[Route]:
    """The routes now (for diagnostics)."""
    with _lock:
        return iter(list(_routes.values()))
