"""
The low-level API requests: authentication, timeouts, and retries as configured.

Regular requests are limited by ``settings.networking.request_timeout`` and
``connect_timeout``. The presumably temporary errors (TCP/TLS/HTTP-level connection
errors, timeouts, HTTP 5xx, and HTTP 429 "too many requests") are retried with the
back-offs of ``settings.networking.error_backoffs`` (honouring ``Retry-After`` for 429),
and escalate once the back-offs are over. Other errors (4xx) escalate immediately.
HTTP 401 is handled by :mod:`.auth`: the credentials are invalidated and the request
is repeated with the next credentials, with no back-off.

The URLs are usually paths (``/api/v1/namespaces/default/pods``) that are resolved
against the server of the credentials used; absolute URLs are used as is.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Mapping
from typing import Any, TypeAlias, TypeVar

import aiohttp
import multidict

from kopf._cogs.aiokits import deadlines
from kopf._cogs.clients import auth, errors
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.structs.credentials import ConnectionInfo, Vault

Logger: TypeAlias = logging.Logger | logging.LoggerAdapter[Any]

_T = TypeVar("_T")

default_logger = logging.getLogger("kopf._cogs.clients")

#: The errors that are presumed to be temporary, and so are retried.
RETRYABLE_ERRORS: tuple[type[BaseException], ...] = (
    errors.APIServerError,
    errors.APITooManyRequests,
    aiohttp.ClientConnectionError,
    aiohttp.ClientPayloadError,
    asyncio.TimeoutError,
)

JSON_CONTENT_TYPE = "application/json"
MERGE_PATCH_CONTENT_TYPE = "application/merge-patch+json"


def regular_timeout(settings: OperatorSettings) -> aiohttp.ClientTimeout:
    """
    The timeouts of aiohttp for a regular request: only the TCP handshake's; the total one is not aiohttp's.

    The total timeout (``settings.networking.request_timeout``) is a deadline of the request's attempt
    (see :mod:`kopf._cogs.aiokits.deadlines`: one timer for all the requests ending in the same second,
    not one per request). The timeouts are made once per distinct setting, not per request.
    """
    return _client_timeout(settings.networking.connect_timeout)


def _total_timeout(settings: OperatorSettings) -> float | None:
    """The deadline of a regular request's attempt, if any: as in aiohttp, zero or less is no limit."""
    total = settings.networking.request_timeout
    return total if total is not None and total > 0 else None


@functools.lru_cache(maxsize=16)
def _client_timeout(connect_timeout: float | None) -> aiohttp.ClientTimeout:
    return aiohttp.ClientTimeout(total=None, sock_connect=connect_timeout)


async def retrying(
    fn: Callable[[], Awaitable[_T]],
    *,
    settings: OperatorSettings,
    logger: Logger | None = None,
    what: str = "API request",
) -> _T:
    """Call ``fn`` until it succeeds, retrying the temporary errors with the configured back-offs."""
    logger = logger if logger is not None else default_logger
    backoffs = iter(settings.networking.error_backoffs)
    attempt = 0
    while True:
        attempt += 1
        try:
            return await fn()
        except RETRYABLE_ERRORS as e:
            delay = next(backoffs, None)
            if delay is None:
                logger.error(f"{what} failed after {attempt} attempt(s); escalating: {_describe(e)}")
                raise
            # The server knows better when to come back: always for 429; with enforce_retry_after, for 5xx too.
            advised = e.retry_after if isinstance(e, errors.APIError) else None
            throttled = isinstance(e, errors.APITooManyRequests)
            if advised is not None and (throttled or settings.networking.enforce_retry_after):
                delay = advised
            logger.warning(f"{what} failed (attempt #{attempt}); retrying in {delay}s: {_describe(e)}")
            await asyncio.sleep(delay)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, errors.APIError):
        return f"HTTP {exc.status}: {exc.message or exc.reason or type(exc).__name__}"
    return repr(exc)


def _build_headers(headers: Mapping[str, str] | None, content_type: str | None) -> Mapping[str, str]:
    if not headers:
        return _standard_headers(content_type)
    result = {"Accept": JSON_CONTENT_TYPE}
    if content_type is not None:
        result["Content-Type"] = content_type
    result.update(headers)
    return result


@functools.lru_cache(maxsize=16)
def _standard_headers(content_type: str | None) -> multidict.CIMultiDictProxy[str]:
    """The usual headers, made once: aiohttp takes a read-only multi-dict as is (a dict, it converts every time)."""
    result = multidict.CIMultiDict({"Accept": JSON_CONTENT_TYPE})
    if content_type is not None:
        result["Content-Type"] = content_type
    return multidict.CIMultiDictProxy(result)


def _encode(payload: Any) -> bytes | None:
    if payload is None:
        return None
    return json.dumps(payload).encode("utf-8")


