"""Absent peering objects & resources; standalone; other peering names & scopes."""

from __future__ import annotations

import asyncio
import logging

import pytest

from kopf._cogs.aiokits import clock
from kopf._cogs.aiokits.toggles import ToggleSet
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.structs.credentials import Vault
from kopf._core.engines import peering
from kopf_sim.store.cluster import Cluster

from .helpers import (
    Requests,
    add_cluster_peering,
    add_namespaced_peering,
    cluster_status,
    eventually,
    messages,
    namespaced_status,
    operator,
    put_record,
    settings_for,
    with_crds,
)

pytestmark = pytest.mark.looptime


async def test_absent_optional_peering_warns_and_runs_standalone(
    cluster: Cluster, vault: Vault, settings: OperatorSettings, caplog: pytest.LogCaptureFixture
) -> None:
    with_crds(cluster)
    async with operator(settings, vault, "op-a") as op:
        await op.wait_paused(False, timeout=5)
        await asyncio.sleep(100)
        assert op.paused.is_off()
    warnings = messages(caplog, logging.WARNING)
    assert len(warnings) == 1 and "standalone" in warnings[0]
    assert not messages(caplog, logging.ERROR)


async def test_absent_optional_peering_is_used_when_it_appears(
    cluster: Cluster, vault: Vault, settings: OperatorSettings
) -> None:
    with_crds(cluster)
    put_higher = False
    async with operator(settings, vault, "op-a") as op:
        await op.wait_paused(False, timeout=5)
        add_cluster_peering(cluster)
        await eventually(lambda: "op-a" in cluster_status(cluster), timeout=5)
        put_record(cluster, "other", {"priority": 5, "lifetime": 60, "lastseen": clock.utcnow().isoformat()})
        put_higher = True
        await op.wait_paused(True, timeout=5)
    assert put_higher


async def test_absent_mandatory_peering_logs_an_error_and_pauses_until_it_appears(
    cluster: Cluster, vault: Vault, settings: OperatorSettings, caplog: pytest.LogCaptureFixture
) -> None:
    with_crds(cluster)
    settings.peering.name = "example"
    settings.peering.mandatory = True
    async with operator(settings, vault, "op-a") as op:
        await asyncio.sleep(100)
        assert op.paused.is_on()
        errors = messages(caplog, logging.ERROR)
        assert len(errors) == 1 and "example" in errors[0]
        add_cluster_peering(cluster, name="example")
        await op.wait_paused(False, timeout=5)
        await eventually(lambda: "op-a" in cluster_status(cluster, name="example"), timeout=5)

        # If it disappears again, the operator pauses again.
        cluster.delete(cluster.resource("kopf.dev", "v1", "clusterkopfpeerings"), None, "example")
        await op.wait_paused(True, timeout=5)


async def test_absent_crds_optional_peering_runs_standalone(
    cluster: Cluster, vault: Vault, settings: OperatorSettings, caplog: pytest.LogCaptureFixture
) -> None:
    async with operator(settings, vault, "op-a") as op:
        await op.wait_paused(False, timeout=5)
        await asyncio.sleep(100)
        assert op.paused.is_off()
    warnings = messages(caplog, logging.WARNING)
    assert len(warnings) == 1 and "standalone" in warnings[0]


async def test_absent_crds_mandatory_peering_pauses_until_they_appear(
    cluster: Cluster, vault: Vault, settings: OperatorSettings, caplog: pytest.LogCaptureFixture
) -> None:
    settings.peering.mandatory = True
    async with operator(settings, vault, "op-a") as op:
        await asyncio.sleep(100)
        assert op.paused.is_on()
        assert len(messages(caplog, logging.ERROR)) == 1
        add_cluster_peering(with_crds(cluster))
        await op.wait_paused(False, timeout=30)


async def test_legacy_api_group_is_used_if_the_new_one_is_absent(
    cluster: Cluster, vault: Vault, settings: OperatorSettings
) -> None:
    with_crds(cluster, group="kopf.zalando.org")
    add_cluster_peering(cluster, group="kopf.zalando.org")
    async with operator(settings, vault, "op-a") as op:
        await op.wait_paused(False, timeout=5)
        await eventually(lambda: "op-a" in cluster_status(cluster, group="kopf.zalando.org"), timeout=5)


async def test_standalone_mode_does_nothing(
    cluster: Cluster, vault: Vault, settings: OperatorSettings, requests: Requests
) -> None:
    add_cluster_peering(with_crds(cluster))
    settings.peering.standalone = True
    requests.paths.clear()
    async with operator(settings, vault, "op-a") as op:
        await asyncio.sleep(100)
        assert len(op.paused) == 0
        assert op.paused.is_off()
        assert not op.task.done()
    assert requests.paths == []
    assert cluster_status(cluster) == {}


async def test_different_peering_names_do_not_see_each_other(
    cluster: Cluster, vault: Vault, settings: OperatorSettings
) -> None:
    with_crds(cluster)
    add_cluster_peering(cluster, name="one")
    add_cluster_peering(cluster, name="two")
    async with (
        operator(settings_for(settings, name="one", priority=1), vault, "a") as a,
        operator(settings_for(settings, name="two", priority=2), vault, "b") as b,
    ):
        await a.wait_paused(False)
        await b.wait_paused(False)
        await asyncio.sleep(100)
        assert a.paused.is_off() and b.paused.is_off()
        assert set(cluster_status(cluster, name="one")) == {"a"}
        assert set(cluster_status(cluster, name="two")) == {"b"}


async def test_namespaced_peering_uses_kopfpeerings(cluster: Cluster, vault: Vault, settings: OperatorSettings) -> None:
    with_crds(cluster)
    add_namespaced_peering(cluster, "ns1")
    add_cluster_peering(cluster)
    settings.peering.clusterwide = False
    async with operator(settings_for(settings, priority=1), vault, "low", namespace="ns1", clusterwide=False) as low:
        await low.wait_paused(False)
        async with operator(settings_for(settings, priority=2), vault, "high", namespace="ns1", clusterwide=False):
            await low.wait_paused(True, timeout=5)
            assert set(namespaced_status(cluster, "ns1")) == {"low", "high"}
            assert cluster_status(cluster) == {}


async def test_namespaced_peering_needs_a_namespace(vault: Vault, settings: OperatorSettings) -> None:
    with pytest.raises(ValueError, match="namespace"):
        await peering.run_peering(
            settings=settings, identity="x", namespace=None, clusterwide=False, operator_paused=ToggleSet(), vault=vault
        )
