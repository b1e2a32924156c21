"""The cost of the checks (pytest_kopf.checks): generated examples against the minimal example operator.

Run: ``python benchmarks/bench_checks.py [--examples 200] [--steps 30]``: ``check_operator`` with the
``convergence`` check against ``examples/01-minimal`` -- every example a fresh virtual-time loop, a fresh
simulated cluster with the CRD, a fresh operator, then up to ``--steps`` generated actions and the check.
The target: 200 examples of 30 steps under 60 s of wall time on a 2-core machine. Printed: wall and CPU
seconds, examples and steps run, milliseconds per step; and a fixed pure-Python workload (calibration)
before and after, as the machines' speed varies (shared virtual machines vary by 2x from minute to minute).

``--long``: the robustness run (slow: tens of minutes): the representative operator and the correct twins of
the gallery (``tests/checks/gallery``), each with all the checks in one machine (every fault kind in the same
examples: API errors, stale reads, withheld events, crashes, re-deliveries), ``--long-examples`` (500)
examples each; any failure is printed with its shrunk reproduction and fails the run.

``--gallery``: the checks with their fault plans on the gallery: for the correct operators (the twins and the
representative one), all the checks with ``--gallery-examples`` (20) examples each: examples per second (of
wall and of CPU time), the plans derived, pruned and run per example; for each planted bug, all the checks
with the default budget under 10 seeds: the median time (wall and CPU) and examples to find it (before its
shrinking), and the steps it is shrunk to. The machine is shared: the CPU seconds are the figures to compare.
The target: 20 examples per second of CPU on the gallery's operators.

``--phases [--only OPERATOR]``: where one gallery operator's check spends its CPU (building the worlds, the
steps, the planned runs, the verdicts; see ``check_phases.py``), and the CPU of one request of the operator (over
the in-memory HTTP transport) beside the same request as a direct call.

``--gallery --against CHECKOUT``: the speed part side by side with another checkout of the project (e.g. a
``git worktree`` of main): each operator in a fresh process of each tree in turn (this script, with the tree's
packages first on ``PYTHONPATH``), the same examples; the CPU seconds of both and their ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import time
import traceback
from typing import Any

import hypothesis

from pytest_kopf.checks import check_operator
from pytest_kopf.errors import OperatorCheckFailed

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import check_phases

ROOT = pathlib.Path(__file__).resolve().parent.parent
GALLERY = ROOT / "tests" / "checks" / "gallery"
#: Where the gadgets' fields must be found, for the operators that declare it (as the gallery's tests do).
CONSISTENCY = {"consistency": {"spec.size": "configmaps/{name}-data.data.size"}}
TARGET_SECONDS = 60.0
#: Examples per second of CPU that the checks aim at on the gallery's operators.
TARGET_RATE = 20.0


def calibration() -> float:
    """A fixed pure-Python workload (seconds): lower is a faster machine at the moment."""
    started = time.perf_counter()
    total = 0
    for i in range(2_000_000):
        total += i % 7
    return time.perf_counter() - started


def speed(examples: int, steps: int) -> None:
    print(f"calibration before: {calibration() * 1000:.1f} ms")
    wall, cpu = time.perf_counter(), time.process_time()
    report = check_operator(
        paths=[ROOT / "examples" / "01-minimal" / "example.py"],
        manifests=[ROOT / "examples" / "crd.yaml"],
        resources=["kopfexamples.kopf.dev"],
        checks=["convergence"],
        max_examples=examples,
        max_steps=steps,
    )
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(f"calibration after:  {calibration() * 1000:.1f} ms")
    print(
        f"check_operator(convergence), minimal operator: {report.examples} examples, {report.steps} steps, "
        f"{report.virtual_seconds:.0f} virtual s"
    )
    print(
        f"  wall {wall:.1f} s, CPU {cpu:.1f} s; {1000 * wall / max(report.steps, 1):.1f} ms wall per step "
        f"({'within' if wall < TARGET_SECONDS else 'above'} the target of {TARGET_SECONDS:.0f} s)"
    )


def long_run(examples: int, *, combined: bool = True, only: str | None = None) -> int:
    operators = [GALLERY / "representative.py", *sorted(GALLERY.glob("*_ok.py"))]
    if only is not None:
        operators = [path for path in operators if path.stem == only]
    failed = 0
    for path in operators:
        started = time.perf_counter()
        try:
            report = check_operator(
                paths=[path],
                manifests=[GALLERY / "crd.yaml"],
                resources=["gadgets.checks.example"],
                checks=None,  # all of them (consistency needs a declaration: none here)
                max_examples=examples,
                max_steps=20,
                combined=combined,
            )
        except OperatorCheckFailed as exc:
            failed += 1
            print(f"FAILED {path.name}: {exc}", flush=True)
            continue
        except Exception as exc:  # e.g. hypothesis' FlakyFailure: reported with what caused it, and the run goes on
            failed += 1
            print(f"ERROR {path.name}: {type(exc).__name__}: {exc}", flush=True)
            print("".join(traceback.format_exception(exc))[-20000:], flush=True)
            continue
        print(f"ok {path.name}: {report} ({time.perf_counter() - started:.0f} s)", flush=True)
    return failed


def _settings() -> hypothesis.settings:
    """As in the tests: derandomized (the seed given decides), no database of past failures."""
    return hypothesis.settings(deadline=None, derandomize=True, database=None)


def _gallery_operators(only: str | None = None) -> list[pathlib.Path]:
    operators = [GALLERY / "representative.py", *sorted(GALLERY.glob("*_ok.py"))]
    return [path for path in operators if only is None or path.stem == only]


def speed_of(path: pathlib.Path, examples: int) -> dict[str, Any]:
    """All the checks on one operator of the gallery (a fixed seed): the examples run, the seconds, the plans."""
    wall, cpu = time.perf_counter(), time.process_time()
    report = check_operator(
        paths=[path],
        manifests=[GALLERY / "crd.yaml"],
        resources=["gadgets.checks.example"],
        max_examples=examples,
        names=["obj-0"],
        settle_timeout=300,
        consistency=CONSISTENCY.get(path.stem.rsplit("_", 1)[0]),
        seed=0,
        settings=_settings(),
    )
    return dict(
        examples=report.examples,
        wall=time.perf_counter() - wall,
        cpu=time.process_time() - cpu,
        derived=sum(figures.derived for figures in report.plans.values()),
        pruned=sum(figures.pruned for figures in report.plans.values()),
        run=sum(figures.run for figures in report.plans.values()),
    )


def gallery_speed(examples: int, only: str | None = None) -> None:
    """Examples per second and plans per example, all the checks, on the gallery's correct operators."""
    total_examples, total_wall, total_cpu = 0, 0.0, 0.0
    for path in _gallery_operators(only):
        figures = speed_of(path, examples)
        count, wall, cpu = figures["examples"], figures["wall"], figures["cpu"]
        total_examples, total_wall, total_cpu = total_examples + count, total_wall + wall, total_cpu + cpu
        print(
            f"{path.stem:20} {count:4d} examples, {count / wall:5.2f}/s wall, {count / cpu:5.2f}/s CPU; "
            f"per example: {figures['derived'] / count:5.1f} plans derived, {figures['pruned'] / count:5.1f} "
            f"pruned, {figures['run'] / count:4.1f} run",
            flush=True,
        )
    print(
        f"all: {total_examples} examples in {total_wall:.1f} s wall ({total_examples / total_wall:.2f}/s), "
        f"{total_cpu:.1f} s CPU ({total_examples / total_cpu:.2f}/s; the target: {TARGET_RATE:.0f}/s)",
        flush=True,
    )


