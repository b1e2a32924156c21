"""
Authenticated HTTP sessions, built from the credentials in the vault.

Every set of credentials (:class:`ConnectionInfo`) gets its own ``aiohttp.ClientSession``
with the authorization headers, the TLS setup (the CA, the verification flag, the client
certificate), and the connector: either a TCP connector of our own or the one made by the
credentials' connector factory (see :meth:`ConnectionInfo.with_connector_factory`).
The session is cached in the credentials' vault context and closed when the credentials
are dropped from the vault and no request uses it anymore.

On HTTP 401, the credentials are reported to the vault as invalid, and the same request
is retried with the next credentials (or after a re-login). Nothing here logs the secrets.
"""
from __future__ import annotations

import base64
import binascii
import contextlib
import contextvars
import importlib.metadata
import logging
import os
import ssl
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TypeVar

import aiohttp

from kopf._cogs.clients import errors
from kopf._cogs.structs.credentials import AccessError, ConnectionInfo, Vault, VaultContext

logger = logging.getLogger(__name__)

_T = TypeVar('_T')

#: The vault of the current operator, for the API calls that are not given one explicitly.
vault_var: contextvars.ContextVar[Vault] = contextvars.ContextVar('vault_var')

SESSION_KEY = 'aiohttp-session'


def _user_agent() -> str:
    try:
        return f'kopf/{importlib.metadata.version("kopf")}'
    except importlib.metadata.PackageNotFoundError:
        return 'kopf/unknown'


USER_AGENT = _user_agent()


def get_vault(vault: Vault | None = None) -> Vault:
    """The explicitly given vault, or the one of the current operator (from the context)."""
    if vault is not None:
        return vault
    try:
        return vault_var.get()
    except LookupError:
        raise RuntimeError("No credentials vault: pass vault= explicitly or run within an operator.") from None


def build_headers(info: ConnectionInfo) -> dict[str, str]:
    """The headers of every request with these credentials: the token, or the basic auth."""
    headers = {'User-Agent': USER_AGENT}
    if info.token is not None:
        headers['Authorization'] = f'{info.scheme or "Bearer"} {info.token}'
    elif info.username is not None or info.password is not None:
        userpass = f'{info.username or ""}:{info.password or ""}'.encode()
        headers['Authorization'] = f'Basic {base64.b64encode(userpass).decode("ascii")}'
    elif info.scheme is not None:
        headers['Authorization'] = info.scheme
    return headers


def _ca_data(data: bytes) -> str | bytes:
    """PEM as text, DER as bytes; tolerate base64-encoded PEM as in kubeconfigs."""
    stripped = data.strip()
    if stripped.startswith(b'-----'):
        return stripped.decode('ascii')
    try:
        decoded = base64.b64decode(stripped, validate=True)
    except (binascii.Error, ValueError):
        return data
    if decoded.strip().startswith(b'-----'):
        return decoded.strip().decode('ascii')
    return data


def _pem(data: bytes) -> bytes:
    stripped = data.strip()
    if stripped.startswith(b'-----'):
        return stripped
    try:
        decoded = base64.b64decode(stripped, validate=True)
    except (binascii.Error, ValueError):
        return data
    return decoded if decoded.strip().startswith(b'-----') else data


def build_ssl_context(info: ConnectionInfo) -> ssl.SSLContext:
    """The TLS setup of the credentials: the CA, the verification, and the client certificate."""
    cafile = os.path.expanduser(info.ca_path) if info.ca_path else None
    cadata = _ca_data(info.ca_data) if info.ca_data else None
    context = ssl.create_default_context(cafile=cafile, cadata=cadata)
    if info.insecure:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE

    has_cert = info.certificate_path is not None or info.certificate_data is not None
    has_key = info.private_key_path is not None or info.private_key_data is not None
    if has_cert:
        # The ssl module loads the client certificates only from files: put the data into
        # private temporary files for the time of loading (readable only by this user).
        with tempfile.TemporaryDirectory(prefix='kopf-') as tmpdir:
            certfile = _materialize(tmpdir, 'cert.pem', info.certificate_path, info.certificate_data)
            keyfile = _materialize(tmpdir, 'key.pem', info.private_key_path, info.private_key_data) \
                if has_key else None
            context.load_cert_chain(certfile=certfile, keyfile=keyfile)
    return context


