"""The per-test cost of virtual wall clocks: the plugin's own patching, and freezegun's, side by side.

Run: ``python benchmarks/bench_clocks.py [--tests 200]``.

With the modules of a typical session loaded (kopf, kopf_sim, pytest_kopf, pytest, aiohttp, hypothesis), it
times, per test:

- ``pytest_kopf._clocks``: :func:`virtual_clocks` entered and exited, and a test module's names swapped
  and restored (:func:`virtualize_module`), as the plugin does for every sim-mode test;
- ``freezegun.freeze_time(...).start()`` and ``.stop()``: its start scans every loaded module for
  references to the clock functions and classes (and its stop undoes it);

and the cost of one ``time.time()`` / ``datetime.now()`` call under each (and unpatched), in a virtual loop.
Then it loads the official ``kubernetes`` client (37.x builds its models lazily, on first access) and starts
freezegun once more: its scan of the modules touches the lazy models, which are then built with freezegun's fake
``datetime`` class, and pydantic refuses it -- the start fails (the figure printed is the error).
"""

from __future__ import annotations

import argparse
import datetime
import sys
import time
import types

import aiohttp  # noqa: F401 - loaded as in a test session
import freezegun
import hypothesis  # noqa: F401
import pytest  # noqa: F401

import kopf  # noqa: F401
import pytest_kopf.operator  # noqa: F401
from kopf_sim.timing import virtualtime
from pytest_kopf._clocks import virtual_clocks, virtualize_module

TEST_MODULE = types.ModuleType("test_something")
exec(
    "import datetime, time\nfrom datetime import datetime as dt, timezone\nfrom time import sleep", TEST_MODULE.__dict__
)


def per_test_ours(n: int) -> float:
    started = time.perf_counter()
    for _ in range(n):
        with virtual_clocks():
            undo = virtualize_module(TEST_MODULE)
            undo()
    return (time.perf_counter() - started) / n


def per_test_freezegun(n: int) -> float:
    started = time.perf_counter()
    for _ in range(n):
        freezer = freezegun.freeze_time(datetime.datetime(2026, 1, 1))
        freezer.start()
        freezer.stop()
    return (time.perf_counter() - started) / n


async def calls(n: int) -> tuple[float, float]:
    started = time.perf_counter()
    for _ in range(n):
        time.time()
    per_time = (time.perf_counter() - started) / n
    now = TEST_MODULE.__dict__["datetime"].datetime.now
    started = time.perf_counter()
    for _ in range(n):
        now(datetime.UTC)
    return per_time, (time.perf_counter() - started) / n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tests", type=int, default=200)
    args = parser.parse_args()
    print(f"{len(sys.modules)} modules loaded")
    per_test_ours(10), per_test_freezegun(2)  # warm-up
    ours = per_test_ours(args.tests)
    theirs = per_test_freezegun(max(1, args.tests // 10))
    print(
        f"per test: pytest_kopf._clocks {ours * 1e6:8.1f} µs;  freezegun start+stop {theirs * 1e6:8.1f} µs "
        f"({theirs / ours:,.0f} times as much)"
    )
    plain = virtualtime.run(calls(100_000))
    with virtual_clocks():
        undo = virtualize_module(TEST_MODULE)
        virtual = virtualtime.run(calls(100_000))
        undo()
    freezer = freezegun.freeze_time(datetime.datetime(2026, 1, 1))
    freezer.start()
    try:
        frozen = virtualtime.run(calls(100_000))
    finally:
        freezer.stop()
    for name, (per_time, per_now) in (("real", plain), ("pytest_kopf._clocks", virtual), ("freezegun", frozen)):
        if per_time == 0:
            print(f"per call, {name:>18}: not measurable (it freezes time.perf_counter() too)")
        else:
            print(
                f"per call, {name:>18}: time.time() {per_time * 1e9:7.0f} ns, datetime.now(UTC) {per_now * 1e9:7.0f} ns"
            )

    import kubernetes  # noqa: F401 - as an operator's test session has it

    print(f"with the kubernetes client loaded ({len(sys.modules)} modules):")
    print(f"  pytest_kopf._clocks per test {per_test_ours(args.tests) * 1e6:8.1f} µs")
    try:
        print(f"  freezegun start+stop per test {per_test_freezegun(1) * 1e6:8.1f} µs")
    except Exception as exc:
        print(f"  freezegun start fails: {type(exc).__name__}: {str(exc).splitlines()[0]}")


if __name__ == "__main__":
    main()
