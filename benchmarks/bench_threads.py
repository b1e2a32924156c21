"""Sync operator code in virtual time: a day of sync daemons, sleeps, timers and handlers on ten objects.

Run: ``python benchmarks/bench_threads.py [--hours 24] [--objects 10] [--repeat 3]``.

The scenario of ``tests/plugin/test_sync_code_in_virtual_time.py`` in-process, without pytest: a fresh
virtual-time loop, simulated cluster and operator, with

- the documented sync daemon: ``while not stopped: stopped.wait(10)``;
- a sync daemon with ``time.sleep(60)``;
- a sync timer every hour;
- a sync creation handler that sleeps 30 s;

on N objects for H virtual hours. It prints the wall and CPU time of the virtual hours (and of the whole
run: setup, the day, the deletion & the operator's stop), the threads' wake-ups per second, the same for
the same waits with no operator (``wait_in_thread()`` in bare executor jobs: the wake-ups' own cost), and
a fixed pure-Python workload (``calibration``) timed before each round, since the machine's speed varies.
Every wake-up of a thread is a real switch of threads (the thread runs the operator's code between
two waits), so the cost is per wake-up: the threads due at one moment wake each other through pipes, one
switch per wake-up, on one CPU (a bare ring of 10 Python threads passing a pipe's byte on costs ~5 µs of
CPU per switch on one CPU of these machines, 10-13 µs across two; ``--any-cpu`` runs each day both ways);
the loop's decisions and the operator's own async work come on top.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import pathlib
import sys
import threading
import time
from typing import Any

import kopf
from kopf_sim.timing import virtualtime
from pytest_kopf.cluster import SimKopfCluster
from pytest_kopf.operator import KopfOperator

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))  # (run as a script, or imported)

from calibration import calibrate
from inprocess import run_in_sim

ROOT = pathlib.Path(__file__).resolve().parent.parent
CRD = ROOT / "examples" / "crd.yaml"


def registry_of(counts: dict[str, int]) -> kopf.OperatorRegistry:
    registry = kopf.OperatorRegistry()
    lock = threading.Lock()

    def count(key: str) -> None:
        with lock:
            counts[key] = counts.get(key, 0) + 1

    @kopf.daemon("kopfexamples", registry=registry)
    def waiting(stopped: Any, **_: Any) -> None:
        while not stopped:
            count("stopped.wait(10)")
            stopped.wait(10)

    @kopf.daemon("kopfexamples", registry=registry, cancellation_timeout=90)
    def sleeping(stopped: Any, **_: Any) -> None:
        while not stopped:
            count("time.sleep(60)")
            time.sleep(60)

    @kopf.timer("kopfexamples", registry=registry, interval=3600)
    def hourly(**_: Any) -> None:
        count("timer")

    @kopf.on.create("kopfexamples", registry=registry)
    def create_fn(**_: Any) -> None:
        time.sleep(30)
        count("handler")

    return registry


async def scenario(
    cluster: SimKopfCluster, operator: KopfOperator, objects: int, hours: float, counts: dict[str, int]
) -> tuple[float, float]:
    settings = kopf.OperatorSettings()
    settings.peering.standalone = True
    settings.execution.max_workers = 3 * objects
    await cluster.apply(str(CRD))
    await operator.start(registry=registry_of(counts), settings=settings)
    for i in range(objects):
        await cluster.create({"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "metadata": {"name": f"ex{i}"}})
    wall, cpu = time.perf_counter(), time.process_time()
    await asyncio.sleep(hours * 3600)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    await cluster.delete("kopfexamples", "ex0")
    await cluster.wait_gone("kopfexamples", "ex0", timeout=120)
    await operator.stop(timeout=120)
    assert operator.exception is None
    return wall, cpu


def one_round(objects: int, hours: float, *, one_cpu: bool = True) -> None:
    counts: dict[str, int] = {}
    wall, cpu = time.perf_counter(), time.process_time()
    day_wall, day_cpu = run_in_sim(
        lambda cluster, operator: scenario(cluster, operator, objects, hours, counts), one_cpu=one_cpu
    )
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    wakes = counts.get("stopped.wait(10)", 0) + counts.get("time.sleep(60)", 0) + counts.get("timer", 0)
    print(
        f"  {'' if one_cpu else '(threads on any CPU) '}{hours:g} virtual hours: "
        f"{day_wall:6.2f} s wall, {day_cpu:6.2f} s CPU "
        f"({wakes / day_wall:,.0f} thread wake-ups per second); the whole test: {wall:6.2f} s wall, "
        f"{cpu:6.2f} s CPU; counts: {dict(sorted(counts.items()))}"
    )


def bare_round(objects: int, hours: float) -> None:
    """The same waits with no operator and no cluster: the cost of the threads' wake-ups alone."""
    steps = round(hours * 3600)

    async def day() -> tuple[float, float]:
        loop = asyncio.get_running_loop()
        assert isinstance(loop, virtualtime.VirtualTimeLoop)
        executor = concurrent.futures.ThreadPoolExecutor(2 * objects)

        def waits(period: int) -> None:
            for _ in range(steps // period):
                loop.wait_in_thread(timeout=period)

        wall, cpu = time.perf_counter(), time.process_time()
        try:
            await asyncio.gather(
                *(loop.run_in_executor(executor, waits, period) for period in (10, 60) for _ in range(objects))
            )
        finally:
            executor.shutdown()
        return time.perf_counter() - wall, time.process_time() - cpu

    wall, cpu = virtualtime.run(day())
    wakes = objects * (steps // 10 + steps // 60)
    print(f"  the same waits alone ({wakes:,} wake-ups, no operator): {wall:6.2f} s wall, {cpu:6.2f} s CPU")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hours", type=float, default=24)
    parser.add_argument("--objects", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--any-cpu", action="store_true", help="Also run each day with the threads free to run on any CPU, to compare."
    )
    args = parser.parse_args()
    one_round(1, 0.1)  # warm-up: imports, caches
    for _ in range(args.repeat):
        print(f"calibration {calibrate():.0f} ms; {args.objects} objects:")
        one_round(args.objects, args.hours)
        if args.any_cpu:
            one_round(args.objects, args.hours, one_cpu=False)
        bare_round(args.objects, args.hours)


if __name__ == "__main__":
    main()
