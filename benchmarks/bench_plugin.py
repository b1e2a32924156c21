"""The cost of one sim-mode test with an operator: start it, create an object, handle it, delete it, stop it.

Run: ``python benchmarks/bench_plugin.py [--tests N] [--repeat R] [--profile] [--no-subprocess]``,
or ``python benchmarks/bench_plugin.py --instructions 10`` (needs valgrind).

Two measurements:

* in-process: the fixtures' machinery called directly (a fresh virtual-time loop, a fresh
  simulated cluster, a fresh operator loading ``examples/01-minimal/example.py`` each time;
  the garbage collector set as the plugin sets it for a session of kopf tests),
  one test and then N tests in a row, R times -- the plugin's own cost, without pytest's;
  per test: the mean of the best round and of all rounds, and the median & 90th percentile
  of the single tests;
* through pytest: a generated test file of N parametrized cases run by ``pytest`` in a
  subprocess, minus the same run with one case (pytest's start-up & collection), per test;
  the best of R runs.

The target is under 20 ms per test. The figures depend on how fast the machine is at the
moment (shared virtual machines vary by a third and more): a fixed pure-Python workload is
timed too (``calibration``), so that figures of different runs can be compared; and
``--instructions N`` counts the CPU instructions per test under valgrind, which does not
depend on the machine's speed at all (the way to compare two versions of the code). With
``--profile``, the in-process N tests run under cProfile, and the top functions (by own
time, and by packages) tell where the time goes.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import cProfile
import gc
import pathlib
import pstats
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from typing import Any

from pytest_kopf._running import TestLoop
from pytest_kopf.cluster import SimKopfCluster
from pytest_kopf.operator import KopfOperator
from pytest_kopf.plugin import tune_gc

ROOT = pathlib.Path(__file__).resolve().parent.parent
CRD = ROOT / "examples" / "crd.yaml"
EXAMPLE = ROOT / "examples" / "01-minimal" / "example.py"
TARGET_MS = 20.0


async def one_test(cluster: SimKopfCluster, operator: KopfOperator, name: str) -> None:
    """The design's shape of a test."""
    await cluster.apply(str(CRD))
    await operator.start(paths=[EXAMPLE])
    await cluster.create(
        {
            "apiVersion": "kopf.dev/v1",
            "kind": "KopfExample",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"field": "value"},
        }
    )
    await cluster.wait_for(
        "kopfexamples",
        name,
        namespace="default",
        condition=lambda o: "create_fn" in (o or {}).get("status", {}),
        timeout=60,
    )
    await cluster.delete("kopfexamples", name, namespace="default")
    await cluster.wait_gone("kopfexamples", name, namespace="default")
    await operator.stop()
    assert operator.exception is None


def run_in_process(index: int, tmp: pathlib.Path) -> None:
    """One test as the fixtures run it: loop, cluster, operator; the test; teardown in reverse."""
    test_loop = TestLoop(virtual=True)
    try:
        cluster = SimKopfCluster(loop=test_loop.loop, tmp_dir=lambda: tmp)
        test_loop.run(cluster.setup())
        operator = KopfOperator(cluster)
        try:
            test_loop.run(one_test(cluster, operator, f"ex{index}"))
        finally:
            test_loop.run(operator.stop())
            test_loop.run(cluster.teardown())
    finally:
        test_loop.close()


