"""
Credentials: what the login handlers return, and the vault that keeps them.

A :class:`ConnectionInfo` describes one endpoint with one set of credentials;
it carries the data, never the ways of getting it. The :class:`Vault` keeps the
connection infos by their keys (usually the ids of the login handlers), hands
them out to the API clients in the order of priority, drops the ones that
expired or were reported as invalid (HTTP 401), and makes the API calls wait
while the vault is empty and the login handlers re-authenticate.

Secrets (passwords, tokens, certificates, private keys) never show up in the
``repr()`` or ``str()`` of these objects: they may end up in the logs.

**The connector hook.** A connection info can carry a factory of aiohttp
connectors (a zero-argument callable returning a fresh ``aiohttp.BaseConnector``).
The API clients then use it for the sessions built from these credentials
instead of making a TCP/TLS connector of their own. This is how an in-process
transport (e.g. a simulated cluster that never opens sockets) plugs in. It is
not one of the documented constructor arguments, so it is attached by a method::

    info = ConnectionInfo(server='http://cluster.local').with_connector_factory(make_connector)

The hook takes no part in equality, hashing, or ``repr()``.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import copy
import dataclasses
import datetime
import logging
import os
import ssl
import tempfile
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, NewType

from kopf._cogs.aiokits import clock

if TYPE_CHECKING:
    import aiohttp

logger = logging.getLogger(__name__)

VaultKey = NewType("VaultKey", str)

ConnectorFactory = Callable[[], "aiohttp.BaseConnector"]

_SECRET_FIELDS = frozenset({"password", "token", "certificate_data", "private_key_data"})
_BULKY_FIELDS = frozenset({"ca_data"})


class LoginError(Exception):
    """Raised when the operator cannot login to the API."""


class AccessError(Exception):
    """Raised when the operator cannot access the API with any of the known credentials."""


@dataclasses.dataclass(frozen=True, repr=False)
class ConnectionInfo:
    """A single endpoint with specific credentials and connection flags to use."""

    server: str
    ca_path: str | os.PathLike[str] | None = None
    ca_data: str | bytes | None = None
    insecure: bool | None = None
    username: str | None = None
    password: str | None = None
    scheme: str | None = None
    token: str | None = None
    certificate_path: str | os.PathLike[str] | None = None
    certificate_data: str | bytes | None = None
    private_key_path: str | os.PathLike[str] | None = None
    private_key_data: str | bytes | None = None
    default_namespace: str | None = None
    priority: int = 0
    expiration: datetime.datetime | None = None
    proxy_url: str | None = None
    trust_env: bool = False  # the proxies & .netrc from the environment, as aiohttp reads them

    # Not a constructor argument (the documented signature stays as is): see `with_connector_factory()`.
    connector_factory: ConnectorFactory | None = dataclasses.field(
        default=None,
        init=False,
        repr=False,
        compare=False,
        hash=False,
    )

    def __repr__(self) -> str:
        parts: list[str] = []
        for field in dataclasses.fields(self):
            if field.name == "connector_factory":
                continue
            value = getattr(self, field.name)
            if value is None or (field.name in ("priority", "trust_env") and not value):
                continue
            if field.name in _SECRET_FIELDS:
                parts.append(f"{field.name}=<hidden>")
            elif field.name in _BULKY_FIELDS:
                parts.append(f"{field.name}=<{len(value)} bytes>")
            else:
                parts.append(f"{field.name}={value!r}")
        if self.connector_factory is not None:
            parts.append("connector_factory=<custom>")
        return f"{type(self).__name__}({', '.join(parts)})"

    __str__ = __repr__

    def as_http_headers(self) -> dict[str, str]:
        """The ``Authorization`` header of these credentials (the token, else the basic auth), if any."""
        headers: dict[str, str] = {}
        if self.token is not None:
            headers["Authorization"] = f"{self.scheme or 'Bearer'} {self.token}"
        elif self.username is not None or self.password is not None:
            userpass = f"{self.username or ''}:{self.password or ''}".encode()
            headers["Authorization"] = f"Basic {base64.b64encode(userpass).decode('ascii')}"
        elif self.scheme is not None:
            headers["Authorization"] = self.scheme
        return headers

    def as_aiohttp_basic_auth(self) -> aiohttp.BasicAuth | None:
        """
        The ``auth=`` of aiohttp for these credentials: always ``None``.

        The basic auth, if any, is already in :meth:`as_http_headers` (aiohttp refuses both at once).
        """
        return None

    def as_ssl_context(self) -> ssl.SSLContext:
        """The TLS setup of the credentials: the CA, the verification, and the client certificate."""
        cafile = os.path.expanduser(self.ca_path) if self.ca_path else None
        cadata = _ca_data(self.ca_data) if self.ca_data else None
        context = ssl.create_default_context(cafile=cafile, cadata=cadata)
        if self.insecure:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE

        has_cert = self.certificate_path is not None or self.certificate_data is not None
        has_key = self.private_key_path is not None or self.private_key_data is not None
        if has_cert:
            # The ssl module loads the client certificates only from files: put the data into
            # private temporary files for the time of loading (readable only by this user).
            with tempfile.TemporaryDirectory(prefix="kopf-") as tmpdir:
                certfile = _materialize(tmpdir, "cert.pem", self.certificate_path, self.certificate_data)
                keyfile = (
                    _materialize(tmpdir, "key.pem", self.private_key_path, self.private_key_data) if has_key else None
                )
                context.load_cert_chain(certfile=certfile, keyfile=keyfile)
        return context

    def with_connector_factory(self, factory: ConnectorFactory | None) -> ConnectionInfo:
        """A copy of this connection info whose sessions use connectors made by ``factory``."""
        clone = copy.copy(self)
        object.__setattr__(clone, "connector_factory", factory)
        return clone

    @property
    def expiration_utc(self) -> datetime.datetime | None:
        """The expiration as a TZ-aware UTC moment (TZ-naive values are treated as UTC)."""
        if self.expiration is None:
            return None
        if self.expiration.tzinfo is None:
            return self.expiration.replace(tzinfo=datetime.UTC)
        return self.expiration.astimezone(datetime.UTC)

    def is_expired(self, now: datetime.datetime | None = None) -> bool:
        expiration = self.expiration_utc
        if expiration is None:
            return False
        return expiration <= (now if now is not None else clock.utcnow())


@dataclasses.dataclass(frozen=True, repr=False)
class AiohttpSession(ConnectionInfo):
    """
    A ready-made aiohttp session as credentials: the login handler has set it up completely.

    The requests go to ``server`` via this session as it is (its headers, auth, TLS);
    the framework never closes it: its creator does.
    """

    aiohttp_session: aiohttp.ClientSession = dataclasses.field(kw_only=True, compare=False)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(server={self.server!r}, priority={self.priority!r})"

    __str__ = __repr__


def _as_bytes(data: str | bytes) -> bytes:
    """The certificates' data as bytes: login handlers may give text (PEM, or base64 as in kubeconfigs)."""
    return data.encode("utf-8") if isinstance(data, str) else data


