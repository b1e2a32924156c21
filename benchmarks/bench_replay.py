"""The cost of replaying a long recorded log into an operator under test, in virtual time.

Run: ``python benchmarks/bench_replay.py [--events 10000] [--objects 500] [--interval 0.5] [--operator-only]``

A log of ``--events`` watch events is recorded from a simulated cluster first: ``--objects``
KopfExamples, each created, changed (its ``spec.field``) and deleted, one change every
``--interval`` seconds of the recorded time, the objects in turns. Then, in a fresh virtual-time
loop with a fresh simulated cluster (as a sim-mode test has them):

* reading: ``read_log`` (parsing and checking every line);
* the replay alone: ``kopf_cluster.replay(log)`` at the recorded pace, no operator;
* the replay into an operator: the same, with a Kopf operator (create, update and delete
  handlers, its finalizer, its progress and diff-base annotations) handling every change.

Each phase is given in wall time and CPU time; the figures depend on the machine's speed at the
moment, so compare the phases of one run (ratios), not runs of different days.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import pathlib
import tempfile
import time
from collections.abc import Callable, Coroutine
from typing import Any

import kopf
from kopf_sim.manifests import read_manifest
from kopf_sim.recording.eventlog import ChangeRecorder
from kopf_sim.recording.replaying import read_log
from kopf_sim.store.cluster import Cluster
from kopf_sim.timing.clock import ManualClock, SeededUids
from pytest_kopf._running import TestLoop
from pytest_kopf.cluster import SimKopfCluster
from pytest_kopf.operator import KopfOperator
from pytest_kopf.plugin import tune_gc

ROOT = pathlib.Path(__file__).resolve().parent.parent
CRD = ROOT / "examples" / "crd.yaml"
MERGE = "application/merge-patch+json"


def record_log(path: pathlib.Path, *, events: int, objects: int, interval: float) -> float:
    """Write a log of ``events`` events; return the seconds of recorded time that it spans."""
    clock = ManualClock()
    cluster = Cluster(clock=clock, uids=SeededUids(1))
    cluster.apply_manifests(read_manifest(CRD))
    stream = io.StringIO()
    cluster.observers.append(ChangeRecorder(stream, clock=clock, source={"recorder": "bench_replay.py"}))
    examples = cluster.resource("kopf.dev", "v1", "kopfexamples")
    per_object = max(events // objects, 2)
    for round_ in range(per_object):
        for index in range(objects):
            name = f"ex{index}"
            if round_ == 0:
                cluster.create(
                    examples,
                    "default",
                    {
                        "apiVersion": "kopf.dev/v1",
                        "kind": "KopfExample",
                        "metadata": {"name": name},
                        "spec": {"field": "0"},
                    },
                )
            elif round_ == per_object - 1:
                cluster.delete(examples, "default", name)
            else:
                cluster.patch(examples, "default", name, {"spec": {"field": str(round_)}}, MERGE)
            clock.advance(interval)
    path.write_text(stream.getvalue())
    return (per_object * objects - 1) * interval


def operator_registry() -> kopf.OperatorRegistry:
    registry = kopf.OperatorRegistry()

    @kopf.on.create("kopfexamples", registry=registry)
    async def created(spec: Any, **_: Any) -> dict[str, Any]:
        return {"field": spec.get("field")}

    @kopf.on.update("kopfexamples", registry=registry)
    async def updated(new: Any, **_: Any) -> None:
        pass

    @kopf.on.delete("kopfexamples", registry=registry)
    async def deleted(**_: Any) -> None:
        pass

    return registry


def timed(what: str, fn: Callable[[], Any]) -> tuple[float, float, Any]:
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return wall, cpu, result


def in_a_test(log: pathlib.Path, tmp: pathlib.Path, *, with_operator: bool) -> tuple[float, int]:
    """A sim-mode test's loop and cluster; the replay (and the operator); the virtual seconds and the steps."""
    test_loop = TestLoop(virtual=True)
    try:
        cluster = SimKopfCluster(loop=test_loop.loop, tmp_dir=lambda: tmp)
        test_loop.run(cluster.setup())
        operator = KopfOperator(cluster)

        async def scenario() -> tuple[float, int]:
            await cluster.apply(CRD)
            if with_operator:
                await operator.start(registry=operator_registry())
            loop = asyncio.get_running_loop()
            start = loop.time()
            replay = await cluster.replay(log)
            await asyncio.sleep(60)  # the last deletion gets handled
            assert await cluster.list("kopfexamples") == []
            if with_operator:
                await operator.stop()
                assert operator.exception is None, operator.exception
            return loop.time() - start, len(replay.steps)

        try:
            return run(test_loop, scenario())
        finally:
            test_loop.run(operator.stop())
            test_loop.run(cluster.teardown())
    finally:
        test_loop.close()


def run(test_loop: TestLoop, coro: Coroutine[Any, Any, tuple[float, int]]) -> tuple[float, int]:
    return test_loop.run(coro)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--objects", type=int, default=500)
    parser.add_argument("--interval", type=float, default=0.5, help="recorded seconds between two changes")
    parser.add_argument("--operator-only", action="store_true", help="skip the replay without an operator")
    args = parser.parse_args()
    tune_gc()  # as the plugin does for a session of kopf tests
    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = pathlib.Path(tmp_dir)
        log = tmp / "log.jsonl"
        span = record_log(log, events=args.events, objects=args.objects, interval=args.interval)
        size = log.stat().st_size
        print(
            f"log: {args.events:,} events of {args.objects} objects over {span:,.0f} s of recorded time, "
            f"{size / 1e6:.1f} MB"
        )
        wall, cpu, parsed = timed("read", lambda: read_log(log))
        print(f"reading & checking: {wall:6.2f} s wall, {cpu:6.2f} s CPU ({len(parsed.events) / wall:,.0f} events/s)")
        phases = [("replay, no operator", False), ("replay into an operator", True)]
        for title, with_operator in phases[1:] if args.operator_only else phases:
            wall, cpu, (virtual, steps) = timed(title, lambda w=with_operator: in_a_test(log, tmp, with_operator=w))
            print(
                f"{title}: {wall:6.2f} s wall, {cpu:6.2f} s CPU for {steps:,} changes over {virtual:,.0f} virtual s "
                f"({steps / wall:,.0f} changes/s, {virtual / wall:,.0f}x real time)"
            )


if __name__ == "__main__":
    main()
