"""The official clients, configured the documented ways, reach the test's simulated cluster in memory."""

from __future__ import annotations

import asyncio
import logging
import os
import time
from pathlib import Path
from typing import Any

import kubernetes
import kubernetes_asyncio
import pykube
import pytest

import kopf
from pytest_kopf.cluster import KopfCluster
from pytest_kopf.errors import SyncClientInLoopWarning
from pytest_kopf.operator import KopfOperator

CRD = str(Path(__file__).parent.parent.parent / "examples" / "crd.yaml")
ROOT_CA = "kube-root-ca.crt"  # every namespace has it (the simulated cluster's controllers make it)
pytestmark = pytest.mark.kopf_sim_only


def example(name: str) -> dict[str, Any]:
    return {"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "metadata": {"name": name}, "spec": {}}


async def run_handler(
    kopf_cluster: KopfCluster, kopf_operator: KopfOperator, registry: kopf.OperatorRegistry, seconds: float = 1
) -> None:
    await kopf_cluster.apply(CRD)
    await kopf_operator.start(registry=registry)
    await kopf_cluster.create(example("ex1"))
    await asyncio.sleep(seconds)
    await kopf_operator.stop()
    assert "Traceback" not in kopf_operator.logs, kopf_operator.logs


async def test_the_sync_client_pykube_and_in_cluster_configs_in_a_sync_handler(
    kopf_cluster: KopfCluster, kopf_operator: KopfOperator
) -> None:
    registry = kopf.OperatorRegistry()
    seen: dict[str, Any] = {}

    @kopf.on.create("kopfexamples", registry=registry)
    def create_fn(name: str, namespace: str, **_: Any) -> None:
        kubernetes.config.load_kube_config()
        core = kubernetes.client.CoreV1Api()
        core.create_namespaced_config_map(namespace, {"metadata": {"name": f"{name}-sync"}})
        kubernetes.config.load_incluster_config()
        seen["in-cluster"] = [
            cm.metadata.name
            for cm in kubernetes.client.CoreV1Api().list_namespaced_config_map(namespace).items
            if cm.metadata.name != ROOT_CA
        ]
        api = pykube.HTTPClient(pykube.KubeConfig.from_env())  # the service account first, then KUBECONFIG
        pykube.ConfigMap(api, {"metadata": {"name": f"{name}-pykube", "namespace": namespace}}).create()
        seen["pykube"] = sorted(
            cm.name for cm in pykube.ConfigMap.objects(api).filter(namespace=namespace) if cm.name != ROOT_CA
        )

    await run_handler(kopf_cluster, kopf_operator, registry)
    assert seen == {"in-cluster": ["ex1-sync"], "pykube": ["ex1-pykube", "ex1-sync"]}
    names = {cm["metadata"]["name"] for cm in await kopf_cluster.list("configmaps")}
    assert names == {"ex1-sync", "ex1-pykube", ROOT_CA}


async def test_the_default_configuration_as_kopfs_login_leaves_it(
    kopf_cluster: KopfCluster, kopf_operator: KopfOperator
) -> None:
    registry = kopf.OperatorRegistry()

    @kopf.on.create("kopfexamples", registry=registry)
    def create_fn(name: str, namespace: str, **_: Any) -> None:
        core = kubernetes.client.CoreV1Api()  # no configuration loaded by the operator's own code
        core.create_namespaced_config_map(namespace, {"metadata": {"name": f"{name}-bare"}})

    await run_handler(kopf_cluster, kopf_operator, registry)
    assert "ex1-bare" in {cm["metadata"]["name"] for cm in await kopf_cluster.list("configmaps")}


def test_the_default_configuration_is_restored_after_the_test() -> None:
    assert "kopf-sim" not in kubernetes.client.Configuration.get_default_copy().host


async def test_kubernetes_asyncio_in_an_async_handler(kopf_cluster: KopfCluster, kopf_operator: KopfOperator) -> None:
    registry = kopf.OperatorRegistry()
    seen: dict[str, Any] = {}

    @kopf.on.create("kopfexamples", registry=registry)
    async def create_fn(name: str, namespace: str, **_: Any) -> None:
        await kubernetes_asyncio.config.load_kube_config()
        async with kubernetes_asyncio.client.ApiClient() as api:
            core = kubernetes_asyncio.client.CoreV1Api(api)
            await core.create_namespaced_config_map(namespace, {"metadata": {"name": f"{name}-async"}})
        kubernetes_asyncio.config.load_incluster_config()
        async with kubernetes_asyncio.client.ApiClient() as api:
            listing = await kubernetes_asyncio.client.CoreV1Api(api).list_namespaced_config_map(namespace)
        seen["names"] = [cm.metadata.name for cm in listing.items if cm.metadata.name != ROOT_CA]

    await run_handler(kopf_cluster, kopf_operator, registry)
    assert seen == {"names": ["ex1-async"]}


async def test_a_watch_in_a_sync_daemon_waits_in_virtual_time(
    kopf_cluster: KopfCluster, kopf_operator: KopfOperator
) -> None:
    registry = kopf.OperatorRegistry()
    events: list[tuple[str, str, float]] = []

    @kopf.daemon("kopfexamples", registry=registry)
    def watcher(namespace: str, **_: Any) -> None:
        kubernetes.config.load_kube_config()
        stream = kubernetes.watch.Watch().stream(
            kubernetes.client.CoreV1Api().list_namespaced_config_map, namespace, timeout_seconds=7200
        )
        for event in stream:
            if event["object"].metadata.name != ROOT_CA:
                events.append((event["type"], event["object"].metadata.name, time.monotonic()))

    await kopf_cluster.apply(CRD)
    await kopf_operator.start(registry=registry)
    await kopf_cluster.create(example("ex1"))
    wall = time.perf_counter()
    await asyncio.sleep(3600)
    await kopf_cluster.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "late"}})
    await asyncio.sleep(7200)  # the watch ends by the server's timeout; the daemon exits
    assert time.perf_counter() - wall < 30  # virtual hours: the thread waited idle, not for real
    await kopf_operator.stop()
    assert [(kind, name) for kind, name, _ in events] == [("ADDED", "late")]
    assert 3600 <= events[0][2] < 3602


