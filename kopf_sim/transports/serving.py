"""Serving an aiohttp application on a real socket, for kubectl & out-of-process clients.

It adds what real Kubernetes clients expect of an API server: HTTPS with a CA they can
trust (from the kubeconfig), client certificates signed by that CA as users' identities, and
bearer-token authentication answered with a Kubernetes ``Status`` on failure. Usage::

    async with ServedApp(app, tls=True, token="s3cr3t") as served:
        served.write_kubeconfig("/tmp/kubeconfig")   # for `kubectl --kubeconfig ...`
        print(served.url)                           # e.g. https://127.0.0.1:43567
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import os
import resource
import signal
import socket
import ssl
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Self

from aiohttp import hdrs, web
from aiohttp.typedefs import Handler, Middleware

from kopf_sim.http.app import ACCESS_KEY
from kopf_sim.rbac.access import CERTIFICATE_USER, certificate_user
from kopf_sim.transports.certs import CertificateBundle, generate_self_signed, sign_client_certificate
from kopf_sim.transports.kubeconfig import write_kubeconfig

__all__ = [
    "PUBLIC_PATHS",
    "UNAUTHORIZED_STATUS",
    "ServedApp",
    "bearer_token_middleware",
    "client_certificate_middleware",
    "serve_forever",
]

UNAUTHORIZED_STATUS = {
    "kind": "Status",
    "apiVersion": "v1",
    "metadata": {},
    "status": "Failure",
    "message": "Unauthorized",
    "reason": "Unauthorized",
    "code": 401,
}


MAX_HEADER_BYTES = 1024 * 1024

#: What anyone may read without a token, as the apiserver's ``system:public-info-viewer`` role allows.
PUBLIC_PATHS = frozenset({"/healthz", "/livez", "/readyz", "/version", "/version/"})


def bearer_token_middleware(token: str, also: Callable[[str], bool] | None = None) -> Middleware:
    """Reject requests without ``Authorization: Bearer <token>``, as kube-apiserver does.

    The header is read as the apiserver reads it: the scheme, one space, the token (anything after
    a further space is ignored). A request without a token is anonymous, and may read only the
    :data:`PUBLIC_PATHS`; a wrong token (or a non-UTF-8 one) is refused everywhere. ``also`` accepts
    more tokens (the users' of ``kopf-sim serve --rbac-user``).
    """
    expected = token.encode("utf-8")

    @web.middleware
    async def check_bearer_token(request: web.Request, handler: Handler) -> web.StreamResponse:
        given = _bearer_token(request.headers.get(hdrs.AUTHORIZATION, ""))
        if CERTIFICATE_USER.get() is not None:  # authenticated by its client certificate already
            allowed = True
        elif given is None:
            allowed = False
        elif given:
            allowed = hmac.compare_digest(given, expected) or (also is not None and also(given.decode("utf-8")))
        else:
            allowed = request.path in PUBLIC_PATHS
        if not allowed:
            return web.json_response(UNAUTHORIZED_STATUS, status=401)
        return await handler(request)

    return check_bearer_token


def client_certificate_middleware() -> Middleware:
    """Take a verified client certificate's subject as the request's user (see :data:`CERTIFICATE_USER`).

    The TLS layer has verified the certificate against the served CA (a certificate of another CA fails the
    handshake); a request without one goes on to the tokens, or is the admin's where tokens are not required.
    """

    @web.middleware
    async def identify_by_certificate(request: web.Request, handler: Handler) -> web.StreamResponse:
        peer = request.transport.get_extra_info("peercert") if request.transport is not None else None
        subject = [pair for rdn in (peer or {}).get("subject", ()) for pair in rdn]
        names = [value for key, value in subject if key == "commonName"]
        if not names:
            return await handler(request)
        groups = [value for key, value in subject if key == "organizationName"]
        reset = CERTIFICATE_USER.set(certificate_user(names[-1], groups))
        try:
            return await handler(request)
        finally:
            CERTIFICATE_USER.reset(reset)

    return identify_by_certificate


def _bearer_token(header: str) -> bytes | None:
    """The token of an ``Authorization`` header: empty if there is none, None if it cannot be a token."""
    parts = header.split(" ", 2)
    if len(parts) < 2 or parts[0].lower() != "bearer":
        return b""
    try:
        return parts[1].encode("utf-8")
    except UnicodeEncodeError:  # aiohttp keeps undecodable bytes as surrogates: no token can match them
        return None


class ServedApp:
    """Serve an application (not yet started) on a TCP port, over HTTP or HTTPS.

    The app goes through its normal startup on :meth:`start` and its shutdown & cleanup
    on :meth:`stop`. With ``tls=True``, a throw-away CA and server certificate are made
    for ``localhost``, the host, and ``extra_hostnames``; clients trust :attr:`ca_pem`.
    Handlers are cancelled when their clients disconnect (``handler_cancellation``),
    so that abandoned watch-streams do not linger until the next event. On stop,
    in-flight handlers get ``shutdown_timeout`` seconds (up to twice that) to finish
    before they are cancelled, as in :class:`kopf_sim.transports.inmemory.InMemoryServer`.
    """

    def __init__(
        self,
        app: web.Application,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        token: str | None = None,
        tls: bool = False,
        extra_hostnames: Sequence[str] = (),
        handler_cancellation: bool = True,
        shutdown_timeout: float = 0.1,
    ) -> None:
        self.app = app
        self.host = host
        self.port = port
        self.token = token
        self.tls = tls
        self.extra_hostnames = tuple(extra_hostnames)
        self.ca_pem: bytes | None = None
        self._bundle: CertificateBundle | None = None
        self._url: str | None = None
        self._runner = web.AppRunner(
            app,
            handler_cancellation=handler_cancellation,
            shutdown_timeout=shutdown_timeout,
            # As Go's HTTP server of the apiserver: up to 1 MiB of request line & headers (aiohttp: 8 KiB).
            max_line_size=MAX_HEADER_BYTES,
            max_field_size=MAX_HEADER_BYTES,
            # A body left unread (a refused request) closes the connection, rather than being read after the
            # response (aiohttp would log a failure to read it as unhandled).
            lingering_time=0,
            # Bodies are taken as sent, as the apiserver takes them: a Content-Encoding is not decoded (so a
            # small compressed body never becomes a huge one; a gzipped body is not JSON, so a 400).
            auto_decompress=False,
        )

    @property
    def url(self) -> str:
        """The base URL of the API, available after :meth:`start`."""
        if self._url is None:
            raise RuntimeError("The app is not served yet.")
        return self._url

    async def start(self) -> None:
        if self._url is not None:
            raise RuntimeError("The app is already served.")
        if self.token is not None:
            # First of all middlewares: nothing of the app runs for unauthenticated requests.
            access = self.app.get(ACCESS_KEY)
            also = access.knows_token if access is not None else None
            self.app.middlewares.insert(0, bearer_token_middleware(self.token, also))
        if self.tls:  # before the tokens: a request with a client certificate needs none
            self.app.middlewares.insert(0, client_certificate_middleware())
        ssl_context = self._make_ssl_context() if self.tls else None
        await self._runner.setup()
        try:
            site = web.TCPSite(self._runner, self.host, self.port, ssl_context=ssl_context, backlog=listen_backlog())
            await site.start()
        except BaseException:
            await self._runner.cleanup()
            raise
        bound_port = self._runner.addresses[0][1]
        self._url = f"{'https' if self.tls else 'http'}://{_url_host(self.host)}:{bound_port}"

    async def stop(self) -> None:
        """Stop listening, close connections, run the app's shutdown & cleanup."""
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

    def write_kubeconfig(
        self, path: str | os.PathLike[str], *, user: str | None = None, groups: Sequence[str] = ()
    ) -> None:
        """A kubeconfig of the admin (with the token, if one is required), or of a user by a client certificate.

        ``user``: a fresh client certificate signed by the served CA, ``CN=user`` and ``O=group`` per group
        (HTTPS only), which the server takes as that user's identity, as the apiserver does.
        """
        if user is None:
            write_kubeconfig(path, server=self.url, token=self.token, ca_pem=self.ca_pem)
            return
        if self._bundle is None:
            raise RuntimeError("Client certificates need HTTPS: serve with tls=True (kopf-sim serve --tls).")
        cert_pem, key_pem = sign_client_certificate(self._bundle, user, groups)
        write_kubeconfig(
            path,
            server=self.url,
            ca_pem=self.ca_pem,
            client_certificate_pem=cert_pem,
            client_key_pem=key_pem,
            user_name=user,
        )

    def _make_ssl_context(self) -> ssl.SSLContext:
        hostnames, ips = ["localhost", *self.extra_hostnames], ["127.0.0.1", "::1"]
        try:
            address = ipaddress.ip_address(self.host)
        except ValueError:
            hostnames.append(self.host)
        else:
            if not address.is_unspecified:
                ips.append(str(address))
        bundle = self._bundle = generate_self_signed(_unique(hostnames), _unique(ips))
        self.ca_pem = bundle.ca_pem

        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.verify_mode = ssl.CERT_OPTIONAL  # client certificates of the same CA are users' identities
        context.load_verify_locations(cadata=bundle.ca_pem.decode("ascii"))
        # The ssl module loads keys only from files: keep them on disk for a moment only.
        with tempfile.TemporaryDirectory(prefix="kopf-sim-tls-") as tmpdir:
            cert_path, key_path = Path(tmpdir) / "tls.crt", Path(tmpdir) / "tls.key"
            cert_path.write_bytes(bundle.cert_pem)
            key_path.touch(mode=0o600)
            key_path.write_bytes(bundle.key_pem)
            context.load_cert_chain(cert_path, key_path)
        return context


def serve_forever(
    app: web.Application,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    token: str | None = None,
    tls: bool = False,
    kubeconfig: str | None = None,
    on_ready: Callable[[ServedApp], None] | None = None,
    extra_hostnames: Sequence[str] = (),
) -> None:
    """Serve in a new event loop until SIGINT or SIGTERM, then clean up and return.

    The kubeconfig, if requested, is written before ``on_ready`` is called.
    """
    raise_open_files_limit()
    served = ServedApp(app, host=host, port=port, token=token, tls=tls, extra_hostnames=extra_hostnames)
    asyncio.run(_serve_until_signalled(served, kubeconfig=kubeconfig, on_ready=on_ready))


async def _serve_until_signalled(
    served: ServedApp,
    *,
    kubeconfig: str | None,
    on_ready: Callable[[ServedApp], None] | None,
) -> None:
    loop = asyncio.get_running_loop()
    stopping = asyncio.Event()
    signals = (signal.SIGINT, signal.SIGTERM)
    for signum in signals:
        loop.add_signal_handler(signum, stopping.set)
    try:
        async with served:
            if kubeconfig is not None:
                served.write_kubeconfig(kubeconfig)
            if on_ready is not None:
                on_ready(served)
            await stopping.wait()
    finally:
        for signum in signals:
            loop.remove_signal_handler(signum)


def listen_backlog() -> int:
    """How many connections may wait for the server's loop to accept them: the system's maximum.

    As the apiserver (Go) listens: a burst of connections (an operator patching thousands of objects at
    once, each over a connection of its own) while the loop is busy then waits in the kernel's queue,
    instead of overflowing aiohttp's default of 128, where the handshakes are dropped: the clients stall
    in retransmits, and fail on their connect timeouts or with resets.
    """
    try:
        return max(socket.SOMAXCONN, int(Path("/proc/sys/net/core/somaxconn").read_text()))
    except (OSError, ValueError):  # not Linux: the system caps the number at its own maximum
        return max(socket.SOMAXCONN, 4096)


def raise_open_files_limit() -> None:
    """Allow this process as many open files as the system lets it (the soft limit up to the hard one), as Go does.

    Every client connection is a file: with the usual soft limit of 1024, a client with a thousand requests in
    flight (an operator with a connection per object) would make ``accept()`` fail (EMFILE): the server would
    stall and log a traceback per attempt.
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    unlimited = resource.RLIM_INFINITY
    candidates = [] if hard == unlimited else [hard]
    candidates += [1024 * 1024, 65536, 10240]  # if the hard limit is unlimited, or refused (macOS: OPEN_MAX)
    for limit in candidates:
        if soft != unlimited and soft < limit and (hard == unlimited or limit <= hard):
            try:
                resource.setrlimit(resource.RLIMIT_NOFILE, (limit, hard))
            except (ValueError, OSError):
                continue
            return


def _url_host(host: str) -> str:
    """The host as it goes into a URL: unspecified addresses are reached via loopback."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host
    if address.is_unspecified:
        return "127.0.0.1" if address.version == 4 else "[::1]"
    return f"[{address}]" if address.version == 6 else str(address)


def _unique(items: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(items))