def _ca_data(data: str | bytes) -> str | bytes:
    """PEM as text, DER as bytes; tolerate base64-encoded PEM as in kubeconfigs."""
    data = _as_bytes(data)
    stripped = data.strip()
    if stripped.startswith(b"-----"):
        return stripped.decode("ascii")
    try:
        decoded = base64.b64decode(stripped, validate=True)
    except (binascii.Error, ValueError):
        return data
    if decoded.strip().startswith(b"-----"):
        return decoded.strip().decode("ascii")
    return data


def _pem(data: str | bytes) -> bytes:
    data = _as_bytes(data)
    stripped = data.strip()
    if stripped.startswith(b"-----"):
        return stripped
    try:
        decoded = base64.b64decode(stripped, validate=True)
    except (binascii.Error, ValueError):
        return data
    return decoded if decoded.strip().startswith(b"-----") else data


def _materialize(tmpdir: str, name: str, path: str | os.PathLike[str] | None, data: str | bytes | None) -> str:
    if data is not None:
        filename = os.path.join(tmpdir, name)
        fd = os.open(filename, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(_pem(data))
        return filename
    assert path is not None
    return os.path.expanduser(path)


class VaultContext:
    """
    A per-credentials slot for the things built from them, e.g. an HTTP session.

    The API clients put their objects here with a closing callback. Once the
    credentials are dropped from the vault (invalid, expired, replaced), the
    context is retired and closed as soon as no request uses it anymore
    (see :meth:`acquire`/:meth:`release`), or when the vault is closed.
    """

    def __init__(self) -> None:
        self._objects: dict[str, Any] = {}
        self._closers: list[Callable[[], Awaitable[None]]] = []
        self._users = 0
        self._retired = False
        self._closed = False

    def __repr__(self) -> str:
        return (
            f"<{type(self).__name__} objects={sorted(self._objects)} users={self._users} "
            f"retired={self._retired} closed={self._closed}>"
        )

    @property
    def retired(self) -> bool:
        return self._retired

    @property
    def closed(self) -> bool:
        return self._closed

    def get(self, name: str, default: Any = None) -> Any:
        return self._objects.get(name, default)

    def put(self, name: str, value: Any, closer: Callable[[], Awaitable[None]] | None = None) -> None:
        if self._closed:
            raise RuntimeError("The credentials' context is already closed.")
        self._objects[name] = value
        if closer is not None:
            self._closers.append(closer)

    def acquire(self) -> None:
        self._users += 1

    async def release(self) -> None:
        self._users -= 1
        if self._retired and self._users <= 0:
            await self.close()

    async def retire(self) -> None:
        self._retired = True
        if self._users <= 0:
            await self.close()

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        closers, self._closers = self._closers, []
        self._objects.clear()
        for closer in reversed(closers):
            try:
                await closer()
            except Exception as e:  # closing is best-effort: never fail the caller
                logger.debug(f"Failed to close an object of the credentials' context: {e!r}")


@dataclasses.dataclass(eq=False)
class _VaultItem:
    info: ConnectionInfo
    context: VaultContext = dataclasses.field(default_factory=VaultContext)
    order: int = 0


def _rank(item: _VaultItem) -> tuple[int, int]:
    """The order of the credentials to try: the highest priority first, then the earliest added."""
    return -item.info.priority, item.order


class Vault:
    """
    A store of credentials, shared by all API calls of an operator.

    The credentials are used in the order of their priority (highest first),
    and in the order of their addition within the same priority. Expired
    credentials are ignored and dropped. Credentials reported as invalid
    are dropped and never accepted again from the login handlers (to prevent
    endless re-login loops with the same rejected credentials).

    While the vault is empty, the consumers wait; the login activity waits
    for :meth:`wait_for_emptiness` and re-authenticates, then feeds the results
    with :meth:`populate` (a.k.a. :meth:`extended`). If a re-login brings nothing
    new, the waiting consumers fail with :class:`LoginError`.
    """

    def __init__(self, src: Mapping[str, ConnectionInfo] | None = None, /) -> None:
        self._current: dict[VaultKey, _VaultItem] = {}
        self._invalid: dict[VaultKey, list[ConnectionInfo]] = {}
        self._retired: list[VaultContext] = []
        self._counter = 0
        self._failure: BaseException | None = None
        self._last_error: BaseException | None = None
        self._ready = asyncio.Event()  # has usable credentials
        self._empty = asyncio.Event()  # needs a login
        self._changed = asyncio.Condition()
        if src is not None:
            for key, info in src.items():
                self._add(VaultKey(key), info)
        self._update_flags()

    def __repr__(self) -> str:
        keys = ", ".join(f"{key}:{item.info.priority}" for key, item in self._current.items())
        return f"<{type(self).__name__}: [{keys}]>"

    # -- state ---------------------------------------------------------------------------------------------

    def is_empty(self) -> bool:
        """Whether there are no usable credentials now (expired ones are not usable)."""
        now = clock.utcnow()
        return not any(not item.info.is_expired(now) for item in self._current.values())

    @property
    def ready(self) -> bool:
        return self._ready.is_set()

    @property
    def readiness(self) -> asyncio.Event:
        """Set while the vault has credentials (not checked for expiration)."""
        return self._ready

    @property
    def emptiness(self) -> asyncio.Event:
        """Set while the vault needs a (re-)login."""
        return self._empty

    async def wait_for_readiness(self) -> None:
        await self._ready.wait()

    async def wait_for_emptiness(self) -> None:
        await self._empty.wait()

    def keys(self) -> Iterator[VaultKey]:
        return iter(list(self._current))

    def contexts(self) -> list[VaultContext]:
        """The contexts of the current credentials (e.g. to look at what their requests do)."""
        return [item.context for item in self._current.values()]

    def get(self, key: str) -> ConnectionInfo | None:
        item = self._current.get(VaultKey(key))
        return item.info if item is not None else None

    # -- population -----------------------------------------------------------------------------------------

    async def populate(self, items: Mapping[str, ConnectionInfo | None]) -> None:
        """
        Add (or replace) the credentials by their keys, e.g. from the login handlers' results.

        ``None`` results and the credentials previously known as invalid or already expired
        are ignored. If, after this, the vault is still empty, the waiting consumers fail.
        """
        added = 0
        now = clock.utcnow()
        for key, info in items.items():
            if info is None:
                continue
            if not isinstance(info, ConnectionInfo):
                raise TypeError(f"Login results must be ConnectionInfo or None, got {type(info).__name__}.")
            vkey = VaultKey(key)
            if info in self._invalid.get(vkey, []):
                logger.debug(f"Ignoring the credentials of {key!r}: they were already found invalid.")
                continue
            if info.is_expired(now):
                logger.debug(f"Ignoring the credentials of {key!r}: they are already expired.")
                continue
            existing = self._current.get(vkey)
            if existing is not None and existing.info == info:
                continue
            if existing is not None:
                await self._retire(existing)
            self._add(vkey, info)
            added += 1
        if self.is_empty():
            self._failure = LoginError(
                "Ran out of valid credentials. Consider installing an API client library or adding a login handler."
            )
            if self._last_error is not None:
                self._failure.__cause__ = self._last_error
        else:
            self._failure = None
        self._update_flags()
        await self._notify()

    async def extended(self, items: Mapping[str, ConnectionInfo | None], purpose: str | None = None) -> None:
        """The same as :meth:`populate`; ``purpose`` is informational (for logging)."""
        if purpose:
            logger.debug(f"Extending the vault for {purpose}: {sorted(items)}")
        await self.populate(items)

    def _add(self, key: VaultKey, info: ConnectionInfo) -> None:
        self._counter += 1
        self._current[key] = _VaultItem(info=info, order=self._counter)

    # -- consumption ----------------------------------------------------------------------------------------

    async def __aiter__(self) -> AsyncGenerator[tuple[VaultKey, ConnectionInfo, VaultContext], None]:
        """
        Yield the credentials to try, best first, waiting for a (re-)login when needed.

        The consumer tries each yielded set; on HTTP 401, it calls :meth:`invalidate`
        and continues the iteration; on success, it breaks out. Every set of credentials
        is yielded at most once per iteration. When the vault is depleted, the iteration
        waits for a re-login; if the re-login brings nothing, it raises :class:`LoginError`.
        """
        seen: set[int] = set()
        while True:
            item_key = await self._select(seen)
            if item_key is None:
                return
            key, item = item_key
            seen.add(id(item))
            yield key, item.info, item.context

    def best(self) -> tuple[VaultKey, ConnectionInfo, VaultContext] | None:
        """
        The credentials that the iteration would yield first, if it needs no waiting and no expiring now.

        ``None`` if the vault is empty or holds expired credentials: then, only the iteration (``async for``)
        does what is needed. The shortcut of every API request (an async generator per request costs more).
        """
        now: datetime.datetime | None = None
        best: tuple[VaultKey, _VaultItem] | None = None
        for key, item in self._current.items():
            if item.info.expiration is not None:
                now = now if now is not None else clock.utcnow()
                if item.info.is_expired(now):
                    return None
            if best is None or _rank(item) < _rank(best[1]):
                best = (key, item)
        return None if best is None else (best[0], best[1].info, best[1].context)

    async def _select(self, seen: set[int]) -> tuple[VaultKey, _VaultItem] | None:
        while True:
            await self._drop_expired()
            candidates = [(key, item) for key, item in self._current.items()]
            if candidates:
                fresh = [(key, item) for key, item in candidates if id(item) not in seen]
                if not fresh:
                    return None  # everything was tried and not invalidated: the consumer decides
                fresh.sort(key=lambda pair: _rank(pair[1]))
                return fresh[0]
            if self._failure is not None:
                raise self._failure
            async with self._changed:
                await self._changed.wait_for(lambda: bool(self._current) or self._failure is not None)

    async def invalidate(
        self,
        key: str,
        info: ConnectionInfo | None = None,
        *,
        exc: BaseException | None = None,
    ) -> None:
        """
        Mark the credentials under ``key`` as invalid (e.g. after HTTP 401) and drop them.

        If ``info`` is given, only these exact credentials are invalidated: if the key
        was re-populated meanwhile (a concurrent re-login), the new ones stay intact.
        """
        vkey = VaultKey(key)
        item = self._current.get(vkey)
        if item is None or (info is not None and item.info != info):
            return
        self._invalid.setdefault(vkey, []).append(item.info)
        if exc is not None:
            self._last_error = exc
        del self._current[vkey]
        await self._retire(item)
        self._update_flags()
        await self._notify()

    async def expire(self) -> None:
        """Drop all expired credentials now (also done implicitly on every selection)."""
        await self._drop_expired()

    async def _drop_expired(self) -> None:
        now = clock.utcnow()
        expired = [key for key, item in self._current.items() if item.info.is_expired(now)]
        for key in expired:
            item = self._current.pop(key)
            logger.debug(f"The credentials of {key!r} have expired.")
            await self._retire(item)
        if expired:
            self._update_flags()
            await self._notify()

    async def _retire(self, item: _VaultItem) -> None:
        if not item.context.closed:
            self._retired.append(item.context)
        await item.context.retire()
        self._retired = [context for context in self._retired if not context.closed]

    def _update_flags(self) -> None:
        if self._current:
            self._empty.clear()
            self._ready.set()
        else:
            self._ready.clear()
            self._empty.set()

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    async def close(self) -> None:
        """Close all contexts (e.g. HTTP sessions) of the current and retired credentials."""
        contexts = [item.context for item in self._current.values()] + self._retired
        self._retired = []
        for item in self._current.values():
            item.context = VaultContext()  # the credentials stay usable, e.g. for a restarted operator
        for context in contexts:
            await context.close()

    async def __aenter__(self) -> Vault:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()