def bench_in_process(n: int, repeat: int, profile: bool) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        run_in_process(0, pathlib.Path(tmp))  # the first one: imports, caches
        first = time.perf_counter() - started
        print(f"in-process: the first test                {first * 1000:9.1f} ms (imports & warm-up included)")
        thresholds = tune_gc()  # the garbage collector as the plugin sets it for a session of kopf tests

        profiler = cProfile.Profile() if profile else None
        singles: list[float] = []
        rounds: list[float] = []
        index = 1
        speeds: list[float] = []  # the calibration workload just before each round
        for _ in range(1 if profile else repeat):
            speeds.append(calibrate(runs=1))
            if profiler is not None:
                profiler.enable()
            round_started = time.perf_counter()
            for _ in range(n):
                started = time.perf_counter()
                run_in_process(index, pathlib.Path(tmp))
                singles.append(time.perf_counter() - started)
                index += 1
            rounds.append(time.perf_counter() - round_started)
            if profiler is not None:
                profiler.disable()
        best, mean = min(rounds) / n * 1000, sum(rounds) / len(rounds) / n * 1000
        singles.sort()
        median, p90 = singles[len(singles) // 2] * 1000, singles[int(len(singles) * 0.9)] * 1000
        print(
            f"in-process: {n} tests x {len(rounds)} rounds: best round {min(rounds):7.3f} s = "
            f"{best:6.1f} ms per test ({'within' if best < TARGET_MS else 'over'} the target of {TARGET_MS:.0f} ms)"
        )
        pairs = zip(rounds, speeds, strict=True)
        print(
            "in-process: each round (ms per test) after the calibration (ms): "
            + ", ".join(f"{elapsed / n * 1000:.1f} after {speed:.0f}" for elapsed, speed in pairs)
        )
        print(
            f"in-process: per test over all rounds: mean {mean:6.1f} ms, median {median:6.1f} ms, "
            f"90th percentile {p90:6.1f} ms"
        )
        gc.unfreeze()
        gc.set_threshold(*thresholds)
        if profiler is not None:
            report_profile(profiler)
        return best


def calibrate(runs: int = 5) -> float:
    """Milliseconds of a fixed pure-Python workload (dicts, strings, calls), best of ``runs``: the machine's speed."""

    def work() -> int:
        total = 0
        for i in range(200_000):
            item = {"name": f"item-{i}", "suffix": str(i % 7)}
            total += len(item["name"]) + len(item["suffix"])
        return total

    timings = []
    for _ in range(runs):
        started = time.perf_counter()
        work()
        timings.append(time.perf_counter() - started)
    return min(timings) * 1000


def report_profile(profiler: cProfile.Profile) -> None:
    stats = pstats.Stats(profiler)
    by_package: collections.Counter[str] = collections.Counter()
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    for (filename, _, _), (_, _, own, _, _) in raw.items():
        by_package[_package(filename)] += own
    total = sum(by_package.values())
    print("\nwhere the time goes (own time by package, under cProfile):")
    for package, seconds in by_package.most_common(12):
        print(f"  {package:<40} {seconds:7.3f} s  {seconds / total:6.1%}")
    print("\nthe top functions by own time:")
    stats.sort_stats("tottime").print_stats(15)


def _package(filename: str) -> str:
    if "site-packages/" in filename:
        return filename.split("site-packages/")[1].split("/")[0]
    if str(ROOT) in filename:
        parts = pathlib.Path(filename).relative_to(ROOT).parts
        return "/".join(parts[:2]) if len(parts) > 2 else parts[0]
    if filename.startswith("<"):
        return "builtins"
    return "stdlib: " + pathlib.Path(filename).name


TEST_FILE = """
import pytest

@pytest.mark.parametrize("n", range({n}))
async def test_shape(kopf_cluster, kopf_operator, n):
    await kopf_cluster.apply({crd!r})
    await kopf_operator.start(paths=[{example!r}])
    await kopf_cluster.create({{"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
                               "metadata": {{"name": f"ex{{n}}", "namespace": "default"}},
                               "spec": {{"field": "value"}}}})
    await kopf_cluster.wait_for("kopfexamples", f"ex{{n}}", namespace="default",
                                condition=lambda o: "create_fn" in o.get("status", {{}}), timeout=60)
    await kopf_cluster.delete("kopfexamples", f"ex{{n}}", namespace="default")
    await kopf_cluster.wait_gone("kopfexamples", f"ex{{n}}", namespace="default")
    await kopf_operator.stop()
    assert kopf_operator.exception is None
"""


def run_pytest(n: int, directory: pathlib.Path) -> float:
    path = directory / f"test_bench_{n}.py"
    path.write_text(textwrap.dedent(TEST_FILE.format(n=n, crd=str(CRD), example=str(EXAMPLE))))
    (directory / "pytest.ini").write_text("[pytest]\n")
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:asyncio",
        "-p",
        "no:looptime_plugin",
        "-p",
        "no:hypothesispytest",
        "-p",
        "no:randomly",
        str(path),
    ]
    started = time.perf_counter()
    result = subprocess.run(command, cwd=directory, capture_output=True, text=True, timeout=600)
    elapsed = time.perf_counter() - started
    if result.returncode != 0:
        raise RuntimeError(f"pytest has failed:\n{result.stdout}\n{result.stderr}")
    return elapsed


