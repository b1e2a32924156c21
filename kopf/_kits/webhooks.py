"""
Webhook servers and tunnels: how apiservers reach the operator's admission handlers.

A server/tunnel is a callable that accepts the framework's callback (:class:`WebhookFn`)
and returns an async iterator of client configs (:class:`WebhookClientConfig`). Iterating
starts the serving; a new config is yielded every time the way to reach the server changes.
The iterator never ends on its own: it holds control while serving, and stops serving
when it is closed (or cancelled).

The provided servers/tunnels are also optional async context managers: when the context
is exited, the iterators made by that object are closed, so the system resources (sockets,
tunnels, temporary files) are released even if nobody closes the iterators explicitly.

The servers are based on aiohttp (an implementation detail). HTTPS is the default; without
certificates given, a self-signed one is generated (that needs ``pip install kopf[dev]``).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import dataclasses
import enum
import hashlib
import ipaddress
import json
import logging
import os
import ssl
import tempfile
import urllib.parse
import weakref
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterable, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any, ClassVar, Self

if TYPE_CHECKING:  # imported when serving: the server side of aiohttp is not needed without webhooks
    from aiohttp import web

from kopf._cogs.aiokits import clock
from kopf._cogs.helpers import certificates
from kopf._cogs.structs import reviews

logger = logging.getLogger("kopf._kits.webhooks")

#: The default port to listen for the webhook requests on.
DEFAULT_PORT = 9443

#: The default address to listen on for the plain servers (only the local machine).
DEFAULT_ADDR = "localhost"

#: The default address to listen on for the servers that are reached via the magic hostnames:
#: the requests come from the clusters' networks (docker bridges, VMs), not from the loopback.
ANY_ADDR = "0.0.0.0"

PathLike = str | os.PathLike[str]


class WebhookContextManager:
    """
    The optional async context manager protocol of the provided servers & tunnels.

    The context returns the object itself. On exit, the iterators made by this object
    (by calling it) are closed as if they were garbage-collected, so that their servers,
    tunnels, and temporary files are released deterministically.
    """

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> None:
        await self._close_all()

    @property
    def _generators(self) -> weakref.WeakSet[AsyncGenerator[reviews.WebhookClientConfig, None]]:
        # Not in __init__: the descendants (incl. the users' ones) need not call super().__init__().
        generators: weakref.WeakSet[AsyncGenerator[reviews.WebhookClientConfig, None]]
        generators = self.__dict__.setdefault("_kopf_generators", weakref.WeakSet())
        return generators

    @property
    def _cleanups(self) -> dict[object, Callable[[], Awaitable[None]]]:
        cleanups: dict[object, Callable[[], Awaitable[None]]] = self.__dict__.setdefault("_kopf_cleanups", {})
        return cleanups

    def _track(
        self,
        gen: AsyncGenerator[reviews.WebhookClientConfig, None],
    ) -> AsyncIterator[reviews.WebhookClientConfig]:
        """Remember the generator to close it when the context manager exits."""
        self._generators.add(gen)
        return gen

    def _add_cleanup(self, key: object, fn: Callable[[], Awaitable[None]]) -> None:
        """Remember a cleanup to do on exit in case the generator cannot be closed."""
        self._cleanups[key] = fn

    def _pop_cleanup(self, key: object) -> Callable[[], Awaitable[None]] | None:
        """Forget the cleanup and return it, unless it is already done (or being done) on exit."""
        return self._cleanups.pop(key, None)

    async def _close_all(self) -> None:
        for gen in list(self._generators):
            # If it is running in another task (e.g. serving while awaited by a consumer), it cannot be
            # closed from here: its resources are released below, and it ends when its task ends.
            if not getattr(gen, "ag_running", False):
                await gen.aclose()
            self._generators.discard(gen)
        while self._cleanups:
            _, fn = self._cleanups.popitem()
            await fn()


def _normalize_path(path: str | None) -> str:
    """A root path as ``/a/b`` (no trailing slash), or an empty string for no root path."""
    parts = [part for part in (path or "").split("/") if part]
    return "".join(f"/{part}" for part in parts)


def _url_host(host: str) -> str:
    """A hostname as it goes into a URL: IPv6 addresses in brackets."""
    try:
        ip = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return host
    return f"[{ip}]" if ip.version == 6 else str(ip)


def _read_file(path: PathLike | None) -> bytes | None:
    if path is None:
        return None
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


def _write_file(path: PathLike, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)


def _fingerprint(paths: Iterable[PathLike | None]) -> tuple[str | None, ...]:
    """The digests of the files' contents (``None`` for absent/unreadable files), to detect changes."""
    result: list[str | None] = []
    for path in paths:
        data = _read_file(path)
        result.append(None if data is None else hashlib.sha256(data).hexdigest())
    return tuple(result)


