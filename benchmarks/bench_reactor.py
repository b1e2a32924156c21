"""The reactor in-process: events per second through kopf on the in-memory simulator, memory per object by
its kind, and the floor under both (JSON and one round trip through the transport, per object).

Run: ``python benchmarks/bench_reactor.py [--objects 1000] [--updates 3] [--repeat 3]``.

The in-process companion of ``compare_peer.py`` (which runs the operators as processes against a served
simulator): a fresh virtual-time loop, simulated cluster and operator per round, as a test under
``--kopf-sim`` has them, so no sockets, no other process and no real waiting. The operator has a creation
handler and an update handler on a spec field, each returning a value (a patch of the status). Per round:

- N objects exist before the operator starts, and all are handled (the creation handler; the events of the
  operator's own patches);
- then every object's field is changed U times, one change at a time for all objects, each handled;
- the events that reach the operator are counted at the simulator (every write to an object is one watch
  event of the operator's), divided by the CPU seconds of the phase;
- the memory that the process holds per object when 30% of the objects are handled (the peak: all of them are
  in flight at once; tracemalloc, from the operator's start), by its kind: the
  operator's bodies (decoded JSON), its per-object memories and workers, its watch stream, the rest of
  kopf, and apart from those the simulator's own store;
- the floor: ``json.loads`` + ``json.dumps`` of such an object, and one GET of it through the in-memory
  transport (aiohttp's client, the simulator's app, the JSON both ways).

A fixed pure-Python workload (``calibration``) is timed before each round: the machine's speed varies.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import gc
import json
import pathlib
import sys
import time
import tracemalloc
from collections.abc import Callable, Iterator
from typing import Any

import kopf
from kopf_sim.store.watching import Change
from pytest_kopf.cluster import SimKopfCluster
from pytest_kopf.operator import KopfOperator

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))  # (run as a script, or imported)

from calibration import calibrate
from inprocess import run_in_sim

ROOT = pathlib.Path(__file__).resolve().parent.parent
CRD = ROOT / "examples" / "crd.yaml"
KOPF = str(ROOT / "kopf")
KOPF_SIM = str(ROOT / "kopf_sim")
TRACED_FRAMES = 12  # enough to reach a kopf frame from aiohttp's or json's allocations
KEY = ("kopf.dev", "kopfexamples")  # the simulator's storage key of the objects

HTTP_BUFFERS = "the HTTP client's buffers & responses (aiohttp)"
# The kinds of the memory kept per object: the first kopf file (innermost first) of an allocation decides.
KINDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("bodies (decoded events & their views)", ("/_cogs/clients/", "/_cogs/structs/bodies.py")),
    ("diff-bases & progress (annotations)", ("/_cogs/configs/diffbase.py", "/_cogs/configs/progress.py")),
    ("per-object memories", ("/_core/reactor/memories.py", "/_core/engines/daemons.py")),
    ("workers & their queues", ("/_core/reactor/queueing.py",)),
    ("processing & handlers' state", ("/_core/reactor/processing.py", "/_core/actions/", "/_cogs/structs/")),
)


def registry() -> kopf.OperatorRegistry:
    reg = kopf.OperatorRegistry()

    @kopf.on.create("kopfexamples", registry=reg)
    def created(spec: Any, **_: Any) -> dict[str, Any]:
        return {"seen": spec.get("field")}

    @kopf.on.update("kopfexamples", field="spec.field", id="updated", registry=reg)
    def updated(new: Any, **_: Any) -> Any:
        return new

    return reg


def body(i: int, field: str = "v0") -> dict[str, Any]:
    return {
        "apiVersion": "kopf.dev/v1",
        "kind": "KopfExample",
        "metadata": {"name": f"ex{i:05d}", "labels": {"app": "bench", "index": str(i)}},
        "spec": {"field": field, "items": ["a", "b", "c"], "duration": "1m"},
    }


class Counting:
    """Counts the changes the simulator records for the objects (one watch event each for the operator)."""

    def __init__(self) -> None:
        self.changes = 0

    def __call__(self, change: Change) -> None:
        if change.key == KEY:
            self.changes += 1


async def until(check: Callable[[], bool], what: str, timeout: float = 24 * 3600) -> None:
    """Poll in virtual time (free) until the check holds."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not check():
        if asyncio.get_running_loop().time() > deadline:
            raise SystemExit(f"Not reached in {timeout} virtual seconds: {what}")
        await asyncio.sleep(0.05)


def statuses(cluster: SimKopfCluster) -> Iterator[dict[str, Any]]:
    for obj in cluster.sim.store.objects(KEY):
        yield obj.get("status") or {}


def kind_of(trace: tracemalloc.Trace) -> str | None:
    """The kind of an allocation, or None for the simulator's own (kept apart)."""
    in_aiohttp = "/aiohttp/" in trace.traceback[0].filename  # the innermost frame
    for frame in trace.traceback:  # innermost first
        name = frame.filename
        if name.startswith(KOPF_SIM):
            return None
        if name.startswith(KOPF):
            if in_aiohttp:
                return HTTP_BUFFERS
            for kind, parts in KINDS:
                if any(part in name for part in parts):
                    return kind
            return "the rest of kopf"
    return "outside kopf (the loop, ...)"


