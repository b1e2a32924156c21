"""Peering: operators with priorities over the simulated cluster, freezing & resuming, in virtual time."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
import pathlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
import yaml
from aiohttp import web

from kopf._cogs.aiokits import clock
from kopf._cogs.aiokits.toggles import ToggleSet
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.structs.credentials import Vault
from kopf._core.engines import peering
from kopf_sim.store.cluster import Cluster

pytestmark = pytest.mark.looptime

ROOT = pathlib.Path(__file__).parent.parent.parent
LOGGER = "kopf.engines.peering"


def load_yaml(path: pathlib.Path) -> list[Any]:
    with path.open() as f:
        return [doc for doc in yaml.safe_load_all(f) if doc]


def crds(group: str = "kopf.dev") -> list[Any]:
    docs = load_yaml(ROOT / "peering.yaml")
    for doc in docs:
        doc["metadata"]["name"] = doc["metadata"]["name"].replace("kopf.dev", group)
        doc["spec"]["group"] = group
    return docs


class Requests:
    """A middleware that records the request paths (to see what the peering does on the wire)."""

    def __init__(self) -> None:
        self.paths: list[tuple[str, str]] = []
        self.failing: Callable[[web.Request], int | None] = lambda _: None  # an HTTP status to fail with

    @web.middleware
    async def middleware(self, request: web.Request, handler: Any) -> web.StreamResponse:
        self.paths.append((request.method, request.path))
        code = self.failing(request)
        if code is not None:
            status = {
                "apiVersion": "v1",
                "kind": "Status",
                "status": "Failure",
                "code": code,
                "message": f"injected {code}",
                "reason": "Injected",
            }
            return web.json_response(status, status=code)
        result: web.StreamResponse = await handler(request)
        return result


@pytest.fixture
def requests() -> Requests:
    return Requests()


@pytest.fixture
def app(app: web.Application, requests: Requests) -> web.Application:
    """The shared simulated apiserver's app, with the requests recorded (and faults injected) in front of it."""
    app.middlewares.insert(0, requests.middleware)
    return app


@pytest.fixture
def settings() -> OperatorSettings:
    settings = OperatorSettings()
    settings.networking.error_backoffs = [1, 2, 3]
    settings.peering.clusterwide = True
    return settings


def with_crds(cluster: Cluster, group: str = "kopf.dev") -> Cluster:
    cluster.apply_manifests(crds(group))
    return cluster


def add_cluster_peering(cluster: Cluster, name: str = "default", group: str = "kopf.dev") -> None:
    cluster.apply_manifests([{"apiVersion": f"{group}/v1", "kind": "ClusterKopfPeering", "metadata": {"name": name}}])


def add_namespaced_peering(cluster: Cluster, namespace: str, name: str = "default") -> None:
    if cluster.peek(("", "namespaces"), None, namespace) is None:
        cluster.apply_manifests([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}])
    cluster.apply_manifests(
        [{"apiVersion": "kopf.dev/v1", "kind": "KopfPeering", "metadata": {"name": name, "namespace": namespace}}]
    )


def cluster_status(cluster: Cluster, name: str = "default", group: str = "kopf.dev") -> dict[str, Any]:
    obj = cluster.get(cluster.resource(group, "v1", "clusterkopfpeerings"), None, name)
    return dict(obj.get("status") or {})


def namespaced_status(cluster: Cluster, namespace: str, name: str = "default") -> dict[str, Any]:
    obj = cluster.get(cluster.resource("kopf.dev", "v1", "kopfpeerings"), namespace, name)
    return dict(obj.get("status") or {})


def put_record(cluster: Cluster, identity: str, record: dict[str, Any] | None, name: str = "default") -> None:
    rtype = cluster.resource("kopf.dev", "v1", "clusterkopfpeerings")
    cluster.patch(rtype, None, name, {"status": {identity: record}}, "application/merge-patch+json")


def settings_for(base: OperatorSettings, **peering_fields: Any) -> OperatorSettings:
    settings = OperatorSettings()
    settings.networking = base.networking
    settings.watching = base.watching
    for key, val in {"clusterwide": base.peering.clusterwide, **peering_fields}.items():
        setattr(settings.peering, key, val)
    return settings


