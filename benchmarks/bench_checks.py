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
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time
import traceback

from pytest_kopf.checks import check_operator
from pytest_kopf.errors import OperatorCheckFailed

ROOT = pathlib.Path(__file__).resolve().parent.parent
GALLERY = ROOT / "tests" / "checks" / "gallery"
TARGET_SECONDS = 60.0


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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--examples", type=int, default=200)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--long", action="store_true", help="the robustness run: every check, 500 examples each")
    parser.add_argument("--long-examples", type=int, default=500)
    parser.add_argument("--separate", action="store_true", help="--long with one machine per check (not combined)")
    parser.add_argument("--only", default=None, help="--long for one operator of the gallery (e.g. representative)")
    args = parser.parse_args()
    if args.long:
        return 1 if long_run(args.long_examples, combined=not args.separate, only=args.only) else 0
    speed(args.examples, args.steps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
