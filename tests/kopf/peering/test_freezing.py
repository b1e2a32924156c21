"""Freezing & resuming: kopf freeze/resume, in namespaces or not."""

from __future__ import annotations

import asyncio
import logging

import pytest

from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.structs.credentials import Vault
from kopf._core.engines import peering
from kopf_sim.store.cluster import Cluster

from .helpers import (
    LOGGER,
    add_cluster_peering,
    add_namespaced_peering,
    cluster_status,
    messages,
    namespaced_status,
    operator,
    settings_for,
    with_crds,
)

pytestmark = pytest.mark.looptime


async def test_freeze_pauses_for_its_lifetime(
    cluster: Cluster, vault: Vault, settings: OperatorSettings, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    add_cluster_peering(with_crds(cluster))
    loop = asyncio.get_running_loop()
    async with operator(settings, vault, "op-a") as op:
        await op.wait_paused(False)
        frozen_at = loop.time()
        await peering.freeze(
            settings=settings,
            namespaces=None,
            clusterwide=True,
            identity="admin@laptop",
            priority=100,
            lifetime=120,
            message="maintenance",
            peering_name="default",
            vault=vault,
        )
        record = cluster_status(cluster)["admin@laptop"]
        assert record["priority"] == 100 and record["lifetime"] == 120 and record["message"] == "maintenance"
        await op.wait_paused(True, timeout=5)
        resumed_at = await op.wait_paused(False, timeout=1000)
        assert 120 <= resumed_at - frozen_at <= 121
    assert any("maintenance" in msg for msg in messages(caplog, logging.INFO))


async def test_resume_unpauses_before_the_freeze_expires(
    cluster: Cluster, vault: Vault, settings: OperatorSettings
) -> None:
    add_cluster_peering(with_crds(cluster))
    loop = asyncio.get_running_loop()
    async with operator(settings, vault, "op-a") as op:
        await op.wait_paused(False)
        await peering.freeze(
            settings=settings,
            namespaces=None,
            clusterwide=True,
            identity="admin@laptop",
            priority=100,
            lifetime=3600,
            message=None,
            peering_name="default",
            vault=vault,
        )
        await op.wait_paused(True, timeout=5)
        await asyncio.sleep(10)
        resumed = loop.time()
        await peering.resume(
            settings=settings,
            namespaces=None,
            clusterwide=True,
            identity="admin@laptop",
            peering_name="default",
            vault=vault,
        )
        assert "admin@laptop" not in cluster_status(cluster)
        done = await op.wait_paused(False, timeout=5)
        assert done - resumed < 1


async def test_freeze_with_a_lower_priority_does_not_pause(
    cluster: Cluster, vault: Vault, settings: OperatorSettings
) -> None:
    add_cluster_peering(with_crds(cluster))
    async with operator(settings_for(settings, priority=666), vault, "dev") as op:
        await op.wait_paused(False)
        await peering.freeze(
            settings=settings,
            namespaces=None,
            clusterwide=True,
            identity="admin@laptop",
            priority=100,
            lifetime=60,
            message=None,
            peering_name="default",
            vault=vault,
        )
        await asyncio.sleep(30)
        assert op.paused.is_off()


async def test_freeze_and_resume_in_namespaces(cluster: Cluster, vault: Vault, settings: OperatorSettings) -> None:
    with_crds(cluster)
    add_namespaced_peering(cluster, "ns1")
    add_namespaced_peering(cluster, "ns2")
    settings.peering.clusterwide = False
    async with (
        operator(settings, vault, "op1", namespace="ns1", clusterwide=False) as op1,
        operator(settings, vault, "op2", namespace="ns2", clusterwide=False) as op2,
    ):
        await op1.wait_paused(False)
        await op2.wait_paused(False)
        await peering.freeze(
            settings=settings,
            namespaces=["ns1"],
            clusterwide=False,
            identity="admin",
            priority=100,
            lifetime=60,
            message=None,
            peering_name="default",
            vault=vault,
        )
        await op1.wait_paused(True, timeout=5)
        await asyncio.sleep(10)
        assert op2.paused.is_off()  # a different namespace, a different peering
        assert "admin" in namespaced_status(cluster, "ns1")
        assert "admin" not in namespaced_status(cluster, "ns2")
        await peering.resume(
            settings=settings,
            namespaces=["ns1"],
            clusterwide=False,
            identity="admin",
            peering_name="default",
            vault=vault,
        )
        await op1.wait_paused(False, timeout=5)


async def test_freezing_an_absent_peering_fails(cluster: Cluster, vault: Vault, settings: OperatorSettings) -> None:
    with_crds(cluster)
    with pytest.raises(peering.PeeringNotFoundError, match="absent-one"):
        await peering.freeze(
            settings=settings,
            namespaces=None,
            clusterwide=True,
            identity="admin",
            priority=100,
            lifetime=60,
            message=None,
            peering_name="absent-one",
            vault=vault,
        )


async def test_resuming_an_absent_peering_warns(
    cluster: Cluster, vault: Vault, settings: OperatorSettings, caplog: pytest.LogCaptureFixture
) -> None:
    with_crds(cluster)
    await peering.resume(
        settings=settings, namespaces=["ns1"], clusterwide=False, identity="admin", peering_name="default", vault=vault
    )
    assert any("not found" in msg for msg in messages(caplog, logging.WARNING))