async def scenario(
    cluster: SimKopfCluster, operator: KopfOperator, objects: int, updates: int, memory: float | None
) -> dict[str, Any]:
    settings = kopf.OperatorSettings()
    settings.peering.standalone = True
    await cluster.apply(str(CRD))
    for i in range(objects):  # pre-existing objects, as in compare_peer.py: all of them in flight at once
        await cluster.create(body(i))
    figures: dict[str, Any] = {}
    counting = Counting()
    cluster.sim.store.observers.append(counting)
    cpu = time.process_time()
    if memory is not None:
        tracemalloc.start(TRACED_FRAMES)
    await operator.start(registry=registry(), settings=settings)
    if memory is not None:
        share = memory
        await until(lambda: sum("created" in s for s in statuses(cluster)) >= objects * share, "the snapshot")
        gc.collect()
        snapshot = tracemalloc.take_snapshot()
        tracemalloc.stop()
        kinds: dict[str | None, int] = collections.Counter()
        for trace in snapshot.traces:
            kinds[kind_of(trace)] += trace.size
        figures["memory"] = kinds
    await until(lambda: sum("created" in s for s in statuses(cluster)) == objects, "all created")
    figures["create"] = (counting.changes, time.process_time() - cpu)

    counting.changes = 0
    cpu = time.process_time()
    for round_ in range(1, updates + 1):
        for i in range(objects):
            await cluster.patch("kopfexamples", f"ex{i:05d}", {"spec": {"field": f"v{round_}"}})

        def all_updated(round_: int = round_) -> bool:
            return sum(1 for s in statuses(cluster) if s.get("updated") == f"v{round_}") >= objects

        await until(all_updated, f"update round {round_}")
    figures["update"] = (counting.changes, time.process_time() - cpu)

    # The floor: one GET through the in-memory transport per object, and the JSON both ways.
    cpu = time.process_time()
    for i in range(objects):
        await cluster.get("kopfexamples", f"ex{i:05d}")
    figures["get"] = (time.process_time() - cpu) / objects
    sample = await cluster.get("kopfexamples", "ex00000")
    text = json.dumps(sample)
    cpu = time.process_time()
    for _ in range(objects):
        json.dumps(json.loads(text))
    figures["json"] = (time.process_time() - cpu) / objects
    figures["size"] = len(text)
    await operator.stop(timeout=120)
    if operator.exception is not None:
        raise operator.exception
    return figures


def one_round(objects: int, updates: int, *, memory: float | None = None) -> None:
    try:
        figures = run_in_sim(lambda cluster, operator: scenario(cluster, operator, objects, updates, memory))
    finally:
        tracemalloc.stop()
    created, create_cpu = figures["create"]
    changed, update_cpu = figures["update"]
    print(
        f"  creation: {objects:,} objects, {created:,} events in {create_cpu:.2f} s CPU: "
        f"{objects / create_cpu:,.0f} objects/s, {created / create_cpu:,.0f} events/s"
    )
    if updates:
        print(
            f"  updates: {objects * updates:,} changes, {changed:,} events in {update_cpu:.2f} s CPU: "
            f"{objects * updates / update_cpu:,.0f} changes/s, {changed / update_cpu:,.0f} events/s"
        )
    print(
        f"  floor per object ({figures['size']:,} bytes of JSON): json.loads+dumps {figures['json'] * 1e6:.1f} µs; "
        f"one GET through the in-memory transport {figures['get'] * 1e6:.0f} µs"
    )
    if memory is not None:
        kinds = figures["memory"]
        print(f"  memory per object with {memory:.0%} of the {objects:,} objects handled (tracemalloc):")
        total = 0
        names = [kind for kind, _ in KINDS] + [HTTP_BUFFERS, "the rest of kopf", "outside kopf (the loop, ...)"]
        for kind in sorted(names, key=lambda name: -kinds.get(name, 0)):
            total += kinds.get(kind, 0)
            print(f"    {kind:<48} {kinds.get(kind, 0) / objects:8,.0f} bytes")
        print(f"    {'all of the operator':<48} {total / objects:8,.0f} bytes")
        print(f"    {'(apart: the simulator, its store & history)':<48} {kinds.get(None, 0) / objects:8,.0f} bytes")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--objects", type=int, default=1000)
    parser.add_argument("--updates", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--memory-at",
        type=float,
        default=0.3,
        help="The share of the objects handled when the memory is measured (0.3: the peak); 0: no memory round.",
    )
    args = parser.parse_args()
    if args.objects < 1 or args.updates < 0 or args.repeat < 1:
        parser.error("--objects and --repeat must be 1 or more, --updates 0 or more.")
    one_round(10, 1)  # warm-up: imports, caches
    for _ in range(args.repeat):
        print(f"calibration {calibrate():.0f} ms:")
        one_round(args.objects, args.updates)
    if args.memory_at > 0:
        print(f"calibration {calibrate():.0f} ms (the memory round; its times are the tracer's, not the operator's):")
        one_round(args.objects, 0, memory=args.memory_at)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
