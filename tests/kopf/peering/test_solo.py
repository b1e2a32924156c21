"""The solo operator: its record, keep-alives, removal on exit."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging

import pytest

from kopf._cogs.aiokits import clock
from kopf._cogs.aiokits.toggles import ToggleSet
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.structs.credentials import Vault
from kopf._core.engines import peering
from kopf_sim.store.cluster import Cluster

from .helpers import (
    LOGGER,
    add_cluster_peering,
    cluster_status,
    eventually,
    messages,
    operator,
    with_crds,
)

pytestmark = pytest.mark.looptime


async def test_solo_operator_is_not_paused_and_keeps_its_record_alive(
    cluster: Cluster, vault: Vault, settings: OperatorSettings
) -> None:
    add_cluster_peering(with_crds(cluster))
    settings.peering.priority = 123
    settings.peering.lifetime = 60
    loop = asyncio.get_running_loop()
    async with operator(settings, vault, "op-a") as op:
        await op.wait_paused(False)
        await eventually(lambda: "op-a" in cluster_status(cluster))
        record = cluster_status(cluster)["op-a"]
        assert record["priority"] == 123
        assert record["lifetime"] == 60
        first = datetime.datetime.fromisoformat(record["lastseen"])
        assert abs((first - clock.utcnow()).total_seconds()) < 1

        # Keep-alives twice per lifetime: the last-seen time moves on.
        start = loop.time()
        await asyncio.sleep(31)
        second = datetime.datetime.fromisoformat(cluster_status(cluster)["op-a"]["lastseen"])
        assert 29 <= (second - first).total_seconds() <= 31
        assert loop.time() - start >= 31
        assert op.paused.is_off()

    assert "op-a" not in cluster_status(cluster)
    assert len(op.paused) == 0  # the toggle is dropped on exit


async def test_own_record_is_removed_on_exit(cluster: Cluster, vault: Vault, settings: OperatorSettings) -> None:
    add_cluster_peering(with_crds(cluster))
    async with operator(settings, vault, "op-a") as op:
        await eventually(lambda: "op-a" in cluster_status(cluster))
        await op.stop()
        assert "op-a" not in cluster_status(cluster)
        assert len(op.paused) == 0


async def test_paused_until_the_peering_is_seen(cluster: Cluster, vault: Vault, settings: OperatorSettings) -> None:
    add_cluster_peering(with_crds(cluster))
    paused = ToggleSet()
    task = asyncio.create_task(
        peering.run_peering(
            settings=settings, identity="op-a", namespace=None, clusterwide=True, operator_paused=paused, vault=vault
        )
    )
    try:
        for _ in range(3):
            await asyncio.sleep(0)
        assert len(paused) == 1 and paused.is_on()  # no handling before we know there are no higher peers
        async with asyncio.timeout(10):
            await paused.wait_for(False)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def test_stealth_mode_does_not_log_keepalives(
    cluster: Cluster, vault: Vault, settings: OperatorSettings, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    add_cluster_peering(with_crds(cluster))
    async with operator(settings, vault, "op-a"):
        await asyncio.sleep(100)
    assert any("Keep-alive" in msg for msg in messages(caplog, logging.DEBUG))

    caplog.clear()
    settings.peering.stealth = True
    async with operator(settings, vault, "op-b"):
        await eventually(lambda: "op-b" in cluster_status(cluster))
        await asyncio.sleep(100)
    assert not any("Keep-alive" in msg for msg in messages(caplog, logging.DEBUG))
