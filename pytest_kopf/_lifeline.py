"""An operator's way to the API, cut when :meth:`~pytest_kopf.operator.KopfOperator.crash` kills it."""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable
from typing import Any

import aiohttp

__all__ = ["Lifeline"]


class Lifeline:
    """The operator's way to the API, cut when it crashes: its connections closed, new ones refused.

    A crashed operator's leftovers (a cancelled task's last steps, a sync handler's thread still
    running) must not write to the cluster any more than a killed process could.
    """

    def __init__(self, factory: Callable[[], aiohttp.BaseConnector]) -> None:
        self.factory = factory
        self.cut_off = False
        self.connectors: list[aiohttp.BaseConnector] = []
        self.closings: list[asyncio.Future[Any]] = []

    def connector(self) -> aiohttp.BaseConnector:
        if self.cut_off:
            raise aiohttp.ClientConnectionError("The operator has crashed: it cannot reach the API anymore.")
        connector = self.factory()
        self.connectors.append(connector)
        return connector

    def cut(self, loop: asyncio.AbstractEventLoop) -> None:
        self.cut_off = True
        connectors, self.connectors = self.connectors, []
        for connector in connectors:
            # The connections are closed at once (in the call); the rest is awaited in a task not of the operator.
            self.closings.append(loop.create_task(_close(connector), context=contextvars.Context()))


async def _close(connector: aiohttp.BaseConnector) -> None:
    await connector.close()
