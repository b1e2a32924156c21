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

import contextlib
import contextvars
import itertools
import logging
import ssl
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TypeVar

import aiohttp

from kopf._cogs.aiokits.aiopriority import PrioritySemaphore, Turn
from kopf._cogs.clients import errors
from kopf._cogs.structs.credentials import AccessError, AiohttpSession, ConnectionInfo, Vault, VaultContext, VaultKey
from kopf._version import __version__

logger = logging.getLogger(__name__)

_T = TypeVar("_T")

#: The vault of the current operator, for the API calls that are not given one explicitly.
vault_var: contextvars.ContextVar[Vault] = contextvars.ContextVar("vault_var")

SESSION_KEY = "aiohttp-session"
SLOTS_KEY = "request-slots"

#: How many regular (not streaming) requests go to the API at once with one set of credentials.
#: The others wait for a free slot: unlimited, every request in flight would open a TCP (and TLS)
#: connection of its own, thousands of them at the start with thousands of objects, where about a
#: hundred kept-alive connections serve the same requests faster for both the operator and the API
#: (measured with benchmarks/compare_peer.py at 1,000 objects: 32 slots starve the patches, 256 are slower).
#: The watch-streams are not limited: they hold their connections for as long as they watch.
MAX_CONCURRENT_REQUESTS = 128

#: How long a new object's processing counts as ongoing at most, for the turns of the next ones (see
#: ``take_turn()``): in a burst, ~256 objects at once finish their first processing well within it (1,000
#: and 10,000 objects listed at once in benchmarks/compare_peer.py); a processing that waits for longer
#: (e.g. a handler sleeping) stops holding the others back after it.
TURN_LAPSE = 1.0

#: The order of a request for a free slot: the lower, the sooner. The workers set it to the moment (a
#: sequence number) when their object's processing began, so that an object's requests go before those of
#: objects that began after it (see :mod:`kopf._cogs.aiokits.aiopriority`); other requests get a number
#: of their own when they are made: first come, first served among those.
request_order: contextvars.ContextVar[int | None] = contextvars.ContextVar("request_order", default=None)
_orders = itertools.count()

#: The order of the listings' requests: before every object's (e.g. 10,000 objects listed chunk by chunk: the
#: work on the first chunks must not hold back the next ones, else the listing's continue-token expires).
LISTING_ORDER = -1

#: The order of the requests that may wait until no object's request does (e.g. posting the k8s-events):
#: among themselves, first come, first served. With no other requests waiting, they go at once.
BACKGROUND_ORDER = sys.maxsize


def next_order() -> int:
    """A number later than every one given so far: the order of what begins now."""
    return next(_orders)


USER_AGENT = f"kopf/{__version__}"


def get_vault(vault: Vault | None = None) -> Vault:
    """The explicitly given vault, or the one of the current operator (from the context)."""
    if vault is not None:
        return vault
    try:
        return vault_var.get()
    except LookupError:
        raise RuntimeError("No credentials vault: pass vault= explicitly or run within an operator.") from None


def build_headers(info: ConnectionInfo, *, user_agent: str = USER_AGENT) -> dict[str, str]:
    """The headers of every request with these credentials: the client's name, the token or the basic auth."""
    return {"User-Agent": user_agent, **info.as_http_headers()}


def build_ssl_context(info: ConnectionInfo) -> ssl.SSLContext:
    """The TLS setup of the credentials: the CA, the verification, and the client certificate."""
    return info.as_ssl_context()


def make_session(
    info: ConnectionInfo,
    *,
    trust_env: bool = False,
    user_agent: str = USER_AGENT,
) -> aiohttp.ClientSession:
    """A new HTTP session for these credentials (the caller closes it); also for other tools (pytest_kopf)."""
    connector: aiohttp.BaseConnector
    if info.connector_factory is not None:
        connector = info.connector_factory()
    elif info.server.lower().startswith("https:"):
        connector = aiohttp.TCPConnector(limit=0, ssl=build_ssl_context(info))
    else:
        connector = aiohttp.TCPConnector(limit=0)
    return aiohttp.ClientSession(
        connector=connector,
        headers=build_headers(info, user_agent=user_agent),
        timeout=aiohttp.ClientTimeout(total=None),  # every request sets its own timeouts
        trust_env=info.trust_env or trust_env,
        proxy=info.proxy_url,
    )


def get_session(info: ConnectionInfo, context: VaultContext, *, trust_env: bool = False) -> aiohttp.ClientSession:
    """The cached session of the credentials, or a new one (cached for the next requests)."""
    if isinstance(info, AiohttpSession):
        return info.aiohttp_session  # the login handler's own session: never closed by us
    session: aiohttp.ClientSession | None = context.get(SESSION_KEY)
    if session is None or session.closed:
        session = make_session(info, trust_env=trust_env)
        context.put(SESSION_KEY, session, session.close)
    return session


