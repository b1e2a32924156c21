"""End-to-end: in-memory indices & daemons in whole operators (kopf.operator) against the sim, in virtual time."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import kopf
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.structs.credentials import Vault
from kopf._core.engines.daemons import DaemonStopped, DaemonStoppingReason
from kopf._core.engines.indexing import OperatorIndexers
from kopf._core.intents.registries import OperatorRegistry
from kopf._core.reactor.memories import ResourceMemories
from kopf_sim.store.cluster import Cluster
from tests.helpers import wait_for

from .conftest import Objects

pytestmark = pytest.mark.looptime


class Pods:
    """Shortcuts for the pods in the simulated cluster."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.rtype = cluster.resource("", "v1", "pods")

    def create(self, name: str, namespace: str = "default", **labels: str) -> None:
        body = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": labels},
            "spec": {"containers": [{"name": "main", "image": "example"}]},
        }
        self.cluster.create(self.rtype, namespace, body)

    def relabel(self, name: str, namespace: str = "default", **labels: str) -> None:
        self.cluster.patch(
            self.rtype, namespace, name, {"metadata": {"labels": labels}}, "application/merge-patch+json"
        )

    def delete(self, name: str, namespace: str = "default") -> None:
        self.cluster.delete(self.rtype, namespace, name)


@pytest.fixture
def pods(cluster: Cluster) -> Pods:
    return Pods(cluster)


@pytest.fixture
def settings() -> OperatorSettings:
    settings = OperatorSettings()
    settings.peering.standalone = True
    settings.posting.enabled = False
    settings.networking.error_backoffs = [1, 2, 3]
    return settings


def start(
    registry: OperatorRegistry,
    settings: OperatorSettings,
    vault: Vault,
    **kwargs: Any,
) -> tuple[asyncio.Task[None], asyncio.Event]:
    stop_flag = asyncio.Event()
    task = asyncio.create_task(
        kopf.operator(
            registry=registry, settings=settings, vault=vault, clusterwide=True, stop_flag=stop_flag, **kwargs
        )
    )
    return task, stop_flag


async def stop(task: asyncio.Task[None], stop_flag: asyncio.Event) -> None:
    stop_flag.set()
    await asyncio.wait_for(task, timeout=60)


def snapshot(index: kopf.Index[Any, Any]) -> dict[Any, list[Any]]:
    return {key: sorted(store) for key, store in index.items()}


async def test_index_of_pods_is_passed_to_the_handlers_of_other_resources_and_follows_the_pods(
    registry: OperatorRegistry,
    settings: OperatorSettings,
    vault: Vault,
    objects: Objects,
    pods: Pods,
) -> None:
    seen: dict[str, Any] = {}

    @kopf.index("pods", registry=registry)
    def by_app(name: str, labels: kopf.Labels, **_: Any) -> dict[str, str] | None:
        return {labels["app"]: name} if "app" in labels else None

    @kopf.on.create("kopfexamples", registry=registry)
    def create_fn(name: str, by_app: kopf.Index[str, str], **_: Any) -> None:
        seen[name] = (
            isinstance(by_app, kopf.Index),
            all(isinstance(s, kopf.Store) for s in by_app.values()),
            snapshot(by_app),
        )

    pods.create("pod1", app="a")
    pods.create("pod2", app="a")
    pods.create("pod3", app="b")
    pods.create("pod4")  # not indexed: None keeps nothing.
    objects.create("kex1")
    indexers = OperatorIndexers()
    task, stop_flag = start(registry, settings, vault, indexers=indexers)

    # Although the kopfexamples can be listed first, the handler sees the complete index.
    await wait_for(lambda: "kex1" in seen)
    assert seen["kex1"] == (True, True, {"a": ["pod1", "pod2"], "b": ["pod3"]})
    index = indexers.indices["by_app"]

    pods.relabel("pod3", app="a")
    await wait_for(lambda: snapshot(index) == {"a": ["pod1", "pod2", "pod3"]})
    pods.create("pod5", app="c")
    await wait_for(lambda: snapshot(index) == {"a": ["pod1", "pod2", "pod3"], "c": ["pod5"]})
    pods.delete("pod1")
    pods.delete("pod5")
    await wait_for(lambda: snapshot(index) == {"a": ["pod2", "pod3"]})

    objects.create("kex2")  # the handlers see the live index.
    await wait_for(lambda: "kex2" in seen)
    assert seen["kex2"][2] == {"a": ["pod2", "pod3"]}
    await stop(task, stop_flag)


async def test_filters_mismatch_and_deletion_release_the_values_and_the_memory(
    registry: OperatorRegistry,
    settings: OperatorSettings,
    vault: Vault,
    pods: Pods,
) -> None:

    @kopf.index("pods", registry=registry, labels={"indexed": "yes"})
    def names(name: str, **_: Any) -> str:
        return name

    pods.create("pod1", indexed="yes")
    pods.create("pod2", indexed="yes")
    indexers = OperatorIndexers()
    memories = ResourceMemories()
    task, stop_flag = start(registry, settings, vault, indexers=indexers, memories=memories)
    await wait_for(lambda: "names" in indexers.indices)  # created empty at the start, before any listing.
    index = indexers.indices["names"]
    await wait_for(lambda: snapshot(index) == {None: ["pod1", "pod2"]})
    assert sum("indexing" in memory.extras for memory in memories.iter_all_memories()) == 2

    pods.relabel("pod1", indexed="no")
    await wait_for(lambda: snapshot(index) == {None: ["pod2"]})
    pods.delete("pod2")
    await wait_for(lambda: snapshot(index) == {})
    await wait_for(lambda: len(memories) == 1)  # only pod1 is remembered (it exists).
    await stop(task, stop_flag)