async def test_kopfs_own_login_from_the_kubeconfig(kopf_cluster: KopfCluster, kopf_operator: KopfOperator) -> None:
    registry = kopf.OperatorRegistry()
    handled: list[str] = []

    @kopf.on.login(registry=registry)
    def login_fn(**kwargs: Any) -> Any:
        return kopf.login_with_kubeconfig(**kwargs)

    @kopf.on.create("kopfexamples", registry=registry)
    def create_fn(name: str, **_: Any) -> None:
        handled.append(name)

    info = kopf.login_with_kubeconfig(logger=logging.getLogger("test"))
    assert info is not None and info.server.startswith("http://kopf-sim-") and info.server.endswith(".test")
    await run_handler(kopf_cluster, kopf_operator, registry)
    assert handled == ["ex1"]


async def test_a_sync_client_in_the_loops_thread_blocks_it_and_is_warned_of(kopf_cluster: KopfCluster) -> None:
    kubernetes.config.load_kube_config()
    with pytest.warns(SyncClientInLoopWarning, match="calls a sync client .* it blocks the operator's loop"):
        names = [ns.metadata.name for ns in kubernetes.client.CoreV1Api().list_namespace().items]
    assert "default" in names
    names = await asyncio.to_thread(
        lambda: [ns.metadata.name for ns in kubernetes.client.CoreV1Api().list_namespace().items]
    )
    assert "default" in names


async def test_the_pooled_connections_of_a_retried_handler_are_not_a_leak(
    kopf_cluster: KopfCluster, kopf_operator: KopfOperator
) -> None:
    registry = kopf.OperatorRegistry()
    module_client: list[Any] = []  # as a module's global client: kept, with its pool, after the operator

    @kopf.on.create("kopfexamples", registry=registry)
    def create_fn(namespace: str, retry: int, **_: Any) -> str:
        kubernetes.config.load_kube_config()
        core = kubernetes.client.CoreV1Api()
        module_client.append(core)
        core.list_namespaced_config_map(namespace)  # a keep-alive connection, kept by the error's traceback
        if retry == 0:
            raise kopf.TemporaryError("again", delay=5)
        return "done"

    await kopf_cluster.apply(CRD)
    await kopf_operator.start(registry=registry)
    await kopf_cluster.create(example("ex1"))
    await kopf_cluster.wait_for("kopfexamples", "ex1", condition=lambda obj: obj.get("status", {}).get("create_fn"))
    await kopf_operator.stop()  # no KopfLeakError for the simulator's side of the clients' pooled connections

    def reuse() -> list[str]:  # the clients connect anew when used again
        return [cm.metadata.name for cm in module_client[0].list_namespaced_config_map("default").items]

    assert await asyncio.to_thread(reuse) == [ROOT_CA]


async def test_a_sync_client_in_an_async_handler_leaves_no_connection_behind(
    kopf_cluster: KopfCluster, kopf_operator: KopfOperator
) -> None:
    registry = kopf.OperatorRegistry()

    @kopf.on.create("kopfexamples", id="blocking_listing_fn", registry=registry, retries=1)
    async def create_fn(namespace: str, **_: Any) -> None:
        kubernetes.config.load_kube_config()
        kubernetes.client.CoreV1Api().list_namespaced_config_map(namespace)  # a kept-alive connection

    await kopf_cluster.apply(CRD)
    await kopf_operator.start(registry=registry)

    async def create_and_handle() -> None:
        await kopf_cluster.create(example("ex1"))
        await asyncio.sleep(10)

    with pytest.warns(SyncClientInLoopWarning, match="blocking_listing_fn"):
        await create_and_handle()
    assert "Handler 'blocking_listing_fn' succeeded" in kopf_operator.logs
    await kopf_operator.stop()  # no KopfLeakError: the connection is not the operator's task


def test_the_kubeconfig_is_the_tests_only_while_it_runs(kopf_cluster: KopfCluster) -> None:
    assert os.environ["KUBECONFIG"].endswith(".test.kubeconfig")
