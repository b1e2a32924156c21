"""A kopf vault with one set of credentials that reach a simulated apiserver's app in memory."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from aiohttp import web

from kopf._cogs.structs.credentials import ConnectionInfo, Vault
from kopf_sim.transports.inmemory import DEFAULT_BASE_URL, InMemoryServer


@contextlib.asynccontextmanager
async def vault_over(app: web.Application) -> AsyncIterator[Vault]:
    """Serve the app in memory for as long as the vault is used (its startup & cleanup included)."""
    async with InMemoryServer(app) as server:
        info = ConnectionInfo(server=DEFAULT_BASE_URL).with_connector_factory(server.connector)
        async with Vault({"sim": info}) as vault:
            yield vault