async def test_handlers_wait_until_the_index_is_populated(
    registry: OperatorRegistry,
    settings: OperatorSettings,
    vault: Vault,
    objects: Objects,
    pods: Pods,
) -> None:
    calls: list[tuple[float, int]] = []

    @kopf.index("pods", registry=registry)
    async def slow(name: str, **_: Any) -> str:
        await asyncio.sleep(3)  # virtual time: 5 pods take 15 seconds to index.
        return name

    @kopf.on.event("kopfexamples", registry=registry)
    async def event_fn(slow: kopf.Index[None, str], **_: Any) -> None:
        calls.append((asyncio.get_running_loop().time(), len(slow.get(None, []))))

    for i in range(5):
        pods.create(f"pod{i}")
    objects.create("kex1")
    loop = asyncio.get_running_loop()
    started = loop.time()
    task, stop_flag = start(registry, settings, vault)
    await wait_for(lambda: calls)
    when, size = calls[0]
    assert size == 5
    assert when - started >= 15
    await stop(task, stop_flag)


@pytest.mark.parametrize("worker_limit", [1, 2])
async def test_many_objects_with_a_small_worker_limit_do_not_deadlock(
    registry: OperatorRegistry,
    settings: OperatorSettings,
    vault: Vault,
    objects: Objects,
    worker_limit: int,
) -> None:
    sizes: dict[str, int] = {}

    @kopf.index("kopfexamples", registry=registry)
    def by_name(name: str, **_: Any) -> dict[str, str]:
        return {name: name}

    @kopf.on.resume("kopfexamples", registry=registry)
    @kopf.on.create("kopfexamples", registry=registry)
    def handler(name: str, by_name: kopf.Index[str, str], **_: Any) -> None:
        sizes[name] = len(by_name)

    for i in range(50):
        objects.create(f"kex{i:02d}")
    settings.batching.worker_limit = worker_limit
    task, stop_flag = start(registry, settings, vault)
    await wait_for(lambda: len(sizes) == 50, timeout=120)
    assert set(sizes.values()) == {50}  # every handler has seen the complete index.
    await stop(task, stop_flag)


async def test_operator_stop_stops_the_running_daemons(
    registry: OperatorRegistry,
    settings: OperatorSettings,
    vault: Vault,
    objects: Objects,
) -> None:
    reasons: list[DaemonStoppingReason] = []
    running: list[str] = []

    @kopf.daemon("kopfexamples", registry=registry)
    async def monitor(name: str, stopped: DaemonStopped, **_: Any) -> None:
        running.append(name)
        await stopped.wait()
        reasons.append(stopped.reason)

    @kopf.daemon("kopfexamples", registry=registry, cancellation_timeout=5)
    async def stubborn(stopped: DaemonStopped, **_: Any) -> None:
        await asyncio.Event().wait()  # ignores the stop-flag: cancelled after the timeout.

    objects.create("kex1")
    before = asyncio.all_tasks()
    task, stop_flag = start(registry, settings, vault)
    await wait_for(lambda: running == ["kex1"])
    loop = asyncio.get_running_loop()
    stopping = loop.time()
    await stop(task, stop_flag)
    assert reasons == [DaemonStoppingReason.OPERATOR_EXITING]
    assert loop.time() - stopping <= 10
    assert {t for t in asyncio.all_tasks() if not t.done()} <= before  # no leaked tasks (incl. the daemons).


async def test_indexing_and_watching_handlers_post_no_k8s_events(
    registry: OperatorRegistry,
    settings: OperatorSettings,
    vault: Vault,
    objects: Objects,
    cluster: Cluster,
) -> None:
    # As in the published framework: these run on every watch-event of every object; posting their messages
    # (the framework's "succeeded" and the handlers' own) would flood the cluster with events.
    settings.posting.enabled = True
    settings.posting.loggers = True

    @kopf.index("kopfexamples", registry=registry)
    def names(name: str, logger: kopf.Logger, **_: Any) -> str:
        logger.info("Indexed.")
        return name

    @kopf.on.event("kopfexamples", registry=registry)
    def watch_fn(logger: kopf.Logger, **_: Any) -> None:
        logger.warning("Watched.")

    @kopf.on.create("kopfexamples", registry=registry)
    def create_fn(logger: kopf.Logger, **_: Any) -> None:
        logger.info("Created.")

    objects.create("kex1")
    task, stop_flag = start(registry, settings, vault)
    events_rtype = cluster.resource("", "v1", "events")
    await wait_for(
        lambda: any(
            event["message"] == "Creation is processed: 1 succeeded; 0 failed."
            for event in cluster.objects(events_rtype.storage_key, "default")
        )
    )
    objects.patch("kex1", {"spec": {"field": "changed"}})
    await asyncio.sleep(5)
    await stop(task, stop_flag)
    messages = sorted(event["message"] for event in cluster.objects(events_rtype.storage_key, "default"))
    assert messages == ["Created.", "Creation is processed: 1 succeeded; 0 failed.", "Handler 'create_fn' succeeded."]