def _speed_in(tree: pathlib.Path, path: pathlib.Path, examples: int) -> dict[str, Any]:
    """:func:`speed_of` in a fresh process with the packages of another checkout (``tree``) first on the path."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tree), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    command = [sys.executable, __file__, "--one", str(path), "--gallery-examples", str(examples)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{path.stem} in {tree} has failed:\n{done.stdout}{done.stderr}")
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def gallery_against(other: pathlib.Path, examples: int, only: str | None = None) -> None:
    """The gallery's speed here and in another checkout, side by side (each operator in both, one after the other)."""
    totals = {"here": 0.0, "there": 0.0}
    for path in _gallery_operators(only):
        there = _speed_in(other, path, examples)
        here = _speed_in(ROOT, path, examples)
        totals["here"] += here["cpu"]
        totals["there"] += there["cpu"]
        print(
            f"{path.stem:20} {here['examples']:4d}/{there['examples']:4d} examples; CPU {here['cpu']:6.1f} s here, "
            f"{there['cpu']:6.1f} s there: {here['examples'] / here['cpu']:5.2f}/s vs "
            f"{there['examples'] / there['cpu']:5.2f}/s, ratio {there['cpu'] / here['cpu']:4.2f}; plans run "
            f"{here['run']}/{there['run']}",
            flush=True,
        )
    ratio = totals["there"] / totals["here"]
    print(f"all: CPU {totals['here']:.1f} s here, {totals['there']:.1f} s there: {ratio:.2f}x as fast here")


