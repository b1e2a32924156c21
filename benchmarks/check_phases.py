"""Where a gallery check's CPU goes, by phase, and what one request of the operator costs (what to speed up).

Run: ``python benchmarks/bench_checks.py --phases --only stale_read_ok`` (see ``bench_checks.py``).

- Phases: ``check_operator`` with all the checks on one gallery operator, the CPU seconds spent in building the
  worlds (a fresh loop, cluster and operator each), the users' steps in the checked run and its fault-free runs,
  the planned runs, the verdicts, the closing of the worlds; each counted once where they nest (a planned run's
  world building is in "planned runs" and in "world building").
- Requests: the HTTP requests per example (those that reach the simulator's aiohttp app); one GET of a collection,
  made in a world's loop as the operator makes it (an aiohttp session over the in-memory connection: HTTP written
  and parsed on both sides, the simulator's middlewares), and the ceilings of an in-process transport (see
  ``transport_costs.py``): the CPU per request each way, and the share of the check's CPU it would save at most.
"""

from __future__ import annotations

import collections
import functools
import gc
import pathlib
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import transport_costs
from aiohttp import web

from pytest_kopf._tracing import Trace
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


@contextmanager
def requests_counted() -> Iterator[collections.Counter[str]]:
    """The requests that reach a simulator's aiohttp app meanwhile (over the in-memory HTTP transport), and the watch
    events delivered in the worlds (to the operator's watches, mostly)."""
    counted: collections.Counter[str] = collections.Counter()
    original, delivered = web.Application._handle, Trace._delivery

    async def handle(self: web.Application, request: web.Request) -> web.StreamResponse:
        counted["requests"] += 1
        return await original(self, request)

    def delivery(self: Trace, rtype: Any, event: Any) -> None:
        counted["events"] += 1
        delivered(self, rtype, event)

    web.Application._handle = handle  # type: ignore[method-assign]
    Trace._delivery = delivery  # type: ignore[method-assign]
    try:
        yield counted
    finally:
        web.Application._handle = original  # type: ignore[method-assign]
        Trace._delivery = delivered  # type: ignore[method-assign]


def print_phases(run: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """Run a check (``run`` returns :func:`bench_checks.speed_of`'s figures), print its CPU by phase; the figures
    with the HTTP requests made (``requests``)."""
    with phases_timed() as spent, requests_counted() as counted:
        figures = run()
    total = figures["cpu"]
    examples = figures["examples"]
    print(
        f"{examples} examples, {total:.2f} s CPU ({examples / total:.2f}/s); "
        f"{counted['requests'] / examples:.0f} HTTP requests and {counted['events'] / examples:.0f} watch events "
        "per example"
    )
    for label, seconds in spent.most_common():
        print(f"  {label:36} {seconds:7.2f} s CPU {100 * seconds / total:5.1f}%")
    return {**figures, "requests": counted["requests"], "events": counted["events"]}


def print_request_costs(
    operator: pathlib.Path, crd: pathlib.Path, resource_path: str, figures: dict[str, Any], count: int = 500
) -> None:
    """The CPU per request over the operator's transport and the ceilings of an in-process one (see
    :mod:`transport_costs`); with ``figures`` (of :func:`print_phases`), the share of the check's CPU each saves."""
    world = World(OperatorSpec(paths=(str(operator),), manifests=(crd,)))
    gc.collect()
    gc.disable()  # a collection of the heap that the check has left would land in one way's turn
    try:
        costs = transport_costs.request_costs(world, resource_path, count)
        events = transport_costs.event_costs(world, 2 * count)
    finally:
        gc.enable()
        world.close()
    for what, per_example, measured in (
        (f"GET {resource_path}, per request", figures["requests"], costs),
        ("a watch event delivered live", figures["events"], events),
    ):
        http = measured["over HTTP"]
        print(f"{what}, ms of CPU (and the share of the check's CPU saved, at its count):")
        for label, seconds in measured.items():
            saved = (http - seconds) * per_example / figures["cpu"]
            print(f"  {label:12} {seconds * 1000:6.3f} ms" + (f"  (-{100 * saved:4.1f}%)" if seconds != http else ""))
