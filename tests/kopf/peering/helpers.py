"""What the peering tests share: the peering CRDs & objects, the records, operators' peering in the background."""

from __future__ import annotations

import asyncio
import contextlib
import pathlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
import yaml
from aiohttp import web

from kopf._cogs.aiokits.toggles import ToggleSet
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.structs.credentials import Vault
from kopf._core.engines import peering
from kopf_sim.store.cluster import Cluster

ROOT = pathlib.Path(__file__).parent.parent.parent.parent
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
