"""Calls into the simulated apiserver from the same process, without the HTTP framing.

A test's own client (``kopf_cluster`` of the pytest plugin) makes a dozen calls per test; over
the in-memory transport, each costs an HTTP request and a response written and parsed on both
sides, several times more than the call itself. Here the same server logic (routing, query
parameters, validation, admission, ``Status`` errors, watch streams) gets the request as it is,
and answers with the same status, headers and body bytes as over HTTP.

What stays with HTTP: the aiohttp middlewares (fault injection, authentication) and the
``on_response_prepare`` signals. The operator under test keeps talking over the transports of
:mod:`kopf_sim.transports.inmemory`; this is for the test's side, which faults must not hit anyway.
"""

from __future__ import annotations

import dataclasses
import urllib.parse
from collections.abc import AsyncIterator, Mapping

from aiohttp import web
from multidict import CIMultiDict, CIMultiDictProxy, MultiDict, MultiDictProxy, MultiMapping

from kopf_sim.http.app import API_KEY, WatchStream
from kopf_sim.transports.inmemory import DEFAULT_BASE_URL

__all__ = ["DirectClient", "DirectResponse"]


@dataclasses.dataclass(frozen=True)
class _Request:
    """A request as :class:`kopf_sim.http.app.ApiRequest` reads it."""

    method: str
    path: str
    query: MultiMapping[str]
    headers: Mapping[str, str]
    host: str
    body: bytes

    @property
    def content_length(self) -> int | None:
        return len(self.body)

    async def read(self) -> bytes:
        return self.body


@dataclasses.dataclass
class DirectResponse:
    """The status, headers and body of a response; for a watch, its stream of chunks instead of a body."""

    status: int
    reason: str
    headers: CIMultiDictProxy[str]
    body: bytes
    stream: WatchStream | None = None

    async def chunks(self) -> AsyncIterator[bytes]:
        """The chunks of a watch stream (lines of JSON events) until the server ends it; then it is closed.

        Other responses (errors included) have no chunks: their :attr:`body` is all there is.
        """
        if self.stream is None:
            return
        try:
            async for chunk in self.stream.chunks:
                yield chunk
        finally:
            await self.close()

    async def close(self) -> None:
        """Stop a watch stream (a no-op for other responses); safe to call more than once."""
        stream, self.stream = self.stream, None
        if stream is not None:
            await stream.close()


class DirectClient:
    """Requests to one simulated apiserver's app, handled in the caller's task."""

    def __init__(
        self,
        app: web.Application,
        *,
        host: str = urllib.parse.urlsplit(DEFAULT_BASE_URL).netloc,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self._api = app[API_KEY]
        self._host = host
        self._headers = dict(headers or {})

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: bytes | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> DirectResponse:
        """One request; a watch's response must be consumed with :meth:`DirectResponse.chunks` or closed."""
        request = _Request(
            method=method.upper(),
            path=path,
            query=MultiDictProxy(MultiDict(params or {})),
            headers=CIMultiDictProxy(CIMultiDict({**self._headers, **(headers or {})})),
            host=self._host,
            body=body or b"",
        )
        outcome = await self._api.handle(request)
        if isinstance(outcome, WatchStream):
            headers_out = CIMultiDictProxy(CIMultiDict({"Content-Type": outcome.content_type}))
            return DirectResponse(200, "OK", headers_out, b"", stream=outcome)
        assert isinstance(outcome.body, bytes)
        return DirectResponse(
            outcome.status, outcome.reason, CIMultiDictProxy(CIMultiDict(outcome.headers)), outcome.body
        )