def _materialize(tmpdir: str, name: str, path: str | None, data: bytes | None) -> str:
    if data is not None:
        filename = os.path.join(tmpdir, name)
        fd = os.open(filename, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, 'wb') as f:
            f.write(_pem(data))
        return filename
    assert path is not None
    return os.path.expanduser(path)


def make_session(info: ConnectionInfo) -> aiohttp.ClientSession:
    """A new HTTP session for these credentials (the caller closes it)."""
    connector: aiohttp.BaseConnector
    if info.connector_factory is not None:
        connector = info.connector_factory()
    elif info.server.lower().startswith('https:'):
        connector = aiohttp.TCPConnector(limit=0, ssl=build_ssl_context(info))
    else:
        connector = aiohttp.TCPConnector(limit=0)
    return aiohttp.ClientSession(
        connector=connector,
        headers=build_headers(info),
        timeout=aiohttp.ClientTimeout(total=None),  # every request sets its own timeouts
        trust_env=False,
    )


def get_session(info: ConnectionInfo, context: VaultContext) -> aiohttp.ClientSession:
    """The cached session of the credentials, or a new one (cached for the next requests)."""
    session: aiohttp.ClientSession | None = context.get(SESSION_KEY)
    if session is None or session.closed:
        session = make_session(info)
        context.put(SESSION_KEY, session, session.close)
    return session


def make_url(info: ConnectionInfo, url: str) -> str:
    """Absolute URLs stay as they are; paths (``/api/v1/...``) go to the credentials' server."""
    if '://' in url:
        return url
    return info.server.rstrip('/') + '/' + url.lstrip('/')


async def authenticated(
        fn: Callable[[ConnectionInfo, aiohttp.ClientSession], Awaitable[_T]],
        *,
        vault: Vault | None = None,
) -> _T:
    """
    Call ``fn`` with the best credentials and their session; on HTTP 401, try the next ones.

    ``fn`` must raise :class:`errors.APIUnauthorizedError` on 401 (e.g. via ``check_response``).
    The vault waits for a re-login if depleted, or raises :class:`LoginError` if that fails.
    """
    the_vault = get_vault(vault)
    async with contextlib.aclosing(the_vault.__aiter__()) as credentials:
        async for key, info, context in credentials:
            session = get_session(info, context)
            context.acquire()
            try:
                return await fn(info, session)
            except errors.APIUnauthorizedError as e:
                logger.debug(f"The credentials {key!r} are rejected with HTTP 401; invalidating them.")
                await the_vault.invalidate(key, info, exc=e)
            finally:
                await context.release()
    raise AccessError("The API access is not possible with any of the known credentials.")


@contextlib.asynccontextmanager
async def authenticated_response(
        opener: Callable[[ConnectionInfo, aiohttp.ClientSession], Awaitable[aiohttp.ClientResponse]],
        *,
        vault: Vault | None = None,
) -> AsyncIterator[aiohttp.ClientResponse]:
    """
    Like :func:`authenticated`, but keep the response open for streaming within the context.

    The credentials' session stays in use (not closed even if the credentials are dropped)
    until the response is consumed or abandoned.
    """
    the_vault = get_vault(vault)
    async with contextlib.aclosing(the_vault.__aiter__()) as credentials:
        async for key, info, context in credentials:
            session = get_session(info, context)
            context.acquire()
            try:
                response = await opener(info, session)
            except errors.APIUnauthorizedError as e:
                logger.debug(f"The credentials {key!r} are rejected with HTTP 401; invalidating them.")
                await context.release()
                await the_vault.invalidate(key, info, exc=e)
                continue
            except BaseException:
                await context.release()
                raise
            break
        else:
            raise AccessError("The API access is not possible with any of the known credentials.")
    try:
        yield response
    finally:
        response.close()
        await context.release()
