"""The gallery: operators with planted bugs, each caught by its check, shrunk, and reproduced; their twins pass.

Each ``*_bug.py`` in ``gallery/`` has a correct twin ``*_ok.py``. A bug must be found by the check meant for
it, shrunk to at most 6 steps, and its reproduction, saved as a test file and run by pytest under --kopf-sim,
must fail with the same check, while the same steps' reproduction for the correct twin passes. The twins pass
every check (a bounded number of examples here; ``benchmarks/bench_checks.py --long`` runs 500 examples with
every fault kind in each). The bugs of the oracles (transition, rollback, consistency, cleanup), and those that
only one placement of one fault shows (:data:`PLACED`: found by the fault plans derived from each example's
fault-free run), are found with every check on and the docs' default budget by each of 10 seeds.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pytest_kopf.checks import check_operator
from pytest_kopf.errors import OperatorCheckFailed
from pytest_kopf.stateful import OperatorMachine

from .reports import checked_report

GALLERY = Path(__file__).parent / "gallery"
CRD = GALLERY / "crd.yaml"
RESOURCE = "gadgets.checks.example"
#: Examples per check for the correct twins: a bounded profile for CI (raise it for a longer search).
TWIN_EXAMPLES = int(os.environ.get("KOPF_CHECKS_TWIN_EXAMPLES", "2"))

BUGS = {
    "crash_child": "crash-restart",
    "stale_read": "stale-reads",
    "missed_state": "withheld-events",
    "hung_daemon": "daemons",
    "hammering": "retries",
    "stuck_finalizer": "finalizers",
    "optional_field": "convergence",
    "stale_list": "stale-reads",
    "coalesced_field": "withheld-events",
    "conflict_storm": "retries",
    "status_from_old": "withheld-events",
    "transition": "transition",
    "rollback": "rollback",
    "consistency": "consistency",
    "cleanup": "cleanup",
}
#: Where the gadgets' fields must be found (for the consistency pair: the others have no such child).
CONSISTENCY = {"consistency": {"spec.size": "configmaps/{name}-data.data.size"}}

INNER_PYTEST = (
    "--kopf-sim",
    "-p",
    "no:cacheprovider",
    "-p",
    "no:hypothesispytest",
    "-p",
    "no:asyncio",
    "-p",
    "no:looptime_plugin",
    "-p",
    "no:randomly",
    "-q",
)


def check(name: str, checks: list[str] | None, max_examples: int) -> None:
    check_operator(
        paths=[GALLERY / f"{name}.py"],
        manifests=[CRD],
        resources=[RESOURCE],
        checks=checks,
        max_examples=max_examples,
        max_steps=8,
        names=["obj-0"],
        settle_timeout=300,
        consistency=CONSISTENCY.get(name.rsplit("_", 1)[0]),
    )


@pytest.mark.parametrize(("bug", "meant_for"), sorted(BUGS.items()))
def test_a_planted_bug_is_caught_shrunk_and_reproduced(bug: str, meant_for: str, pytester: pytest.Pytester) -> None:
    with pytest.raises(OperatorCheckFailed) as info:
        check(f"{bug}_bug", [meant_for], max_examples=200)
    failure = info.value
    assert failure.check == meant_for
    assert 1 <= len(failure.steps) <= 6, failure
    assert failure.trace_tail
    checked_report(failure, named=[GALLERY / f"{bug}_bug.py", CRD])  # the failure's HTML report, named in it

    imported = [line for line in failure.reproduction.splitlines() if line.startswith(("from ", "import "))]
    assert not [line for line in imported if "pytest_kopf._" in line], imported  # public modules only
    pytester.makepyfile(test_reproduction=failure.reproduction)
    result = pytester.runpytest_inprocess(*INNER_PYTEST)
    assert result.ret == 1, result.stdout.str()
    result.stdout.fnmatch_lines([f"*The check '{meant_for}' has failed*"])

    # The same steps against the correct twin: its reproduction (the same test but for the operator's file, and
    # the expected end state of the twin's own fault-free run) passes.
    twin = OperatorMachine.configured(
        f"Twin_{bug}",
        paths=[GALLERY / f"{bug}_ok.py"],
        manifests=[CRD],
        resources=[RESOURCE],
        checks=[meant_for],
        names=["obj-0"],
        settle_timeout=300,
        consistency=CONSISTENCY.get(bug, {}),
    )
    twin_reproduction = twin.reproduce(failure.steps, meant_for)
    assert f"{bug}_ok.py" in twin_reproduction and f"{bug}_bug.py" not in twin_reproduction
    pytester.makepyfile(test_reproduction=twin_reproduction)
    result = pytester.runpytest_inprocess(*INNER_PYTEST)
    assert result.ret == 0, result.stdout.str()


@pytest.mark.long_running
@pytest.mark.parametrize("twin", sorted(BUGS))
def test_the_correct_twin_passes_every_check(twin: str) -> None:
    check(f"{twin}_ok", None, max_examples=TWIN_EXAMPLES)  # all the checks (consistency where declared)


@pytest.mark.long_running
def test_a_representative_operator_passes_every_check() -> None:
    """Create/update/delete handlers, a daemon, a timer, an index; sync & async handlers (a bounded profile)."""
    check("representative", None, max_examples=TWIN_EXAMPLES)


#: The seeds of the default-budget sweep: the first in the suite (its time on 2 cores), all 10 of the acceptance with
#: KOPF_GALLERY_SEEDS=10 (about 150 default-budget checks: tens of minutes of CPU).
SEEDS = range(1, 1 + int(os.environ.get("KOPF_GALLERY_SEEDS", "1")))


@pytest.mark.long_running
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("bug", sorted(BUGS))
def test_every_planted_bug_is_found_with_every_check_and_the_default_budget_by_every_seed(bug: str, seed: int) -> None:
    """With checks= and the budget left as the docs' defaults (every check, 100 examples each of up to 20 steps, 5
    fault plans per check and example), each of 10 seeds finds the bug, shrunk to at most 6 steps. The check that
    reports it may be another than the one meant for it (e.g. a state missed after a crash as after coalesced
    events): it counts as found when the same steps pass that check for the correct twin."""
    with pytest.raises(OperatorCheckFailed) as info:
        check_operator(
            paths=[GALLERY / f"{bug}_bug.py"],
            manifests=[CRD],
            resources=[RESOURCE],
            names=["obj-0"],
            settle_timeout=300,
            consistency=CONSISTENCY.get(bug),
            seed=seed,
        )
    failure = info.value
    assert 1 <= len(failure.steps) <= 6, failure
    twin = OperatorMachine.configured(
        f"Twin_{bug}_{seed}",
        paths=[GALLERY / f"{bug}_ok.py"],
        manifests=[CRD],
        resources=[RESOURCE],
        checks=[failure.check],
        names=["obj-0"],
        settle_timeout=300,
        consistency=CONSISTENCY.get(bug, {}),
    )
    twin.replay(failure.steps)  # the same steps pass that check for the correct twin: no false alarm
