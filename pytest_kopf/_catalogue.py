"""The catalogue of the checks: one row per check, read by everything that runs, reproduces or documents them.

A check (:class:`Check`) is its name, the perturbations it adds to the users' actions, whether (and with what)
it compares the run's end state, and its judge (when it runs in the verdict, and what it looks at). The
machines (:class:`~pytest_kopf.stateful.OperatorMachine`) draw the perturbations and make the worlds that the
comparisons need; :func:`~pytest_kopf._verdicts.verify` runs the comparisons and the judges; the reproductions
carry the expected end state when their check compares; ``docs/checks.md`` lists the same names (a test says so).
Adding a check is adding a row.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable, Iterable, Mapping, Sequence

from . import _judges as judges
from . import _oracles as oracles
from ._judges import Evidence, Judge

__all__ = [
    "BASELINE",
    "CATALOGUE",
    "CHECKS",
    "DIRECT",
    "Check",
    "Comparison",
    "Phase",
    "comparing",
    "deleting",
    "noise_judged",
    "perturbation_kinds",
    "perturbed_first",
    "plan_kinds",
    "referenced",
    "validate_checks",
]


@dataclasses.dataclass(frozen=True)
class Comparison:
    """What a comparing check compares the run's end state with, and how it finds them different."""

    what: str
    differs: Callable[[Evidence], str | None] = dataclasses.field(compare=False, repr=False)

    def __str__(self) -> str:
        return self.what


#: The end state of the same user actions with no faults and no crashes (a second world, the baseline).
BASELINE = Comparison("the fault-free run of the same user actions", judges.difference)
#: The end state of the driven objects created directly in their final state (a fresh world, made at the end).
DIRECT = Comparison("the driven objects created directly in their final state", oracles.transition)


class Phase(enum.IntEnum):
    """When a judge runs in the verdict of a run (all judges of one phase before any of the next)."""

    SETTLED = 1  # once the run has settled
    COMPARED = 2  # the comparisons of the end state
    TRACED = 3  # what the run's trace tells
    REDELIVERED = 4  # after every object is re-delivered to a fresh operator (that changes the run)
    DELETED = 5  # after every object is deleted and the run has settled again
    STOPPED = 6  # when the operator is stopped (the end of the run)


@dataclasses.dataclass(frozen=True)
class Check:
    """One check: its name, its perturbations, its comparison, its judge."""

    name: str
    #: The kinds of perturbations drawn among the users' actions (see :func:`pytest_kopf.strategies.perturbations`).
    perturbations: tuple[str, ...] = ()
    #: The kinds of fault plans derived from each example's reference run (see :mod:`pytest_kopf._plans`).
    plans: tuple[str, ...] = ()
    #: What the end state is compared with (None: nothing; :data:`BASELINE`: the fault-free run; :data:`DIRECT`).
    compares: Comparison | None = None
    #: What finds the run wrong, beyond the comparison (None: only the comparison).
    judge: Judge | None = None
    #: When the judge runs.
    phase: Phase = Phase.SETTLED
    #: Whether the users' actions delete objects (not for ``transition``: a deleted object has no final state).
    deletes: bool = True
    #: Whether it needs the reference: the users' actions once more with no faults, seeded and clocked otherwise
    #: (what differs between the two correct runs is noise). Those comparing with :data:`BASELINE` all do.
    reference: bool = False
    #: Whether its judge masks the noise too (not only its comparison): the reference then runs beside the checked
    #: run, its noise known before the verdict. Otherwise it runs only once a comparison has found a difference.
    judges_noise: bool = False


#: All the checks, in the order the verdict runs them (within a phase).
CATALOGUE: Mapping[str, Check] = {
    check.name: check
    for check in [
        Check("convergence", judge=judges.convergence, phase=Phase.SETTLED),
        # The oracles that see bugs a run with no faults has too: cheap (no faults), so they come first.
        Check("consistency", judge=oracles.consistency, phase=Phase.SETTLED),
        Check(
            "rollback",
            perturbations=("reverts",),
            judge=oracles.rollback,
            phase=Phase.SETTLED,
            reference=True,
            judges_noise=True,
        ),
        Check("transition", compares=DIRECT, deletes=False),
        Check("cleanup", judge=oracles.cleanup, phase=Phase.DELETED),
        Check(
            "idempotence",
            perturbations=("redeliver",),
            compares=BASELINE,
            judge=judges.redelivered_unchanged,
            phase=Phase.REDELIVERED,
            judges_noise=True,
        ),
        Check(
            "retries",
            perturbations=("api-errors",),
            plans=("write-errors",),
            compares=BASELINE,
            judge=judges.retries,
            phase=Phase.TRACED,
        ),
        Check("crash-restart", perturbations=("crashes",), plans=("crash-after-writes",), compares=BASELINE),
        Check("stale-reads", perturbations=("stale-reads",), plans=("stale-answers",), compares=BASELINE),
        Check(
            "withheld-events",
            perturbations=("withheld-events",),
            plans=("event-pairs", "relists"),
            compares=BASELINE,
        ),
        Check("daemons", judge=judges.abandoned_daemons, phase=Phase.STOPPED),
        Check("finalizers", judge=judges.stuck_finalizers, phase=Phase.DELETED),
    ]
}

#: The names of all the checks.
CHECKS: tuple[str, ...] = tuple(CATALOGUE)


def validate_checks(checks: Iterable[str]) -> tuple[str, ...]:
    """The checks chosen, each once, in the order given; a clear error for unknown ones, or none at all."""
    chosen = tuple(dict.fromkeys(checks))
    unknown = [check for check in chosen if check not in CATALOGUE]
    if unknown:
        raise ValueError(f"Unknown check(s): {', '.join(map(repr, unknown))}; the checks are: {', '.join(CHECKS)}.")
    if not chosen:
        raise ValueError(f"No checks to run; the checks are: {', '.join(CHECKS)}.")
    return chosen


def perturbation_kinds(checks: Sequence[str]) -> tuple[str, ...]:
    """The kinds of perturbations that these checks add, each once."""
    return tuple(dict.fromkeys(kind for check in checks for kind in CATALOGUE[check].perturbations))


def plan_kinds(checks: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """The kinds of fault plans of these checks, by check (those that have any)."""
    return {check: CATALOGUE[check].plans for check in checks if CATALOGUE[check].plans}


def perturbed_first(checks: Sequence[str], kinds: Iterable[str]) -> list[str]:
    """The checks, those whose perturbations or plans are among ``kinds`` first (to whom a difference is due)."""
    present = set(kinds)

    def unrelated(check: str) -> bool:
        return not present & {*CATALOGUE[check].perturbations, *CATALOGUE[check].plans}

    return sorted(checks, key=unrelated)


def comparing(checks: Sequence[str], what: Comparison = BASELINE) -> bool:
    """Whether any of these checks compares its end state with ``what``."""
    return any(CATALOGUE[check].compares == what for check in checks)


def referenced(checks: Sequence[str]) -> bool:
    """Whether a run of these checks needs the reference (a second correct run, to learn the noise from)."""
    return any(CATALOGUE[check].reference or CATALOGUE[check].compares == BASELINE for check in checks)


def noise_judged(checks: Sequence[str]) -> bool:
    """Whether any of these checks' judges masks the noise: the reference must then run beside the checked run."""
    return any(CATALOGUE[check].judges_noise for check in checks)


def deleting(checks: Sequence[str]) -> bool:
    """Whether the users' actions may delete objects in a run of these checks (not if any of them forbids it)."""
    return all(CATALOGUE[check].deletes for check in checks)