class Operator:
    """One operator's peering running in the background, with its own pause-flag."""

    def __init__(self, task: asyncio.Task[None], paused: ToggleSet, identity: str) -> None:
        self.task = task
        self.paused = paused
        self.identity = identity

    async def wait_paused(self, state: bool = True, timeout: float = 1000) -> float:
        """Wait until paused (or unpaused); return the loop time when it happened."""
        async with asyncio.timeout(timeout):
            await self.paused.wait_for(state)
        return asyncio.get_running_loop().time()

    async def stop(self) -> None:
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.task


@contextlib.asynccontextmanager
async def operator(
    settings: OperatorSettings,
    vault: Vault,
    identity: str,
    *,
    namespace: str | None = None,
    clusterwide: bool = True,
) -> AsyncIterator[Operator]:
    paused = ToggleSet()
    task = asyncio.create_task(
        peering.run_peering(
            settings=settings,
            identity=identity,
            namespace=namespace,
            clusterwide=clusterwide,
            operator_paused=paused,
            vault=vault,
        )
    )
    op = Operator(task, paused, identity)
    try:
        await asyncio.sleep(0)
        yield op
    finally:
        await op.stop()


async def eventually(predicate: Callable[[], bool], timeout: float = 1000, step: float = 0.5) -> None:
    """Poll the cluster's state until the condition is met (in virtual time, so the polling is cheap)."""
    for _ in range(int(timeout / step) + 1):
        if predicate():
            return
        await asyncio.sleep(step)
    raise AssertionError(f"The condition is not met in {timeout}s.")


def messages(caplog: pytest.LogCaptureFixture, level: int) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOGGER and r.levelno == level]


# The solo operator: the record, keep-alives, removal on exit.


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


# Two operators: priorities.


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


# Freezing & resuming.


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


# Absent peering objects & resources; standalone; other peering names & scopes.


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


# Identities & records.


def test_manual_identity_is_stable() -> None:
    assert peering.detect_own_id(manual=True) == peering.detect_own_id(manual=True)
    assert "@" in peering.detect_own_id(manual=True)
    assert "/" not in peering.detect_own_id(manual=True)


def test_operator_identity_is_unique_per_start() -> None:
    one = peering.detect_own_id()
    two = peering.detect_own_id()
    assert one != two
    assert one.startswith(peering.detect_own_id(manual=True) + "/")


def test_pod_name_is_used_as_the_host(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POD_NAME", "operator-7d9f8-xyz")
    assert peering.detect_own_id(manual=True).endswith("@operator-7d9f8-xyz")


def test_peer_records_round_trip() -> None:
    moment = datetime.datetime(2026, 1, 1, 12, 0, tzinfo=datetime.UTC)
    peer = peering.Peer(identity="x", priority=5, lifetime=60, lastseen=moment, message="hi")
    assert peer.as_dict() == {"priority": 5, "lifetime": 60, "lastseen": moment.isoformat(), "message": "hi"}
    assert peering.Peer.parse("x", peer.as_dict()) == peer
    assert peer.deadline == moment + datetime.timedelta(seconds=60)
    assert not peer.is_dead(moment + datetime.timedelta(seconds=59))
    assert peer.is_dead(moment + datetime.timedelta(seconds=60))


def test_peer_parsing_tolerates_naive_and_zulu_times() -> None:
    naive = peering.Peer.parse("x", {"priority": 1, "lifetime": 10, "lastseen": "2026-01-01T00:00:00"})
    zulu = peering.Peer.parse("x", {"priority": 1, "lifetime": 10, "lastseen": "2026-01-01T00:00:00Z"})
    assert naive is not None and zulu is not None and naive.lastseen == zulu.lastseen
    assert peering.parse_peers({"status": {"a": {"priority": 1}, "b": "junk", "c": {"priority": "x"}}}) == [
        peering.Peer(identity="a", priority=1)
    ]
    assert peering.parse_peers(None) == []


def test_keepalive_interval() -> None:
    assert peering.keepalive_interval(60) == 30
    assert peering.keepalive_interval(1) == 1
