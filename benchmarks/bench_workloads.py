"""Workloads in virtual time: a 100-replica Deployment rolled out and updated; 1,000 Jobs run to completion.

Run: ``python benchmarks/bench_workloads.py [--replicas 100] [--jobs 1000] [--profile]``.

Each scenario runs in a fresh simulated cluster with its built-in controllers, in a virtual-time loop:
the figures are the virtual time it took (what a real cluster of these timings would take), the wall
and CPU time it cost, and the number of writes (resource versions) the controllers made. The machine's
speed varies, so compare runs side by side; the CPU seconds per virtual hour is the telling ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import time
from collections.abc import Callable, Coroutine
from typing import Any

from kopf_sim.controllers import ControllerManager, ControllerSettings
from kopf_sim.store.cluster import Cluster
from kopf_sim.store.watching import Change
from kopf_sim.timing import virtualtime
from kopf_sim.timing.clock import SeededUids

JsonDict = dict[str, Any]


def deployment(replicas: int, image: str) -> JsonDict:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "main", "image": image}]},
            },
        },
    }


def job(index: int) -> JsonDict:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": f"job-{index}", "namespace": "default"},
        "spec": {
            "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]}}
        },
    }


async def until(cluster: Cluster, condition: Callable[[Change], bool]) -> None:
    """Wait until a committed change makes the condition true."""
    reached = asyncio.Event()

    def observe(change: Change) -> None:
        if condition(change):
            reached.set()

    cluster.observers.append(observe)
    try:
        await reached.wait()
    finally:
        cluster.observers.remove(observe)


async def rollout(cluster: Cluster, replicas: int) -> None:
    deployments = cluster.resource("apps", "v1", "deployments")

    def complete(change: Change) -> bool:
        if change.key != deployments.storage_key:
            return False
        status = change.obj.get("status") or {}
        return bool(
            status.get("observedGeneration") == change.obj["metadata"]["generation"]
            and status.get("updatedReplicas") == status.get("availableReplicas") == replicas
            and status.get("replicas") == replicas
        )

    cluster.create(deployments, "default", deployment(replicas, "nginx:1"))
    await until(cluster, complete)
    cluster.patch(
        deployments,
        "default",
        "web",
        {"spec": {"template": {"spec": {"containers": [{"name": "main", "image": "nginx:2"}]}}}},
        "application/strategic-merge-patch+json",
    )
    await until(cluster, complete)


async def jobs(cluster: Cluster, count: int) -> None:
    resource = cluster.resource("batch", "v1", "jobs")
    completed: set[str] = set()

    def all_done(change: Change) -> bool:
        conditions = (change.obj.get("status") or {}).get("conditions") or []
        if change.key == resource.storage_key and any(c.get("type") == "Complete" for c in conditions):
            completed.add(change.obj["metadata"]["name"])
        return len(completed) == count

    waiting = asyncio.create_task(until(cluster, all_done))
    await asyncio.sleep(0)
    for index in range(count):
        cluster.create(resource, "default", job(index))
    await waiting


def measure(name: str, scenario: Callable[[Cluster], Coroutine[Any, Any, None]], profile: bool) -> None:
    async def main() -> tuple[float, int]:
        cluster = Cluster(clock=virtualtime.loop_clock(None), uids=SeededUids(0))
        manager = ControllerManager(cluster, ControllerSettings())
        manager.start()
        await scenario(cluster)
        writes = cluster.rv
        await manager.stop()
        assert not manager.failures, manager.failures
        return asyncio.get_running_loop().time(), writes

    profiler = cProfile.Profile() if profile else None
    wall, cpu = time.perf_counter(), time.process_time()
    if profiler is not None:
        profiler.enable()
    virtual, writes = virtualtime.run(main())
    if profiler is not None:
        profiler.disable()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(
        f"{name}: {virtual:,.0f} virtual s in {wall:.2f} s wall ({cpu:.2f} s CPU), {writes:,} writes, "
        f"{cpu / (virtual / 3600):.2f} CPU s per virtual hour"
    )
    if profiler is not None:
        pstats.Stats(profiler).sort_stats("tottime").print_stats(15)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replicas", type=int, default=100)
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--profile", action="store_true", help="show where the time goes")
    args = parser.parse_args()
    measure(
        f"a {args.replicas}-replica Deployment, created and updated",
        lambda cluster: rollout(cluster, args.replicas),
        args.profile,
    )
    measure(f"{args.jobs:,} Jobs to completion", lambda cluster: jobs(cluster, args.jobs), args.profile)


if __name__ == "__main__":
    main()
