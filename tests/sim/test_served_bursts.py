"""A served simulator under a burst of connections: every client gets an answer, none is dropped.

An operator with thousands of objects may have a request per object in flight at once, each over a
connection of its own. While the server's loop is busy (a big list, a slow machine), those connections must
wait in the kernel's queue until the server accepts them, not overflow it (then the handshakes are dropped:
the clients stall, time out, or get resets), and the server must have files enough to accept them all.
"""

from __future__ import annotations

import contextlib
import os
import resource
import selectors
import signal
import socket
import sys
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.serving import Served, served_simulator

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc and SIGSTOP are Linux's")

CONNECTIONS = 400  # more than aiohttp's default backlog (128), and than the files of ...
LOW_SOFT_LIMIT = 256  # ... a low soft limit of open files (a usual shell has 1024), as the server starts with


def _somaxconn() -> int:
    try:
        return int(Path("/proc/sys/net/core/somaxconn").read_text())
    except (OSError, ValueError):
        return 0


@contextlib.contextmanager
def _served_with_low_files_limit(tmp_path: Path) -> Iterator[Served]:
    """A server started as from a shell with a low soft limit of open files (this process keeps its own)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(soft, LOW_SOFT_LIMIT), hard))
    try:
        with served_simulator(tmp_path / "kubeconfig", "--controllers", "none") as served:
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
            yield served
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


@contextlib.contextmanager
def _paused(pid: int) -> Iterator[None]:
    """The server's process stopped: as a loop too busy to accept anything for a while."""
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


def _open_files_limits(pid: int) -> tuple[str, str]:
    for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
        if line.startswith("Max open files"):
            soft, hard = line.split()[3:5]
            return soft, hard
    raise LookupError("Max open files")


def _connect_all(address: tuple[str, int], count: int, *, within: float) -> list[socket.socket]:
    """Start ``count`` connections at once; those whose handshakes complete within the time, connected."""
    pending: dict[socket.socket, None] = {}
    with selectors.DefaultSelector() as selector:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setblocking(False)
            sock.connect_ex(address)
            pending[sock] = None
            selector.register(sock, selectors.EVENT_WRITE, data=sock)
        connected: list[socket.socket] = []
        deadline = time.monotonic() + within
        while pending and (remaining := deadline - time.monotonic()) > 0:
            for key, _ in selector.select(remaining):
                sock = key.data
                selector.unregister(sock)
                del pending[sock]
                if sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0:
                    connected.append(sock)
                else:
                    sock.close()
        for sock in pending:
            sock.close()
    return connected


def _answers(socks: list[socket.socket], request: bytes, *, within: float) -> list[bytes]:
    """Send the request over every connection; what each answered (until it closed) within the time."""
    received = {sock: bytearray() for sock in socks}
    with selectors.DefaultSelector() as selector:
        for sock in socks:
            sock.setblocking(True)
            sock.sendall(request)
            sock.setblocking(False)
            selector.register(sock, selectors.EVENT_READ, data=sock)
        open_ = set(socks)
        deadline = time.monotonic() + within
        while open_ and (remaining := deadline - time.monotonic()) > 0:
            for key, _ in selector.select(remaining):
                sock = key.data
                try:
                    data = sock.recv(65536)
                except ConnectionError:
                    data = b""
                if data:
                    received[sock] += data
                else:
                    selector.unregister(sock)
                    open_.discard(sock)
    return [bytes(received[sock]) for sock in socks]


def test_the_server_may_open_as_many_files_as_the_system_allows(tmp_path: Path) -> None:
    with _served_with_low_files_limit(tmp_path) as served:
        soft, hard = _open_files_limits(served.process.pid)
    assert soft == hard


@pytest.mark.skipif(_somaxconn() < CONNECTIONS, reason="the system queues fewer connections per socket")
def test_a_burst_of_connections_waits_for_a_busy_server_and_gets_answers(tmp_path: Path) -> None:
    with _served_with_low_files_limit(tmp_path) as served:
        url = urllib.parse.urlsplit(served.url)
        address = (url.hostname or "127.0.0.1", url.port or 80)
        with _paused(served.process.pid):
            socks = _connect_all(address, CONNECTIONS, within=2.0)  # a dropped SYN is sent again after 1 s, 3 s...
        try:
            assert len(socks) == CONNECTIONS, "handshakes dropped: the listening socket's queue overflowed"
            request = f"GET /version HTTP/1.1\r\nHost: {url.netloc}\r\nConnection: close\r\n\r\n".encode()
            answers = _answers(socks, request, within=30.0)
        finally:
            for sock in socks:
                sock.close()
        assert sum(answer.startswith(b"HTTP/1.1 200 ") for answer in answers) == CONNECTIONS
        assert "Too many open files" not in served.log()
