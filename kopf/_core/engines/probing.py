"""
The liveness endpoint: a minimal HTTP server that reports the results of the probe handlers.

The endpoint is a URL as given with ``--liveness``, e.g. ``http://0.0.0.0:8080/healthz``;
only ``http://`` is supported. A GET request to its path runs the probe handlers and
responds with their results as a JSON object (by the handlers' ids); an empty object if
there are no probe handlers. The results are cached for a short time, so that frequent
requests do not overload the operator (or whatever the probes check). Failed probes make
the response an HTTP 500 with the errors, at once: each request makes one attempt of each probe
handler (the next request is the retry), since a liveness probe times out within seconds while
a retried handler would wait out its back-off (60 seconds by default). Failures are not cached.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import urllib.parse
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.structs.ephemera import AnyMemo
from kopf._core.actions.errors import HandlerRetriesError
from kopf._core.engines import activities
from kopf._core.intents import registries
from kopf._core.intents.causes import Activity
from kopf._core.intents.handlers import ActivityHandler

if TYPE_CHECKING:  # imported when serving: the server side of aiohttp is not needed without probes
    from aiohttp import web

logger = logging.getLogger(__name__)

#: How long (seconds) the results of the probe handlers are reused for the next requests.
DEFAULT_CACHE_PERIOD = 10.0


def parse_endpoint(endpoint: str) -> tuple[str, int, str]:
    """The host, port, and path of the liveness URL (only ``http://`` is supported); ValueError if bad."""
    parsed = urllib.parse.urlsplit(endpoint)
    if parsed.scheme != "http":
        raise ValueError(
            f"Only http:// liveness endpoints are supported (e.g. http://0.0.0.0:8080/healthz), got {endpoint!r}."
        )
    try:
        port = parsed.port if parsed.port is not None else 80
    except ValueError:
        raise ValueError(f"The liveness endpoint has an invalid port: {endpoint!r}.") from None
    host = parsed.hostname or "0.0.0.0"
    path = parsed.path or "/"
    return host, port, path


async def health_reporter(
    endpoint: str,
    *,
    registry: registries.OperatorRegistry,
    settings: OperatorSettings,
    indices: Mapping[str, Any] | None = None,
    memo: AnyMemo = None,
    ready_flag: asyncio.Future[Any] | None = None,  # resolved with the bound (host, port) when serving
    cache_period: float = DEFAULT_CACHE_PERIOD,
    on_ready: Callable[[str, int], None] | None = None,
) -> None:
    """Serve the liveness endpoint until cancelled."""
    from aiohttp import web

    host, port, path = parse_endpoint(endpoint)
    loop = asyncio.get_running_loop()
    cached: tuple[float, dict[str, Any]] | None = None
    lock = asyncio.Lock()

    async def get_health(request: web.Request) -> web.Response:
        nonlocal cached
        async with lock:
            now = loop.time()
            if cached is None or now - cached[0] >= cache_period:
                try:
                    handlers = [_one_attempt(handler) for handler in registry.activities.get_handlers(Activity.PROBE)]
                    results = await activities.run_activity(
                        registry=registry,
                        settings=settings,
                        activity=Activity.PROBE,
                        handlers=handlers,
                        indices=indices,
                        memo=memo,
                    )
                except activities.ActivityError as e:
                    errors = {
                        handler_id: _describe(outcome.exception)
                        for handler_id, outcome in e.outcomes.items()
                        if outcome.exception is not None
                    }
                    return web.json_response({"errors": errors}, status=500, dumps=_dumps)
                cached = (now, results)
            data = cached[1]
        return web.json_response(data, dumps=_dumps)

    app = web.Application()
    app.router.add_get(path, get_health)
    runner = web.AppRunner(app, handle_signals=False, shutdown_timeout=1.0)
    await runner.setup()
    try:
        site = web.TCPSite(runner, host, port, reuse_address=True)
        await site.start()
        bound_host, bound_port = runner.addresses[0][:2]
        logger.debug(f"Serving the liveness endpoint at http://{bound_host}:{bound_port}{path}")
        if ready_flag is not None and not ready_flag.done():
            ready_flag.set_result((bound_host, bound_port))
        if on_ready is not None:
            on_ready(bound_host, bound_port)
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()


def _one_attempt(handler: ActivityHandler) -> ActivityHandler:
    """The probe handler as it runs in a request: no retries (a failure fails the request)."""
    retries = 1 if handler.retries is None else min(handler.retries, 1)
    return dataclasses.replace(handler, retries=retries)


def _describe(exception: BaseException) -> str:
    """The probe's own error, not the wrapping "has exceeded 1 retries" of its single attempt."""
    if isinstance(exception, HandlerRetriesError) and exception.__cause__ is not None:
        return str(exception.__cause__)
    return str(exception)


def _dumps(data: Any) -> str:
    return json.dumps(data, default=str)
