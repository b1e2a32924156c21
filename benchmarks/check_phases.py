"""Where a gallery check's CPU goes, by phase, and what one request of the operator costs (what to speed up).

Run: ``python benchmarks/bench_checks.py --phases --only stale_read_ok`` (see ``bench_checks.py``).

- Phases: ``check_operator`` with all the checks on one gallery operator, the CPU seconds spent in building the
  worlds (a fresh loop, cluster and operator each), the users' steps in the checked run and its fault-free runs,
  the planned runs, the verdicts, the closing of the worlds; each counted once where they nest (a planned run's
  world building is in "planned runs" and in "world building").
- Requests: one GET of a collection, made in a world's loop as the operator makes it (an aiohttp session over the
  in-memory connection: HTTP written and parsed on both sides, the simulator's middlewares) and as the test's own
  client makes it (a direct call into the simulator's API, no HTTP): the cost of the transport per request.
"""

from __future__ import annotations

import collections
import functools
import pathlib
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import aiohttp

from kopf_sim.transports.direct import DirectClient
from pytest_kopf.stateful import OperatorMachine, OperatorSpec, World

#: The phases measured: (class, method, label). Each is counted once where it nests in itself.
PHASES: list[tuple[type[Any], str, str]] = [
    (World, "__init__", "world building"),
    (World, "close", "world closing"),
    (OperatorMachine, "__init__", "example setup (its worlds built)"),
    (OperatorMachine, "perform", "steps (checked & fault-free runs)"),
    (OperatorMachine, "run_plans", "planned runs (fresh worlds)"),
    (OperatorMachine, "_verdict", "verdicts"),
]


@contextmanager
def phases_timed() -> Iterator[collections.Counter[str]]:
    """The CPU seconds spent in each phase meanwhile (the methods are wrapped, then restored)."""
    spent: collections.Counter[str] = collections.Counter()
    active: collections.Counter[str] = collections.Counter()
    originals = [(owner, name, owner.__dict__[name]) for owner, name, _ in PHASES]

    def timed(fn: Callable[..., Any], label: str) -> Callable[..., Any]:
        @functools.wraps(fn)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            if active[label]:
                return fn(*args, **kwargs)
            active[label] += 1
            started = time.process_time()
            try:
                return fn(*args, **kwargs)
            finally:
                active[label] -= 1
                spent[label] += time.process_time() - started

        return wrapped

    for owner, name, label in PHASES:
        setattr(owner, name, timed(owner.__dict__[name], label))
    try:
        yield spent
    finally:
        for owner, name, original in originals:
            setattr(owner, name, original)


def print_phases(run: Callable[[], dict[str, Any]]) -> None:
    """Run a check (``run`` returns :func:`bench_checks.speed_of`'s figures) and print its CPU by phase."""
    with phases_timed() as spent:
        figures = run()
    total = figures["cpu"]
    print(f"{figures['examples']} examples, {total:.2f} s CPU ({figures['examples'] / total:.2f}/s)")
    for label, seconds in spent.most_common():
        print(f"  {label:36} {seconds:7.2f} s CPU {100 * seconds / total:5.1f}%")


def print_request_costs(operator: pathlib.Path, crd: pathlib.Path, resource_path: str, count: int = 500) -> None:
    """The CPU per request over the operator's transport and over the test's direct calls, in one world."""
    world = World(OperatorSpec(paths=(str(operator),), manifests=(crd,)))
    try:
        connection = world.cluster.connection

        async def over_http() -> float:
            async with aiohttp.ClientSession(connector=connection.connector_factory()) as session:
                started = time.process_time()
                for _ in range(count):
                    async with session.get(f"{connection.base_url}{resource_path}") as response:
                        await response.read()
                return time.process_time() - started

        async def direct() -> float:
            client = DirectClient(world.cluster.sim.app)
            started = time.process_time()
            for _ in range(count):
                await (await client.request("GET", resource_path)).close()
            return time.process_time() - started

        http, plain = world.run(over_http()), world.run(direct())
    finally:
        world.close()
    print(
        f"GET {resource_path}: {http / count * 1000:.3f} ms of CPU per request over the in-memory HTTP transport "
        f"(the operator's), {plain / count * 1000:.3f} ms as a direct call (the test's client): {http / plain:.1f}x"
    )
