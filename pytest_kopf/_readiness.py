"""When an operator under test is ready: it has listed its resources, and its webhook configurations are in place.

``kopf_operator.start()`` returns only then, so that a test can act at once: an object created right after
it is seen by the operator's watch-streams and validated (or mutated) by its admission webhooks.

- Paused: an operator paused from the start (a mandatory peering that is absent, or a freeze) watches
  nothing until it is resumed; it is ready as soon as it is paused.
- Listed: kopf lists a resource, then watches it from the listing's version; the watch request is seen
  by the connector of the operator's credentials (:class:`RequestObserver`), in sim and real modes alike,
  for every resource & namespace that the operator serves.
- Webhooks: with admission handlers and ``settings.admission.managed``, the managed validating/mutating
  configurations hold one webhook per handler with served resources (read from the cluster's API).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection, Coroutine, Iterable
from typing import Any

import aiohttp

from kopf import OperatorRegistry, OperatorSettings
from kopf._kits.testing import WEBHOOK_CONFIGURATION_RESOURCES, Insights, build_webhooks, watcher_dimensions

from .cluster import KopfCluster
from .errors import KopfTimeoutError

__all__ = ["RequestObserver", "wait_until_ready"]


class RequestObserver:
    """Sees the paths of the watch requests that the operator makes (through the connectors it is given)."""

    def __init__(self) -> None:
        self.watched: set[str] = set()
        self._waiters: list[asyncio.Future[None]] = []

    def wrap(self, factory: Callable[[], aiohttp.BaseConnector]) -> Callable[[], aiohttp.BaseConnector]:
        def make() -> aiohttp.BaseConnector:
            connector = factory()
            connect = connector.connect

            async def observed_connect(req: Any, *args: Any, **kwargs: Any) -> Any:
                if req.method == "GET" and req.url.query.get("watch") in ("true", "1"):
                    self._seen(req.url.path)
                return await connect(req, *args, **kwargs)

            connector.connect = observed_connect  # type: ignore[method-assign]
            return connector

        return make

    def _seen(self, path: str) -> None:
        self.watched.add(path)
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    async def wait_for(self, paths: Collection[str]) -> None:
        while not set(paths) <= self.watched:
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            await waiter


async def _first_of(*coros: Coroutine[Any, Any, Any]) -> None:
    """Wait until any of the coroutines is done (a paused operator watches nothing until it is resumed)."""
    tasks = [asyncio.ensure_future(coro) for coro in coros]
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in done:
            task.result()
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def watched_paths(insights: Insights) -> set[str]:
    """The URL paths of the watch requests that the operator makes when it serves what it knows of."""
    return {resource.get_url(namespace=namespace) for resource, namespace in watcher_dimensions(insights)}


def expected_webhooks(
    registry: OperatorRegistry, settings: OperatorSettings, resources: Iterable[Any]
) -> dict[str, set[str]]:
    """The managed configurations (by resource plural) and the names of their webhooks, as the operator makes them."""
    name = settings.admission.managed
    if not name or settings.admission.server is None:  # no server: the operator configures no webhooks
        return {}
    resources = list(resources)
    expected: dict[str, set[str]] = {}
    for webhook_type, resource in WEBHOOK_CONFIGURATION_RESOURCES.items():
        handlers = [handler for handler in registry.webhooks.get_all_handlers() if handler.type == webhook_type]
        names = {
            str(webhook["name"]) for webhook in build_webhooks(handlers, resources, name_suffix=name, client_config={})
        }
        if names:
            expected[f"{resource.plural}.{resource.group}"] = names
    return expected


async def wait_until_ready(
    *,
    cluster: KopfCluster,
    registry: OperatorRegistry,
    settings: OperatorSettings,
    insights: Insights,
    observer: RequestObserver,
    timeout: float,
) -> None:
    """Wait until the operator has listed its resources and its webhook configurations are in place."""
    paths = watched_paths(insights)
    try:
        async with asyncio.timeout(timeout):
            await _first_of(observer.wait_for(paths), insights.paused.wait_for(True))
    except TimeoutError:
        missing = ", ".join(sorted(paths - observer.watched))
        raise KopfTimeoutError(
            f"The operator has not listed (and begun to watch) its resources in {timeout} s: {missing}.",
            last=None,
            seen=False,
        ) from None
    name = settings.admission.managed
    for resource, names in expected_webhooks(registry, settings, insights.resources).items():

        def complete(obj: dict[str, Any] | None, names: set[str] = names) -> bool:
            return obj is not None and names <= {webhook.get("name") for webhook in obj.get("webhooks") or ()}

        await cluster.wait_for(resource, str(name), condition=complete, timeout=timeout)
