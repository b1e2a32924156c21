"""The cost of the checks against an operator as real ones are: children, another namespace, the official client.

Run: ``python benchmarks/bench_realistic_checks.py [--examples 30] [--steps 10] [--profile N]``. The operators are
``tests/checks/realistic/copier.py`` (a Secret copied into another namespace and a Deployment per object, the
official client from async and sync handlers, clients built at the import of a sibling module) and its twin
with a bug that the ``crash-restart`` check finds (``copier_bug.py``). Printed, for each part: wall and CPU
seconds, examples, steps, runs of the shrinker:

* ``passing``: ``convergence``, ``crash-restart`` and ``idempotence`` on the correct copier;
* ``unshrunk``: ``crash-restart`` on the buggy one, up to the first failure (``shrink=False``);
* ``shrunk``: the same, shrunk;
* ``typesense``, ``smoketest``, ``wazuh``: every check at the docs' budget (100 examples of up to 20 steps per
  check) on the correct ``realistic/typesense``, ``realistic/smoketest`` and ``realistic/wazuh`` operators (long:
  not in the default parts).

``--profile N`` prints the N functions with the most CPU time of their own (cProfile), per part.
``--parts`` picks some. The machine is shared and noisy: compare CPU seconds, or two runs side by side.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pathlib
import pstats
import time
from collections.abc import Callable
from typing import Any

from pytest_kopf.checks import check_operator
from pytest_kopf.errors import OperatorCheckFailed

ROOT = pathlib.Path(__file__).resolve().parent.parent
REALISTIC = ROOT / "tests" / "checks" / "realistic"
MANIFESTS = [ROOT / "tests" / "checks" / "gallery" / "crd.yaml", REALISTIC / "namespace.yaml"]


def run(
    operator: str,
    checks: list[str] | None,
    examples: int,
    steps: int,
    *,
    shrink: bool,
    manifests: list[pathlib.Path] = MANIFESTS,
    resource: str = "gadgets.checks.example",
) -> str:
    try:
        report = check_operator(
            paths=[REALISTIC / operator],
            manifests=manifests,
            resources=[resource],
            checks=checks,
            max_examples=examples,
            max_steps=steps,
            names=["obj-0", "obj-1"],
            shrink=shrink,
        )
    except OperatorCheckFailed as failure:
        return f"failed ({failure.check}, {len(failure.steps)} steps)"
    return f"passed: {report}"


def every_check(directory: str, resource: str) -> Callable[[int, int], str]:
    """Every check at the docs' budget (100 examples of up to 20 steps per check), whatever --examples/--steps say,
    on ``realistic/<directory>/operator.py`` with the CRD next to it."""
    manifests = [REALISTIC / directory / "crd.yaml"]
    return lambda examples, steps: run(
        f"{directory}/operator.py", None, 100, 20, shrink=True, manifests=manifests, resource=resource
    )


PARTS: dict[str, Callable[[int, int], str]] = {
    "passing": lambda examples, steps: run(
        "copier.py", ["convergence", "crash-restart", "idempotence"], examples, steps, shrink=True
    ),
    "unshrunk": lambda examples, steps: run("copier_bug.py", ["crash-restart"], 100, steps, shrink=False),
    "shrunk": lambda examples, steps: run("copier_bug.py", ["crash-restart"], 100, steps, shrink=True),
    "typesense": every_check("typesense", "typesenseclusters.search.example"),
    "smoketest": every_check("smoketest", "smoketests.qa.example"),
    "wazuh": every_check("wazuh", "wazuhagents.security.example"),
}


def measure(name: str, examples: int, steps: int, profile: int) -> None:
    profiler = cProfile.Profile() if profile else None
    wall, cpu = time.perf_counter(), time.process_time()
    if profiler is not None:
        profiler.enable()
    outcome = PARTS[name](examples, steps)
    if profiler is not None:
        profiler.disable()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(f"{name}: wall {wall:.1f} s, CPU {cpu:.1f} s; {outcome}", flush=True)
    if profiler is not None:
        buffer = io.StringIO()
        stats: Any = pstats.Stats(profiler, stream=buffer)
        stats.sort_stats("tottime").print_stats(profile)
        print(buffer.getvalue())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--examples", type=int, default=30, help="examples per check of the passing part")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--parts", default="passing,unshrunk,shrunk", help=f"some of: {', '.join(PARTS)}")
    parser.add_argument("--profile", type=int, default=0, metavar="N", help="print the top N functions per part")
    args = parser.parse_args()
    for name in args.parts.split(","):
        measure(name, args.examples, args.steps, args.profile)


if __name__ == "__main__":
    main()