async def request(
    method: str,
    url: str,
    *,
    settings: OperatorSettings,
    payload: Any = None,
    params: Mapping[str, str] | None = None,
    headers: Mapping[str, str] | None = None,
    content_type: str | None = None,
    timeout: aiohttp.ClientTimeout | None = None,
    logger: Logger | None = None,
    vault: Vault | None = None,
    decode: Callable[[bytes], Any] | None = None,
) -> Any:
    """
    Make a regular (non-streaming) request and return the parsed JSON response (or None if empty).

    ``decode`` replaces the JSON parsing of successful responses (e.g. to parse them once per distinct body).
    Raises the :mod:`.errors` exceptions for HTTP errors after the retries (if retryable).
    """
    data = _encode(payload)
    all_headers = _build_headers(headers, content_type or (JSON_CONTENT_TYPE if data is not None else None))
    client_timeout = timeout if timeout is not None else regular_timeout(settings)
    total_timeout = _total_timeout(settings) if timeout is None else None  # else, aiohttp's own

    async def attempt(info: ConnectionInfo, session: aiohttp.ClientSession) -> Any:
        with deadlines.within(total_timeout):
            async with session.request(
                method, auth.make_url(info, url), params=params, data=data, headers=all_headers, timeout=client_timeout
            ) as response:
                await errors.check_response(response)
                body = await response.read()
        if decode is not None:
            return decode(body)
        return json.loads(body) if body.strip() else None

    authenticated_attempt = functools.partial(
        auth.authenticated, attempt, vault=vault, trust_env=settings.networking.trust_env
    )  # not a closure & a coroutine of its own: lighter per request in flight
    return await retrying(authenticated_attempt, settings=settings, logger=logger, what=f"{method} {url}")


# The shortcuts return the request's own coroutine (no coroutine of their own around it): every object in
# flight awaits one, and each level of coroutines costs a frame per object and a resumption per step.


def get(url: str, **kwargs: Any) -> Coroutine[Any, Any, Any]:
    return request("GET", url, **kwargs)


def post(url: str, *, payload: Any, **kwargs: Any) -> Coroutine[Any, Any, Any]:
    return request("POST", url, payload=payload, **kwargs)


def patch(
    url: str, *, payload: Any, content_type: str = MERGE_PATCH_CONTENT_TYPE, **kwargs: Any
) -> Coroutine[Any, Any, Any]:
    return request("PATCH", url, payload=payload, content_type=content_type, **kwargs)


def delete(url: str, *, payload: Any = None, **kwargs: Any) -> Coroutine[Any, Any, Any]:
    return request("DELETE", url, payload=payload, **kwargs)


@contextlib.asynccontextmanager
async def stream(
    url: str,
    *,
    settings: OperatorSettings,
    method: str = "GET",
    params: Mapping[str, str] | None = None,
    headers: Mapping[str, str] | None = None,
    timeout: aiohttp.ClientTimeout | None = None,
    logger: Logger | None = None,
    vault: Vault | None = None,
) -> AsyncIterator[aiohttp.ClientResponse]:
    """
    Open a streaming response (e.g. a watch) and keep it open within the context.

    Opening is authenticated and retried as the regular requests; the streaming itself
    is not retried here: the caller decides what to do on disconnects. By default, the
    timeouts of the watch-streams are used (``settings.watching``).
    """
    client_timeout = timeout if timeout is not None else watching_timeout(settings)
    all_headers = _build_headers(headers, None)

    async def opener(info: ConnectionInfo, session: aiohttp.ClientSession) -> aiohttp.ClientResponse:
        response = await session.request(
            method, auth.make_url(info, url), params=params, headers=all_headers, timeout=client_timeout
        )
        try:
            await errors.check_response(response)
        except BaseException:
            response.close()
            raise
        return response

    @contextlib.asynccontextmanager
    async def open_once() -> AsyncIterator[aiohttp.ClientResponse]:
        async with auth.authenticated_response(
            opener, vault=vault, trust_env=settings.networking.trust_env
        ) as response:
            yield response

    async def enter() -> tuple[contextlib.AbstractAsyncContextManager[aiohttp.ClientResponse], aiohttp.ClientResponse]:
        cm = open_once()
        response = await cm.__aenter__()
        return cm, response

    cm, response = await retrying(enter, settings=settings, logger=logger, what=f"{method} {url}")
    try:
        yield response
    except BaseException as e:
        if not await cm.__aexit__(type(e), e, e.__traceback__):
            raise
    else:
        await cm.__aexit__(None, None, None)


def watching_timeout(settings: OperatorSettings) -> aiohttp.ClientTimeout:
    """The timeouts of the watch-streams: the whole stream's life and the TCP handshake."""
    connect_timeout = (
        settings.watching.connect_timeout
        if settings.watching.connect_timeout is not None
        else settings.networking.connect_timeout
        if settings.networking.connect_timeout is not None
        else settings.networking.request_timeout
    )
    return aiohttp.ClientTimeout(total=settings.watching.client_timeout, sock_connect=connect_timeout)
