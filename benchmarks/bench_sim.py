"""Throughput of the simulated apiserver, in-process.

Run: ``python benchmarks/bench_sim.py [--objects N]``. Prints one line per measurement.
Two layers are measured: the store's API (what the pytest plugin's fixtures call) and HTTP
over the in-memory transport (what an operator's aiohttp client goes through).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import Callable
from typing import Any

from kopf_sim.http.app import build_app
from kopf_sim.store.cluster import Cluster
from kopf_sim.timing.clock import ManualClock, SeededUids
from kopf_sim.transports.inmemory import InMemoryServer

MERGE = "application/merge-patch+json"


def configmap(index: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": f"cm-{index:05d}", "labels": {"app": "bench", "shard": str(index % 10)}},
        "data": {"index": str(index), "payload": "x" * 64},
    }


def rate(label: str, count: int, seconds: float, unit: str = "ops/s") -> None:
    print(f"{label:<48} {count:>7} in {seconds:7.3f} s  = {count / seconds:>10,.0f} {unit}")


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def bench_store(n: int) -> None:
    cluster = Cluster(clock=ManualClock(), uids=SeededUids(0))
    rtype = cluster.resource("", "v1", "configmaps")
    rate("store: create", n, timed(lambda: [cluster.create(rtype, "default", configmap(i)) for i in range(n)]))
    rate("store: get", n, timed(lambda: [cluster.get(rtype, "default", f"cm-{i:05d}") for i in range(n)]))
    rate(
        "store: merge patch",
        n,
        timed(
            lambda: [
                cluster.patch(rtype, "default", f"cm-{i:05d}", {"data": {"index": f"{i}!"}}, MERGE) for i in range(n)
            ]
        ),
    )
    runs = 10
    seconds = timed(lambda: [cluster.list(rtype, "default") for _ in range(runs)])
    rate(f"store: list of {n} objects", runs, seconds, "lists/s")
    seconds = timed(lambda: [json.dumps(cluster.list(rtype, "default")) for _ in range(runs)])
    rate(f"store: list of {n} objects, JSON-encoded", runs, seconds, "lists/s")


async def bench_http(n: int, watchers: int) -> None:
    cluster = Cluster(clock=ManualClock(), uids=SeededUids(0))
    url = "/api/v1/namespaces/default/configmaps"
    async with InMemoryServer(build_app(cluster)) as server, server.session() as session:
        start = time.perf_counter()
        for i in range(n):
            async with session.post(url, json=configmap(i)) as response:
                assert response.status == 201
        rate("http (in-memory): create", n, time.perf_counter() - start)
        start = time.perf_counter()
        for i in range(n):
            async with session.get(f"{url}/cm-{i:05d}") as response:
                await response.read()
        rate("http (in-memory): get", n, time.perf_counter() - start)
        start = time.perf_counter()
        headers = {"Content-Type": MERGE}
        for i in range(n):
            async with session.patch(f"{url}/cm-{i:05d}", json={"data": {"index": "p"}}, headers=headers) as response:
                await response.read()
        rate("http (in-memory): merge patch", n, time.perf_counter() - start)
        runs = 5
        start = time.perf_counter()
        for _ in range(runs):
            async with session.get(url) as response:
                assert len((await response.json())["items"]) == n
        rate(f"http (in-memory): list of {n} objects", runs, time.perf_counter() - start, "lists/s")

        # Fan-out: `watchers` watch streams, each must receive every one of n changes.
        received = [0] * watchers
        rv = str(cluster.rv)
        done = asyncio.Event()

        async def watch(index: int) -> None:
            params = {"watch": "true", "resourceVersion": rv, "timeoutSeconds": "3600"}
            async with session.get(url, params=params) as response:
                async for _ in response.content:
                    received[index] += 1
                    if received[index] == n and all(count == n for count in received):
                        done.set()
                    if received[index] == n:
                        return

        tasks = [asyncio.create_task(watch(i)) for i in range(watchers)]
        await asyncio.sleep(0.05)
        rtype = cluster.resource("", "v1", "configmaps")
        start = time.perf_counter()
        for i in range(n):
            cluster.patch(rtype, "default", f"cm-{i:05d}", {"data": {"index": "w"}}, MERGE)
            if i % 100 == 0:
                await asyncio.sleep(0)
        await asyncio.wait_for(done.wait(), 300)
        seconds = time.perf_counter() - start
        await asyncio.gather(*tasks)
        rate(f"watch fan-out: {n} changes to {watchers} watchers", n * watchers, seconds, "events/s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--objects", type=int, default=10_000)
    parser.add_argument("--watchers", type=int, default=10)
    args = parser.parse_args()
    bench_store(args.objects)
    asyncio.run(bench_http(args.objects, args.watchers))


if __name__ == "__main__":
    main()