def _load_cert_chain(context: ssl.SSLContext, cert: bytes, pkey: bytes, password: str | None) -> None:
    """Load an in-memory certificate & key: the ssl module only reads them from files."""
    with tempfile.TemporaryDirectory(prefix="kopf-webhook-") as tmpdir:
        certpath = os.path.join(tmpdir, "cert.pem")
        pkeypath = os.path.join(tmpdir, "pkey.pem")
        fd = os.open(pkeypath, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(pkey)
        _write_file(certpath, cert)
        context.load_cert_chain(certpath, pkeypath, password=password)


def _status(code: int, reason: str, message: str) -> web.Response:
    """An error response shaped as a Kubernetes ``Status``, with a human-readable message."""
    from aiohttp import web

    payload = {
        "apiVersion": "v1",
        "kind": "Status",
        "status": "Failure",
        "code": code,
        "reason": reason,
        "message": message,
    }
    return web.json_response(payload, status=code)


def _denial(review: reviews.Request, message: str) -> reviews.Response:
    """A review's response that denies the admission with an internal error (code 500)."""
    return {
        "apiVersion": review["apiVersion"],
        "kind": reviews.REVIEW_KIND,
        "response": {
            "uid": review["request"]["uid"],
            "allowed": False,
            "status": {"code": 500, "reason": "InternalError", "message": message},
        },
    }


@dataclasses.dataclass(frozen=True)
class _Serving:
    """What a server needs to (re)start: decided once per start and per certificate reload."""

    context: ssl.SSLContext | None
    cabundle: bytes | None


@dataclasses.dataclass(kw_only=True, eq=False)
class WebhookServer(WebhookContextManager):
    """
    A local HTTP(S) endpoint for the admission requests.

    ``addr``/``port`` is where to listen (``localhost``:9443 by default; ``port=0`` picks
    a free port). ``path`` is the root path of the webhooks; the handler ids follow it
    as the last path component. ``host`` overrides the hostname in the yielded URLs
    (by default, the class's ``DEFAULT_HOST``, or else ``addr``).

    HTTPS is the default. ``certfile``/``pkeyfile`` (with an optional ``password``) are
    the server's certificate; without them, a self-signed certificate is generated for
    the host, the addr, and ``extra_sans`` (``password`` then encrypts its private key).
    ``cadata``/``cafile`` is the CA bundle for the clients (apiservers); with a generated
    certificate, it is that certificate itself; ``cadump`` is a file to save it to.
    ``context`` is a ready-made SSL context to use as is (certificates are then ignored).

    ``verify_mode``/``verify_cafile``/``verify_capath``/``verify_cadata`` verify the client
    certificates, if the clients present them (optionally, unless ``verify_mode`` says else);
    the verified peers' certificates are passed to the callback as ``sslpeer``.

    The files (certificates, keys, CAs) are checked every ``file_check_interval`` seconds;
    if any of them changes, the server restarts with them (and yields a new client config
    if the CA bundle changes).

    ``insecure=True`` serves plain HTTP (no certificates at all). Kubernetes does not accept
    it, but it is fine for ``curl`` and for tunnels that do the TLS themselves.
    """

    #: The hostname for the URLs if ``host`` is not specified (``None`` means the ``addr``).
    DEFAULT_HOST: ClassVar[str | None] = None

    #: The largest accepted request body; larger ones get HTTP 413.
    #: Kubernetes objects are limited to ~1.5 MiB, and a review can carry two of them.
    MAX_BODY_SIZE: ClassVar[int] = 8 * 1024 * 1024

    #: How long to wait for the requests in flight when stopping (seconds).
    SHUTDOWN_TIMEOUT: ClassVar[float] = 5.0

    addr: str | None = None
    port: int | None = None
    path: str | None = None
    host: str | None = None
    cadata: bytes | None = None
    cafile: PathLike | None = None
    cadump: PathLike | None = None
    context: ssl.SSLContext | None = None
    insecure: bool = False
    certfile: PathLike | None = None
    pkeyfile: PathLike | None = None
    password: str | None = None
    extra_sans: Iterable[str] = ()
    verify_mode: ssl.VerifyMode | None = None
    verify_cafile: PathLike | None = None
    verify_capath: PathLike | None = None
    verify_cadata: str | bytes | None = None
    file_check_interval: float = 60

    @staticmethod
    def build_certificate(hostnames: Iterable[str], password: str | None = None) -> tuple[bytes, bytes]:
        """
        Build a self-signed certificate (its own CA) with the hostnames as SANs.

        DNS names & IP addresses are recognised and normalised; wildcard IPs (``0.0.0.0``)
        are skipped. The first DNS name is the Common Name (or the first IP if none).
        Returns the certificate & the private key (encrypted with the password if given),
        PEM-encoded. Needs the ``cryptography`` package (``pip install kopf[dev]``).
        """
        return certificates.build_self_signed(hostnames, now=clock.utcnow(), password=password)

    def __call__(self, fn: reviews.WebhookFn) -> AsyncIterator[reviews.WebhookClientConfig]:
        return self._track(self._serve(fn))

    async def _endpoint(self) -> tuple[str | None, str]:
        """
        The hostname for the URLs (``None`` to use the address) & the address to listen on.

        The servers with magic hostnames listen on all interfaces by default: the requests
        come from the clusters' networks (docker bridges, VMs), not from the loopback.
        """
        host = self.host if self.host is not None else self.DEFAULT_HOST
        magic = self.host is None and self.DEFAULT_HOST is not None
        return host, (self.addr if self.addr is not None else ANY_ADDR if magic else DEFAULT_ADDR)

    def _watched_files(self) -> tuple[PathLike | None, ...]:
        if self.insecure or self.context is not None:
            return (self.cafile,)
        return (self.certfile, self.pkeyfile, self.cafile, self.verify_cafile)

    def _prepare(self, *, host: str | None, addr: str) -> _Serving:
        """Build the SSL context and decide on the CA bundle (reads the files, generates the keys)."""
        cabundle = self.cadata if self.cadata is not None else _read_file(self.cafile)
        if self.cafile is not None and cabundle is None:
            raise FileNotFoundError(f"The CA file of the webhook server cannot be read: {self.cafile!s}")

        if self.insecure:
            return _Serving(context=None, cabundle=cabundle)
        if self.context is not None:
            return _Serving(context=self.context, cabundle=cabundle)

        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        if self.certfile is not None or self.pkeyfile is not None:
            if self.certfile is None:
                raise ValueError("The webhook server's pkeyfile= needs a certfile= too.")
            context.load_cert_chain(self.certfile, self.pkeyfile, password=self.password)
            if cabundle is None:  # a self-signed certificate is its own CA; a chain file carries its CAs
                cabundle = _read_file(self.certfile)
        else:
            certificates.require_cryptography()
            hostnames = [host, addr, *self.extra_sans]
            names, ips = certificates.split_hostnames(hostnames)
            if not names and not ips:  # e.g. only 0.0.0.0: usable as localhost at least
                hostnames.append("localhost")
            cert, pkey = self.build_certificate([h for h in hostnames if h], self.password)
            _load_cert_chain(context, cert, pkey, self.password)
            cabundle = cert if cabundle is None else cabundle

        verifying = (self.verify_cafile, self.verify_capath, self.verify_cadata)
        if any(value is not None for value in verifying):
            context.load_verify_locations(
                cafile=self.verify_cafile, capath=self.verify_capath, cadata=self.verify_cadata
            )
            context.verify_mode = ssl.CERT_OPTIONAL
        if self.verify_mode is not None:
            context.verify_mode = self.verify_mode
        return _Serving(context=context, cabundle=cabundle)

    def _build_config(self, *, host: str, port: int, serving: _Serving) -> reviews.WebhookClientConfig:
        scheme = "http" if serving.context is None else "https"
        url = f"{scheme}://{_url_host(host)}:{port}{_normalize_path(self.path)}"
        config: reviews.WebhookClientConfig = {"url": url}
        if serving.cabundle is not None:
            config["caBundle"] = base64.b64encode(serving.cabundle).decode("ascii")
        return config

    def _make_app(self, fn: reviews.WebhookFn) -> web.Application:
        from aiohttp import web

        root = _normalize_path(self.path)

        async def handle(request: web.Request) -> web.StreamResponse:
            return await self._handle(request, fn=fn, root=root)

        app = web.Application(client_max_size=self.MAX_BODY_SIZE)
        app.router.add_route("*", r"/{tail:[\s\S]*}", handle)
        return app

    async def _handle(self, request: web.Request, *, fn: reviews.WebhookFn, root: str) -> web.StreamResponse:
        from aiohttp import web
        from aiohttp.web_protocol import RequestPayloadError

        path = request.path
        if path != root and not path.startswith(f"{root}/"):
            return _status(404, "NotFound", f"No webhooks are served at {path!r}; the root is {root or '/'!r}.")
        webhook = path[len(root) :].strip("/") or None
        if request.method != "POST":
            refusal = _status(405, "MethodNotAllowed", "Admission reviews must be POSTed.")
            refusal.headers["Allow"] = "POST"
            return refusal

        if request.content_length is not None and request.content_length > self.MAX_BODY_SIZE:
            return _status(
                413,
                "RequestEntityTooLarge",
                f"The request body is too large: {request.content_length} bytes "
                f"while at most {self.MAX_BODY_SIZE} are accepted.",
            )
        try:
            raw = await request.read()
        except web.HTTPRequestEntityTooLarge:
            return _status(
                413,
                "RequestEntityTooLarge",
                f"The request body is too large: at most {self.MAX_BODY_SIZE} bytes are accepted.",
            )
        except (web.HTTPException, ValueError, ConnectionError, RequestPayloadError) as e:  # e.g. a broken gzip
            request.content.feed_eof()  # read no more of it (aiohttp would fail again and log it as unhandled)
            lines = str(e).strip().splitlines()
            reason = lines[-1].strip() if lines else repr(e)
            refusal = _status(400, "BadRequest", f"The request body cannot be read: {reason}")
            refusal.force_close()
            return refusal
        try:
            payload = json.loads(raw)
        except ValueError as e:  # incl. UnicodeDecodeError
            return _status(400, "BadRequest", f"The request body is not valid JSON: {e}")
        except RecursionError:
            return _status(400, "BadRequest", "The request body is not valid JSON: it is nested too deeply.")
        try:
            review = reviews.check_request(payload)
        except reviews.MalformedReviewError as e:
            return _status(422, "Invalid", f"The request body is not an admission review request: {e}")

        headers = dict(request.headers)
        transport = request.transport
        peercert = transport.get_extra_info("peercert") if transport is not None else None
        sslpeer = peercert or {}  # an empty mapping when the client has no (verified) certificate, as published
        try:
            response = await fn(review, webhook=webhook, headers=headers, sslpeer=sslpeer)
        except reviews.MalformedReviewError as e:
            return _status(422, "Invalid", f"The request body is not an admission review request: {e}")
        except Exception:
            # A well-formed review that cannot be processed is denied (not an HTTP error, which the apiserver
            # would take for an unreachable webhook); the details stay in the log, not with the clients.
            logger.exception(f"Admission review {review['request']['uid']!r} failed in the callback.")
            return web.json_response(_denial(review, "The admission review could not be processed."))
        return web.json_response(response)

    async def _serve(self, fn: reviews.WebhookFn) -> AsyncGenerator[reviews.WebhookClientConfig, None]:
        from aiohttp import web

        host, addr = await self._endpoint()
        serving = self._prepare(host=host, addr=addr)  # fails at startup if misconfigured
        fingerprint = _fingerprint(self._watched_files())

        # Bodies are taken as sent (apiservers never compress them): a compressed one is no review (a 400),
        # and a small compressed body never becomes a huge one.
        runner = web.AppRunner(
            self._make_app(fn),
            handle_signals=False,
            access_log=None,
            shutdown_timeout=self.SHUTDOWN_TIMEOUT,
            auto_decompress=False,
        )
        await runner.setup()
        self._add_cleanup(runner, runner.cleanup)
        try:
            port = self.port if self.port is not None else DEFAULT_PORT
            site = web.TCPSite(runner, addr, port, ssl_context=serving.context, reuse_address=True)
            await site.start()
            port = port or self._bound_port(runner)
            config = self._build_config(host=host or addr, port=port, serving=serving)
            self._dump_ca(serving)
            logger.debug(f"Serving the admission webhooks at {config.get('url')}")
            yield config

            watched = self._watched_files()
            if not any(path is not None for path in watched):
                await asyncio.Event().wait()  # nothing can change: just serve forever
            while True:
                await asyncio.sleep(self.file_check_interval)
                new_fingerprint = _fingerprint(watched)
                if new_fingerprint == fingerprint:
                    continue
                try:
                    new_serving = self._prepare(host=host, addr=addr)
                except (OSError, ValueError, ssl.SSLError) as e:
                    # E.g. a certificate renewed but its key not yet: keep the old ones, retry later.
                    logger.error(f"The webhook server's files changed but cannot be loaded; retrying later: {e}")
                    continue
                fingerprint = new_fingerprint
                logger.info("The webhook server's files have changed: restarting the server.")
                await site.stop()
                site = web.TCPSite(runner, addr, port, ssl_context=new_serving.context, reuse_address=True)
                await site.start()
                new_config = self._build_config(host=host or addr, port=port, serving=new_serving)
                if new_serving.cabundle != serving.cabundle:
                    self._dump_ca(new_serving)
                serving = new_serving
                if new_config != config:
                    config = new_config
                    yield config
        finally:
            cleanup = self._pop_cleanup(runner)
            if cleanup is not None:
                await cleanup()

    def _dump_ca(self, serving: _Serving) -> None:
        if self.cadump is not None and serving.cabundle is not None:
            _write_file(self.cadump, serving.cabundle)

    @staticmethod
    def _bound_port(runner: web.AppRunner) -> int:
        for address in runner.addresses:
            if isinstance(address, tuple) and len(address) >= 2:
                return int(address[1])
        raise RuntimeError("The webhook server is not listening on any TCP port.")


@dataclasses.dataclass(kw_only=True, eq=False)
class WebhookK3dServer(WebhookServer):
    """
    A server for K3d/K3s clusters on the same host (even in VMs), reached via ``host.k3d.internal``.

    The forwarding is done by K3d itself: this server only puts the magic hostname
    into the URLs and the self-signed certificate. Unless ``addr`` is given, it listens
    on all interfaces, since the requests come from the cluster's network, not the loopback.
    """

    DEFAULT_HOST: ClassVar[str | None] = "host.k3d.internal"


@dataclasses.dataclass(kw_only=True, eq=False)
class WebhookMinikubeServer(WebhookServer):
    """
    A server for Minikube clusters on the same host (even in VMs), reached via ``host.minikube.internal``.

    The forwarding is done by Minikube itself: this server only puts the magic hostname
    into the URLs and the self-signed certificate. Unless ``addr`` is given, it listens
    on all interfaces, since the requests come from the cluster's network, not the loopback.
    """

    DEFAULT_HOST: ClassVar[str | None] = "host.minikube.internal"


@dataclasses.dataclass(kw_only=True, eq=False)
class WebhookDockerDesktopServer(WebhookServer):
    """
    A server for the Docker Desktop's cluster, reached via ``host.docker.internal``.

    The forwarding is done by Docker Desktop itself: this server only puts the magic
    hostname into the URLs and the self-signed certificate. Unless ``addr`` is given,
    it listens on all interfaces.
    """

    DEFAULT_HOST: ClassVar[str | None] = "host.docker.internal"


@dataclasses.dataclass(kw_only=True, eq=False)
class WebhookNgrokTunnel(WebhookContextManager):
    """
    A tunnel from a public ngrok endpoint to a local plain-HTTP webhook server.

    ``addr``, ``port``, ``path`` are for the local server (as in :class:`WebhookServer`).
    ``token`` is the ngrok auth token (for paid plans), ``region`` is the ngrok region,
    ``binary`` is the path to the ngrok executable (otherwise, pyngrok downloads one).

    The public URL is HTTPS with ngrok's own certificates (trusted by default, so no CA
    bundle is reported). The endpoint is public and unauthenticated: use it only for
    development, with handlers that have no side effects.

    Needs ``pyngrok`` (``pip install pyngrok``); without it, the tunnel fails at startup.
    """

    addr: str | None = None
    port: int | None = None
    path: str | None = None
    token: str | None = None
    region: str | None = None
    binary: PathLike | None = None

    def __call__(self, fn: reviews.WebhookFn) -> AsyncIterator[reviews.WebhookClientConfig]:
        return self._track(self._serve(fn))

    async def _serve(self, fn: reviews.WebhookFn) -> AsyncGenerator[reviews.WebhookClientConfig, None]:
        purpose, install = "Tunnelling the webhooks via ngrok", "pip install pyngrok"
        pyngrok_conf = certificates.import_optional("pyngrok.conf", purpose=purpose, install=install)
        pyngrok_ngrok = certificates.import_optional("pyngrok.ngrok", purpose=purpose, install=install)

        options: dict[str, Any] = {}
        if self.binary is not None:
            options["ngrok_path"] = os.fspath(self.binary)
        if self.token is not None:
            options["auth_token"] = self.token
        if self.region is not None:
            options["region"] = self.region
        ngrok_config = pyngrok_conf.PyngrokConfig(**options)

        loop = asyncio.get_running_loop()
        server = WebhookServer(addr=self.addr, port=self.port, path=self.path, insecure=True)
        async with server, contextlib.aclosing(server._serve(fn)) as local_configs:
            local_config = await anext(local_configs)  # the local server is started
            local = urllib.parse.urlsplit(local_config.get("url") or "")
            target = f"{local.hostname}:{local.port}"
            tunnel = await loop.run_in_executor(
                None, lambda: pyngrok_ngrok.connect(target, bind_tls=True, pyngrok_config=ngrok_config)
            )
            public_url = str(tunnel.public_url).rstrip("/")
            try:
                logger.info(f"Tunnelling the admission webhooks from {public_url} to {target} via ngrok.")
                yield {"url": f"{public_url}{_normalize_path(self.path)}"}
                await asyncio.Event().wait()  # the local server needs no attention: insecure, no files
            finally:
                await loop.run_in_executor(
                    None, lambda: pyngrok_ngrok.disconnect(public_url, pyngrok_config=ngrok_config)
                )


class ClusterKind(enum.Enum):
    """The kinds of clusters that the auto-servers & auto-tunnels recognise."""

    UNKNOWN = "unknown"
    IN_CLUSTER = "in-cluster"
    K3D = "k3d"
    MINIKUBE = "minikube"
    DOCKER_DESKTOP = "docker-desktop"


#: The servers to use for the clusters that are reachable from inside via magic hostnames.
MAGIC_SERVERS: Mapping[ClusterKind, type[WebhookServer]] = {
    ClusterKind.K3D: WebhookK3dServer,
    ClusterKind.MINIKUBE: WebhookMinikubeServer,
    ClusterKind.DOCKER_DESKTOP: WebhookDockerDesktopServer,
}

Fetcher = Callable[[str], Awaitable[Any]]


async def _fetch_from_api(url: str) -> Any:
    # Lazy: the detection is rare, and it is the only place where the webhooks talk to the API.
    from kopf._cogs.clients import api
    from kopf._cogs.configs.configuration import OperatorSettings

    settings = OperatorSettings()
    settings.networking.error_backoffs = []  # a guess is not worth waiting for
    settings.networking.request_timeout = 10
    return await api.get(url, settings=settings)


def _classify(version: Mapping[str, Any] | None, nodes: Iterable[Mapping[str, Any]]) -> ClusterKind:
    """Guess the cluster kind from the apiserver's version and the nodes' names, labels, & provider ids."""
    git_version = str((version or {}).get("gitVersion", ""))
    if "+k3s" in git_version:
        return ClusterKind.K3D
    for node in nodes:
        metadata = node.get("metadata") or {}
        name = str(metadata.get("name") or "")
        labels = metadata.get("labels") or {}
        provider_id = str((node.get("spec") or {}).get("providerID") or "")
        if provider_id.startswith("k3s://") or labels.get("node.kubernetes.io/instance-type") == "k3s":
            return ClusterKind.K3D
        if any(key.startswith("minikube.k8s.io/") for key in labels) or name == "minikube":
            return ClusterKind.MINIKUBE
        if name == "docker-desktop" or labels.get("kubernetes.io/hostname") == "docker-desktop":
            return ClusterKind.DOCKER_DESKTOP
    return ClusterKind.UNKNOWN


async def detect_cluster(
    *,
    environ: Mapping[str, str] | None = None,
    fetch: Fetcher | None = None,
) -> ClusterKind:
    """
    Guess what kind of cluster the operator works with, and from where.

    Inside a pod (``KUBERNETES_SERVICE_HOST`` is set), it is in-cluster regardless of the type.
    Otherwise, the apiserver's version and the nodes tell K3d/K3s, Minikube, Docker Desktop.
    Any failure to ask the API (no credentials, no permissions) means an unknown cluster.
    """
    environ = os.environ if environ is None else environ
    if environ.get("KUBERNETES_SERVICE_HOST"):
        return ClusterKind.IN_CLUSTER
    fetch = _fetch_from_api if fetch is None else fetch
    try:
        version = await fetch("/version")
    except Exception as e:
        logger.debug(f"Cannot detect the cluster kind: {e!r}")
        return ClusterKind.UNKNOWN
    if "+k3s" in str((version or {}).get("gitVersion", "")):
        return ClusterKind.K3D
    try:
        nodelist = await fetch("/api/v1/nodes")
    except Exception as e:
        logger.debug(f"Cannot list the nodes to detect the cluster kind: {e!r}")
        nodelist = None
    return _classify(version, (nodelist or {}).get("items") or [])


class ClusterDetector:
    """
    A mixin to guess the cluster kind (and so the magic hostname to reach the operator).

    Override :meth:`guess_kind` (e.g. in tests) to skip the real detection.
    """

    async def guess_kind(self) -> ClusterKind:
        return await detect_cluster()

    async def guess_host(self) -> str | None:
        kind = await self.guess_kind()
        server_cls = MAGIC_SERVERS.get(kind)
        return server_cls.DEFAULT_HOST if server_cls is not None else None


@dataclasses.dataclass(kw_only=True, eq=False)
class WebhookAutoServer(ClusterDetector, WebhookServer):
    """
    A local server that guesses its hostname: the magic one of K3d/K3s, Minikube, Docker Desktop.

    For other (or undetectable) clusters, it is a regular :class:`WebhookServer` with no
    hostname overrides. It never tunnels: see :class:`WebhookAutoTunnel` for that.
    """

    async def _endpoint(self) -> tuple[str | None, str]:
        if self.host is not None:
            return self.host, self.addr if self.addr is not None else DEFAULT_ADDR
        host = await self.guess_host()
        return host, (self.addr if self.addr is not None else ANY_ADDR if host is not None else DEFAULT_ADDR)


@dataclasses.dataclass(kw_only=True, eq=False)
class WebhookAutoTunnel(ClusterDetector, WebhookContextManager):
    """
    A magic-hostname server if the cluster kind is recognised, an ngrok tunnel otherwise.

    K3d/K3s, Minikube, Docker Desktop get their servers; in-cluster operators get
    a regular server (tunnelling makes no sense there); all others get an ngrok tunnel.
    Only the options common to all of them are accepted: where to listen locally.
    """

    addr: str | None = None
    port: int | None = None
    path: str | None = None

    def __call__(self, fn: reviews.WebhookFn) -> AsyncIterator[reviews.WebhookClientConfig]:
        return self._track(self._serve(fn))

    async def _choose(self) -> WebhookServer | WebhookNgrokTunnel:
        kind = await self.guess_kind()
        server_cls = MAGIC_SERVERS.get(kind)
        if server_cls is not None:
            return server_cls(addr=self.addr, port=self.port, path=self.path)
        elif kind == ClusterKind.IN_CLUSTER:
            return WebhookServer(addr=self.addr, port=self.port, path=self.path)
        else:
            return WebhookNgrokTunnel(addr=self.addr, port=self.port, path=self.path)

    async def _serve(self, fn: reviews.WebhookFn) -> AsyncGenerator[reviews.WebhookClientConfig, None]:
        server = await self._choose()
        logger.debug(f"The auto-tunnel uses {server!r}.")
        async with server, contextlib.aclosing(server._serve(fn)) as configs:
            async for config in configs:
                yield config
