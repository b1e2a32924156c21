"""Two operators and more: priorities, expiry, malformed records, API errors."""

from __future__ import annotations

import asyncio
import datetime
import logging

import pytest

from kopf._cogs.aiokits import clock
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.structs.credentials import Vault
from kopf_sim.store.cluster import Cluster

from .helpers import (
    LOGGER,
    Requests,
    add_cluster_peering,
    cluster_status,
    eventually,
    messages,
    operator,
    put_record,
    settings_for,
    with_crds,
)

pytestmark = pytest.mark.looptime


async def test_lower_priority_pauses_while_the_higher_one_runs(
    cluster: Cluster, vault: Vault, settings: OperatorSettings, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    add_cluster_peering(with_crds(cluster))
    low_settings = settings_for(settings, priority=10)
    high_settings = settings_for(settings, priority=20)
    async with operator(low_settings, vault, "low") as low:
        await low.wait_paused(False)
        async with operator(high_settings, vault, "high") as high:
            await low.wait_paused(True, timeout=5)
            await high.wait_paused(False, timeout=5)
            await asyncio.sleep(200)  # many keep-alives later, still the same
            assert low.paused.is_on()
            assert high.paused.is_off()
            assert set(cluster_status(cluster)) == {"low", "high"}
        # The higher one has exited and removed its record: the lower one resumes at once.
        await low.wait_paused(False, timeout=5)
        assert set(cluster_status(cluster)) == {"low"}
    assert any("Pausing" in msg and "high" in msg for msg in messages(caplog, logging.INFO))
    assert any("Resuming" in msg for msg in messages(caplog, logging.INFO))
    assert not messages(caplog, logging.WARNING)


async def test_higher_priority_does_not_pause_for_lower_ones(
    cluster: Cluster, vault: Vault, settings: OperatorSettings
) -> None:
    add_cluster_peering(with_crds(cluster))
    async with operator(settings_for(settings, priority=20), vault, "high") as high:
        await high.wait_paused(False)
        async with operator(settings_for(settings, priority=10), vault, "low") as low:
            await low.wait_paused(True, timeout=5)
            await asyncio.sleep(100)
            assert high.paused.is_off()


async def test_lower_priority_resumes_when_the_higher_record_expires(
    cluster: Cluster, vault: Vault, settings: OperatorSettings, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    add_cluster_peering(with_crds(cluster))
    loop = asyncio.get_running_loop()
    start = loop.time()
    # A crashed operator: its record stays, but it is never refreshed.
    put_record(cluster, "crashed", {"priority": 100, "lifetime": 30, "lastseen": clock.utcnow().isoformat()})
    async with operator(settings_for(settings, priority=10), vault, "low") as low:
        await low.wait_paused(True, timeout=5)
        resumed_at = await low.wait_paused(False, timeout=100)
        assert 30 <= resumed_at - start <= 31
        await eventually(lambda: "crashed" not in cluster_status(cluster), timeout=5)  # the dead are cleaned up
    assert any("dead" in msg and "crashed" in msg for msg in messages(caplog, logging.INFO))


async def test_expired_records_are_ignored_from_the_start(
    cluster: Cluster, vault: Vault, settings: OperatorSettings
) -> None:
    add_cluster_peering(with_crds(cluster))
    long_ago = clock.utcnow() - datetime.timedelta(hours=1)
    put_record(cluster, "ancient", {"priority": 100, "lifetime": 60, "lastseen": long_ago.isoformat()})
    async with operator(settings, vault, "op-a") as op:
        await op.wait_paused(False, timeout=5)
        await eventually(lambda: "ancient" not in cluster_status(cluster), timeout=5)


async def test_same_priorities_warn_and_pause_all(
    cluster: Cluster, vault: Vault, settings: OperatorSettings, caplog: pytest.LogCaptureFixture
) -> None:
    add_cluster_peering(with_crds(cluster))
    settings.peering.priority = 7
    async with operator(settings, vault, "op-a") as a:
        await a.wait_paused(False)
        async with operator(settings, vault, "op-b") as b:
            await a.wait_paused(True, timeout=5)
            await b.wait_paused(True, timeout=5)
            await asyncio.sleep(200)
            assert a.paused.is_on() and b.paused.is_on()
        await a.wait_paused(False, timeout=5)  # the conflict is gone
    warnings = messages(caplog, logging.WARNING)
    assert any("same priority" in msg and "op-b" in msg for msg in warnings)
    assert any("same priority" in msg and "op-a" in msg for msg in warnings)
    assert len(warnings) == 2  # once per operator, not on every keep-alive


async def test_malformed_records_are_ignored(cluster: Cluster, vault: Vault, settings: OperatorSettings) -> None:
    add_cluster_peering(with_crds(cluster))
    put_record(cluster, "garbage", "not-a-record")  # type: ignore[arg-type]
    put_record(cluster, "bad-prio", {"priority": "high", "lifetime": 60, "lastseen": clock.utcnow().isoformat()})
    async with operator(settings, vault, "op-a") as op:
        await op.wait_paused(False, timeout=5)


async def test_api_errors_are_logged_and_retried(
    cluster: Cluster, vault: Vault, settings: OperatorSettings, requests: Requests, caplog: pytest.LogCaptureFixture
) -> None:
    add_cluster_peering(with_crds(cluster))
    requests.failing = lambda request: 403 if request.path == "/apis/kopf.dev/v1" else None
    async with operator(settings, vault, "op-a") as op:
        await asyncio.sleep(20)
        assert op.paused.is_on()  # we do not know if there are higher peers: not handling anything
        assert any("Failed to watch" in msg for msg in messages(caplog, logging.ERROR))

        # The keep-alives fail: the operator is not paused for that, and retries soon.
        requests.failing = lambda request: 403 if request.method == "PATCH" else None
        await op.wait_paused(False, timeout=10)
        assert any("keep-alive" in msg for msg in messages(caplog, logging.ERROR))
        assert "op-a" not in cluster_status(cluster)

        requests.failing = lambda _: None
        await eventually(lambda: "op-a" in cluster_status(cluster), timeout=10)
        assert op.paused.is_off()


async def test_deleted_crds_fall_back_to_standalone(
    cluster: Cluster, vault: Vault, settings: OperatorSettings, caplog: pytest.LogCaptureFixture
) -> None:
    add_cluster_peering(with_crds(cluster))
    async with operator(settings_for(settings, priority=1), vault, "op-a") as op:
        await op.wait_paused(False)
        put_record(cluster, "other", {"priority": 5, "lifetime": 600, "lastseen": clock.utcnow().isoformat()})
        await op.wait_paused(True, timeout=5)
        crd = cluster.resource("apiextensions.k8s.io", "v1", "customresourcedefinitions")
        cluster.delete(crd, None, "clusterkopfpeerings.kopf.dev")
        await op.wait_paused(False, timeout=30)
    assert any("standalone" in msg for msg in messages(caplog, logging.WARNING))