def gallery_bugs(seeds: int, only: str | None = None) -> int:
    """Each planted bug, all the checks with the default budget, under so many seeds: median time and examples."""
    missed = 0
    for path in sorted(GALLERY.glob("*_bug.py")):
        if only is not None and path.stem != only:
            continue
        walls, cpus, found_after, steps, checks = [], [], [], [], set()
        for seed in range(1, seeds + 1):  # the seeds of the gallery's test
            wall, cpu = time.perf_counter(), time.process_time()
            try:
                check_operator(
                    paths=[path],
                    manifests=[GALLERY / "crd.yaml"],
                    resources=["gadgets.checks.example"],
                    names=["obj-0"],
                    settle_timeout=300,
                    consistency=CONSISTENCY.get(path.stem.rsplit("_", 1)[0]),
                    seed=seed,
                    settings=_settings(),
                )
            except OperatorCheckFailed as exc:
                walls.append(time.perf_counter() - wall)
                cpus.append(time.process_time() - cpu)
                found_after.append(exc.checked.failed_after if exc.checked is not None else 0)
                steps.append(len(exc.steps))
                checks.add(exc.check)
            else:
                missed += 1
                print(f"{path.stem}: NOT FOUND with seed {seed}", flush=True)
        if walls:
            print(
                f"{path.stem:24} found by {len(walls)}/{seeds} seeds ({', '.join(sorted(checks))}): median "
                f"{statistics.median(walls):5.1f} s wall, {statistics.median(cpus):5.1f} s CPU, "
                f"{statistics.median(found_after):4.0f} examples; shrunk to {min(steps)}-{max(steps)} steps",
                flush=True,
            )
    return missed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--examples", type=int, default=200)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--long", action="store_true", help="the robustness run: every check, 500 examples each")
    parser.add_argument("--long-examples", type=int, default=500)
    parser.add_argument("--separate", action="store_true", help="--long with one machine per check (not combined)")
    parser.add_argument("--only", default=None, help="--long or --gallery for one operator (e.g. representative)")
    parser.add_argument("--gallery", action="store_true", help="the fault plans on the gallery: speed, bugs found")
    parser.add_argument("--gallery-examples", type=int, default=20)
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--against", type=pathlib.Path, default=None, help="--gallery's speed beside this checkout")
    parser.add_argument("--speed-only", action="store_true", help="--gallery without the planted bugs")
    parser.add_argument("--phases", action="store_true", help="a gallery check's CPU by phase; a request's cost")
    parser.add_argument("--one", type=pathlib.Path, default=None, help=argparse.SUPPRESS)  # --against's processes
    args = parser.parse_args()
    if args.one is not None:
        print(json.dumps(speed_of(args.one, args.gallery_examples)))
        return 0
    if args.phases:
        operator = GALLERY / f"{args.only or 'stale_read_ok'}.py"
        figures = check_phases.print_phases(lambda: speed_of(operator, args.gallery_examples))
        check_phases.print_request_costs(operator, GALLERY / "crd.yaml", "/apis/checks.example/v1/gadgets", figures)
        return 0
    if args.gallery and args.against is not None:
        gallery_against(args.against.resolve(), args.gallery_examples, args.only)
        return 0
    if args.gallery:
        print(f"calibration before: {calibration() * 1000:.1f} ms", flush=True)
        if args.only is None or not args.only.endswith("_bug"):
            gallery_speed(args.gallery_examples, args.only)
        missed = 0 if args.speed_only else gallery_bugs(args.seeds, args.only)
        print(f"calibration after:  {calibration() * 1000:.1f} ms")
        return 1 if missed else 0
    if args.long:
        return 1 if long_run(args.long_examples, combined=not args.separate, only=args.only) else 0
    speed(args.examples, args.steps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