def bench_pytest(n: int, repeat: int) -> float:
    ones, manys = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(repeat):
            ones.append(run_pytest(1, pathlib.Path(tmp)))
            manys.append(run_pytest(n, pathlib.Path(tmp)))
    one, many = min(ones), min(manys)
    per_test = (many - one) / (n - 1) * 1000
    print(f"pytest:     1 test (start-up & collection)   {one:9.3f} s (best of {repeat})")
    print(
        f"pytest:     {n} tests                    {many:9.3f} s  = {per_test:6.1f} ms per test beyond the first "
        f"({'within' if per_test < TARGET_MS else 'over'} the target of {TARGET_MS:.0f} ms)"
    )
    return per_test


def run_quietly(n: int) -> None:
    """Two tests for the warm-up, then ``n`` more: what the instruction count is taken of."""
    with tempfile.TemporaryDirectory() as tmp:
        for index in range(2):
            run_in_process(index, pathlib.Path(tmp))
        tune_gc()
        for index in range(2, n + 2):
            run_in_process(index, pathlib.Path(tmp))


def count_instructions(n: int) -> float:
    """Millions of CPU instructions per test (valgrind's callgrind): independent of the machine's speed now."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        raise SystemExit("--instructions needs valgrind (callgrind), which is not installed here.")

    def collected(tests: int) -> int:
        command = [
            valgrind,
            "--tool=callgrind",
            "--callgrind-out-file=/dev/null",
            sys.executable,
            __file__,
            "--run-quietly",
            str(tests),
        ]
        result = subprocess.run(command, capture_output=True, text=True, timeout=3600)
        found = re.search(r"Collected : (\d+)", result.stderr)
        if result.returncode != 0 or found is None:
            raise RuntimeError(f"valgrind has failed:\n{result.stderr[-2000:]}")
        return int(found.group(1))

    print(f"instructions: counting under valgrind (2 + {n} tests; a few minutes) ...", flush=True)
    baseline, total = collected(0), collected(n)
    per_test = (total - baseline) / n / 1e6
    print(f"instructions: {per_test:.1f} million per test (callgrind, {n} tests beyond the warm-up)")
    return per_test


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tests", type=int, default=100, help="how many tests (default: 100)")
    parser.add_argument("--repeat", type=int, default=3, help="how many rounds/runs of them (default: 3)")
    parser.add_argument("--profile", action="store_true", help="profile the in-process tests (cProfile, one round)")
    parser.add_argument("--no-subprocess", action="store_true", help="skip the run through pytest")
    parser.add_argument(
        "--instructions",
        type=int,
        default=0,
        metavar="N",
        help="count the CPU instructions of N tests under valgrind instead (e.g. 10)",
    )
    parser.add_argument("--run-quietly", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run_quietly is not None:
        run_quietly(args.run_quietly)
        return
    if args.instructions:
        count_instructions(args.instructions)
        return
    print(f"calibration: a fixed pure-Python workload    {calibrate():9.1f} ms (lower is a faster machine now)")
    bench_in_process(args.tests, args.repeat, args.profile)
    if not args.no_subprocess:
        bench_pytest(args.tests, args.repeat)
    print(f"calibration: the same workload again         {calibrate():9.1f} ms")


if __name__ == "__main__":
    asyncio.set_event_loop_policy(None)
    main()