def get_slots(context: VaultContext) -> PrioritySemaphore:
    """The slots of the regular requests with these credentials (see :data:`MAX_CONCURRENT_REQUESTS`)."""
    slots: PrioritySemaphore | None = context.get(SLOTS_KEY)
    if slots is None:
        slots = PrioritySemaphore(MAX_CONCURRENT_REQUESTS)
        context.put(SLOTS_KEY, slots)
    return slots


async def take_turn(order: int, *, vault: Vault | None = None) -> list[Turn]:
    """
    Wait for the turn of a new piece of work: while more requests queue for the slots than there are
    slots, or while twice as many other new pieces are still ongoing (for :data:`TURN_LAPSE` at most).

    For the objects' workers under load: an object whose processing begins while others' requests queue
    would only queue its own requests behind them, and meanwhile hold its whole state in memory (with
    10,000 objects listed at once, all of them); it waits here instead, with only its event. Nobody waits
    while the queue is short and few new objects are in work; the waits depend only on the requests already
    made (they end, if only by their timeouts) and on the turns taken (they lapse). See
    ``PrioritySemaphore.turn()``. The caller ends the turns it gets when its work is done.
    """
    try:
        the_vault = get_vault(vault)
    except RuntimeError:  # not in an operator: nothing to wait for
        return []
    turns: list[Turn] = []
    try:
        for context in the_vault.contexts():
            slots: PrioritySemaphore | None = context.get(SLOTS_KEY)
            if slots is not None:
                turns.append(await slots.turn(order, lapse=TURN_LAPSE))
    except BaseException:
        for turn in turns:
            turn.end()
        raise
    return turns


def make_url(info: ConnectionInfo, url: str) -> str:
    """Absolute URLs stay as they are; paths (``/api/v1/...``) go to the credentials' server."""
    if "://" in url:
        return url
    return info.server.rstrip("/") + "/" + url.lstrip("/")


async def authenticated(
    fn: Callable[[ConnectionInfo, aiohttp.ClientSession], Awaitable[_T]],
    *,
    vault: Vault | None = None,
    trust_env: bool = False,
) -> _T:
    """
    Call ``fn`` with the best credentials and their session; on HTTP 401, try the next ones.

    ``fn`` must raise :class:`errors.APIUnauthorizedError` on 401 (e.g. via ``check_response``).
    The vault waits for a re-login if depleted, or raises :class:`LoginError` if that fails.
    """
    the_vault = get_vault(vault)
    best = the_vault.best()  # usually there: the same as the iteration's first, without an async generator
    if best is not None:
        key, info, context = best
        try:
            return await _attempt(fn, key, info, context, trust_env=trust_env)
        except errors.APIUnauthorizedError as e:
            logger.debug(f"The credentials {key!r} are rejected with HTTP 401; invalidating them.")
            await the_vault.invalidate(key, info, exc=e)  # gone from the vault: the iteration tries the others
    async with contextlib.aclosing(the_vault.__aiter__()) as credentials:
        async for key, info, context in credentials:
            try:
                return await _attempt(fn, key, info, context, trust_env=trust_env)
            except errors.APIUnauthorizedError as e:
                logger.debug(f"The credentials {key!r} are rejected with HTTP 401; invalidating them.")
                await the_vault.invalidate(key, info, exc=e)
    raise AccessError("The API access is not possible with any of the known credentials.")


async def _attempt(
    fn: Callable[[ConnectionInfo, aiohttp.ClientSession], Awaitable[_T]],
    key: VaultKey,
    info: ConnectionInfo,
    context: VaultContext,
    *,
    trust_env: bool,
) -> _T:
    session = get_session(info, context, trust_env=trust_env)
    slots = get_slots(context)
    context.acquire()
    try:
        if not slots.try_acquire():  # usually a slot is free: no waiting, no coroutine for it
            order = request_order.get()
            await slots.acquire(next_order() if order is None else order)
        try:
            return await fn(info, session)
        finally:
            slots.release()
    finally:
        await context.release()


@contextlib.asynccontextmanager
async def authenticated_response(
    opener: Callable[[ConnectionInfo, aiohttp.ClientSession], Awaitable[aiohttp.ClientResponse]],
    *,
    vault: Vault | None = None,
    trust_env: bool = False,
) -> AsyncIterator[aiohttp.ClientResponse]:
    """
    Like :func:`authenticated`, but keep the response open for streaming within the context.

    The credentials' session stays in use (not closed even if the credentials are dropped)
    until the response is consumed or abandoned.
    """
    the_vault = get_vault(vault)
    async with contextlib.aclosing(the_vault.__aiter__()) as credentials:
        async for key, info, context in credentials:
            session = get_session(info, context, trust_env=trust_env)
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
