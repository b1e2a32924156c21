"""One-line checks of an operator's robustness, found by hypothesis-driven action sequences.

:func:`check_operator` runs, for each check, a :class:`~pytest_kopf.stateful.OperatorMachine`
over generated sequences of actions (create, patch, delete, advance the time, plus the check's
perturbations), and raises :class:`~pytest_kopf.errors.OperatorCheckFailed` with the shrunk steps
and a runnable reproduction when the operator misbehaves. :func:`verify` is the checks' verdict
on one run at the end of its actions: the machines call it, and so do the reproductions.

The checks are the rows of :data:`pytest_kopf._catalogue.CATALOGUE` (their perturbations, what they
compare, their judges); ``docs/checks.md`` tells what each one means.
"""

from __future__ import annotations

import dataclasses
import functools
import gc
import logging
import os
import time
import zlib
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kopf_sim.controllers import ControllerSettings
from kopf_sim.timelines.rendering import write

from ._catalogue import CHECKS, validate_checks
from ._noise import NoiseField
from ._oracles import correspondences, patch_and_revert, record_creations
from ._plans import PlanFigures
from ._progress import CheckProgress, ProgressDisplay, current_display
from ._report.coverage import Coverage, coverage_page
from ._report.failures import reported
from ._storms import watch_storms
from ._tracing import Trace, record_trace
from ._verdicts import RunOptions, verify
from .cluster import Manifests
from .driving import DEFAULT_QUIET, DEFAULT_SETTLE_TIMEOUT
from .errors import OperatorCheckFailed
from .plugin import GC_YOUNG_THRESHOLD
from .stateful import Compared, OperatorMachine, Statistics, operator_digest
from .strategies.steps import ReplayLog

if TYPE_CHECKING:
    import hypothesis
    from hypothesis import strategies as st

    import kopf

#: What a reproduction imports (see :func:`~pytest_kopf.stateful.reproduction`) is public, here, besides the
#: checker: the trace and the storm watcher recorded before the steps, the creations recorded for ``cleanup``,
#: the revert of ``rollback``'s steps, the learned noise given to :func:`verify`, and what the run is compared with,
#: made anew by an operator that is not the one that failed (:func:`compared_with`).
__all__ = [
    "CHECKS",
    "CheckReport",
    "Compared",
    "NoiseField",
    "OperatorCheckFailed",
    "RunOptions",
    "Trace",
    "check_operator",
    "compared_with",
    "patch_and_revert",
    "record_creations",
    "record_trace",
    "verify",
    "watch_storms",
]

# -- check_operator ----------------------------------------------------------------------------------


def compared_with(
    users_actions: Callable[[Any, Any], Coroutine[Any, Any, None]],
    check: str,
    *,
    made_of: str,
    paths: Sequence[str | os.PathLike[str]],
    resources: Sequence[str],
    expected: Sequence[Mapping[str, Any]] | None = None,
    direct: Sequence[Mapping[str, Any]] | None = None,
    noise: Sequence[NoiseField] = (),
    manifests: Sequence[Manifests] = (),
    namespace: str = "default",
    mask: Sequence[str] = (),
    quiet: float = DEFAULT_QUIET,
    settle_timeout: float = DEFAULT_SETTLE_TIMEOUT,
    retained: Sequence[str] = (),
    consistency: Mapping[str, str] | None = None,
) -> Compared:
    """What a reproduction's run is compared with (a fixture of the reproduction, before its loop runs).

    ``expected``, ``direct`` and ``noise`` as written in the reproduction when the operator's files and the manifests
    are those it was made of (``made_of``: their digest); else (the operator fixed, or its correct twin named instead)
    made anew by this operator: ``users_actions`` run with no faults, once more seeded and clocked otherwise for the
    noise, and for ``transition`` the driven objects created directly in their final state. So a reproduction passes
    for an operator that gets its steps right, not only for one whose fault-free run is the same as the failed one's.
    """
    if operator_digest(paths, manifests) == made_of:
        return Compared(
            expected=None if expected is None else [dict(obj) for obj in expected],
            direct=None if direct is None else [dict(obj) for obj in direct],
            noise=list(noise),
        )
    machine = OperatorMachine.configured(
        "Reproduced",
        paths=list(paths),
        manifests=list(manifests),
        resources=list(resources),
        checks=[check],
        namespace=namespace,
        mask=list(mask),
        quiet=quiet,
        settle_timeout=settle_timeout,
        retained=list(retained),
        consistency=dict(consistency or {}),
    )
    return machine.fault_free(users_actions, check)


@dataclasses.dataclass
class CheckReport:
    """What :func:`check_operator` has run: per check, and in total."""

    checks: list[str]
    examples: int = 0
    steps: int = 0
    faults: int = 0
    crashes: int = 0
    virtual_seconds: float = 0.0
    wall_seconds: float = 0.0
    per_check: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    #: Per check, the fields learned as nondeterministic (``Secret obj-0-credentials data.password``), in any of
    #: its examples: masked in that example's comparisons (see :mod:`pytest_kopf._noise`).
    noise: dict[str, list[str]] = dataclasses.field(default_factory=dict)
    #: What each check's examples covered: the actions and faults by kind, the handlers reached and their outcomes.
    coverage: dict[str, Coverage] = dataclasses.field(default_factory=dict)
    #: The fault plans of each check that has them: derived, pruned, run, faults, virtual & wall seconds.
    plans: dict[str, PlanFigures] = dataclasses.field(default_factory=dict)
    #: The examples run when the first failure was found (before its shrinking); None if none was.
    failed_after: int | None = None

    def __str__(self) -> str:
        lines = [
            f"{', '.join(self.checks)}: {self.examples} examples, {self.steps} steps, {self.faults} faults "
            f"injected, {self.crashes} crashes, {self.virtual_seconds:.0f} virtual s in "
            f"{self.wall_seconds:.1f} wall s"
        ]
        lines.extend(self._check_line(check) for check in self.per_check)
        return "\n".join(lines)

    def _check_line(self, check: str) -> str:
        """One check's figures: examples, plans, faults, noise learned, virtual & wall seconds."""
        figures = self.per_check[check]
        plans = self.plans.get(check)
        faults = int(figures["faults"]) + (plans.faults if plans is not None else 0)
        virtual = float(figures["virtual_seconds"]) + (plans.virtual_seconds if plans is not None else 0.0)
        parts = [f"{figures['examples']} examples"]
        if plans is not None:
            parts.append(f"{plans.derived} plans derived, {plans.pruned} pruned, {plans.run} run")
            parts[-1] += f" ({plans.skipped} over the budget)"
        parts.append(f"{faults} faults injected")
        line = f"  {check}: {', '.join(parts)}, {virtual:.0f} virtual s in {figures['wall_seconds']:.1f} wall s"
        noise = self.noise.get(check)
        return f"{line}; learned as nondeterministic: {', '.join(noise)}" if noise else line

    def write_html(self, path: str | os.PathLike[str]) -> None:
        """Write what the run covered as an HTML page (one self-contained file), e.g. to see what it explored."""
        page = coverage_page(
            title=f"What check_operator explored: {', '.join(self.checks)}",
            summary=str(self),
            per_check=self.per_check,
            coverage=self.coverage,
        )
        write(page, path)


def check_operator(
    *,
    paths: Sequence[str | os.PathLike[str]] = (),
    modules: Sequence[str] = (),
    registry: Callable[[], kopf.OperatorRegistry] | None = None,
    manifests: Sequence[Manifests] = (),
    resources: Sequence[str] = (),
    checks: Sequence[str] | None = None,
    max_examples: int = 100,
    max_steps: int = 20,
    specs: Mapping[str, st.SearchStrategy[Any]] | None = None,
    names: Sequence[str] = ("obj-0", "obj-1"),
    namespace: str = "default",
    mask: Sequence[str] = (),
    quiet: float = DEFAULT_QUIET,
    settle_timeout: float = DEFAULT_SETTLE_TIMEOUT,
    settings: hypothesis.settings | None = None,
    shrink: bool = True,
    combined: bool = False,
    max_plans: int = 5,
    logs: Sequence[str | os.PathLike[str]] = (),
    initial_steps: Sequence[Any] = (),
    retained: Sequence[str] = (),
    consistency: Mapping[str, str] | None = None,
    seed: int | None = None,
    controllers: ControllerSettings | str | Sequence[str] | bool | None = None,
) -> CheckReport:
    """Run the checks on the operator over generated action sequences; raise the first failure, shrunk.

    The operator: ``paths`` (files), ``modules``, or ``registry`` (a function making a fresh
    :class:`kopf.OperatorRegistry`; reproductions cannot replay those). ``manifests``: applied to every
    fresh cluster (the CRDs of ``resources`` among them). ``resources``: the resources whose objects
    the actions create, patch and delete (as kubectl names them). ``specs``: strategies for the specs
    by resource name (default: from the CRD schema). ``max_examples``: the examples (sequences of user
    actions, with random faults among them) per machine; ``max_steps`` per example; ``max_plans``: the
    fault plans per check run after each example (derived from its fault-free run, those equivalent to
    one tried before pruned; 0: none). ``settings``: hypothesis settings to start from (the current profile
    by default). ``shrink``: shrink a failing sequence (removing and simplifying its steps while it fails the
    same check). ``combined``: all the checks in one machine (one fault-free run per example for the plans of
    every check; every kind of random fault in the same examples); by default, one machine per check.
    ``logs``: recorded watch-event logs replayed as one of the users' actions; ``initial_steps``: actions done
    at the start of every example (e.g. ``[ReplayLog("incident.jsonl")]``: a recorded incident as the start).
    ``checks``: all of them by default (``consistency`` only if ``consistency=`` declares where the objects' fields
    must be found, e.g. ``{"spec.replicas": "deployments/{name}.spec.replicas"}``). ``retained``: what the
    operator may leave after its objects are deleted, on purpose (``cleanup``), as ``resource/name`` globs.
    The checks run in rounds (``ROUNDS``): each gets a share of its examples in turn. ``seed``: the seed of the
    examples drawn (by default, hypothesis' own; a derandomized profile's fixed one).
    ``controllers``: the built-in controllers of the simulated clusters (``"none"``, ``"all,-cronjobs"``, or
    :class:`~kopf_sim.controllers.ControllerSettings`); by default, those that the test being run selects for
    its ``kopf_cluster`` (the ``kopf_controllers`` ini option and marker).
    A check whose users' actions on objects were all refused (none reached the operator) fails as vacuous.

    Returns a :class:`CheckReport`; raises :class:`~pytest_kopf.errors.OperatorCheckFailed`.
    """
    correspondences(consistency)  # a malformed one is a clear error now, not in every example
    if checks is None:  # all of them; consistency only with something to check
        checks = [check for check in CHECKS if check != "consistency" or consistency]
    chosen = validate_checks(checks)
    if "consistency" in chosen and not consistency:
        raise ValueError(
            "The check 'consistency' needs consistency={...}: where the driven objects' fields must be found, "
            "e.g. {'spec.replicas': 'deployments/{name}.spec.replicas'}."
        )
    if not resources:
        raise ValueError("No resources to drive: pass resources=['plural.group', ...] (their CRDs in manifests=).")
    if not (paths or modules or registry):
        raise ValueError("No operator to check: pass paths=[...], modules=[...], or registry=.")
    _read_logs([*logs, *(step.log for step in initial_steps if isinstance(step, ReplayLog))])
    report = CheckReport(checks=list(chosen))
    started = time.perf_counter()
    # As in a session of kopf tests: the youngest generation collected less often (most of a world's objects are
    # gone by then); no freezing here (that is the plugin's decision for the session).
    thresholds = gc.get_threshold()
    gc.set_threshold(max(thresholds[0], GC_YOUNG_THRESHOLD), *thresholds[1:])
    kopf_level = logging.getLogger("kopf").level
    try:
        _run_checks(
            chosen,
            report,
            started,
            machine_options=dict(
                paths=paths,
                modules=modules,
                registry=registry,
                manifests=manifests,
                resources=resources,
                specs=specs,
                names=names,
                namespace=namespace,
                mask=mask,
                quiet=quiet,
                settle_timeout=settle_timeout,
                logs=logs,
                initial_steps=initial_steps,
                retained=retained,
                # Judged in every world of every check's examples, if the consistency check is run at all.
                consistency=dict(consistency or {}) if "consistency" in chosen else {},
                controllers=controllers,
            ),
            settings=settings,
            max_examples=max_examples,
            max_steps=max_steps,
            shrink=shrink,
            combined=combined,
            max_plans=max_plans,
            seed=seed,
        )
    finally:
        gc.set_threshold(*thresholds)
        logging.getLogger("kopf").setLevel(kopf_level)
    return report


def _read_logs(paths: Iterable[str | os.PathLike[str]]) -> None:
    """Read and check the logs to replay before any example: a bad one is a :class:`LogError` naming its lines
    at once, not a failing example found (and shrunk) when its replay happens to be drawn."""
    from kopf_sim.recording.replaying import read_log

    for path in paths:
        read_log(path)


#: The checks run in rounds, each check getting these shares of its examples in turn: a bug that one check finds at
#: once is found after a few examples of the checks before it, not after their whole budgets. Growing rounds: the
#: first ones cheap for every check, most of the budget in the last; each begins hypothesis' search anew (with
#: its simplest example again: five rounds spend five examples on it).
ROUNDS = (0.02, 0.04, 0.08, 0.16, 0.7)
#: Budgets smaller than this run in one round (each round begins with hypothesis' simplest example again).
ROUNDED = 20


def rounds(max_examples: int) -> list[int]:
    """The examples of each round for a check's budget (they add up to it; a round of none is left out)."""
    if max_examples < ROUNDED:
        return [max_examples]
    sizes: list[int] = []
    for share in ROUNDS:
        sizes.append(min(max(1, round(max_examples * share)), max_examples - sum(sizes)))
    sizes[-1] += max_examples - sum(sizes)
    return [size for size in sizes if size > 0]


def _run_checks(
    chosen: Sequence[str],
    report: CheckReport,
    started: float,
    *,
    machine_options: dict[str, Any],
    settings: hypothesis.settings | None,
    max_examples: int,
    max_steps: int,
    shrink: bool,
    combined: bool,
    max_plans: int,
    seed: int | None,
) -> None:
    from hypothesis import HealthCheck, Phase
    from hypothesis import settings as hypothesis_settings

    base = settings if settings is not None else hypothesis_settings()
    groups = [tuple(chosen)] if combined else [(check,) for check in chosen]
    display = current_display()
    machines: dict[str, type[OperatorMachine]] = {}
    progresses: dict[str, CheckProgress] = {}
    for group in groups:
        check = "+".join(group)
        machine = machines[check] = OperatorMachine.configured(
            f"Check_{check.replace('-', '_').replace('+', '_')}", checks=group, max_plans=max_plans, **machine_options
        )
        stats = Statistics()
        machine.statistics = stats
        machine.coverage = report.coverage[check] = Coverage()
        progress = progresses[check] = CheckProgress(check, budget=max_examples)
        if display is not None:
            machine.progressed = functools.partial(_progressed, progress, stats, display)
    # Hypothesis finds a failing sequence; then shrunk() removes and simplifies its steps one by one, which
    # is a few dozen runs, where hypothesis' own shrinking of such sequences takes hundreds of them.
    # With shrink=False, the first failure is reported as it is: hypothesis' own shrinking is never on (with the
    # sequences of a realistic operator, that is minutes of runs before the first report).
    phases = [phase for phase in base.phases if phase != Phase.shrink]
    sizes = rounds(max_examples)
    for number, examples in enumerate(sizes):
        run_settings = hypothesis_settings(
            base,
            max_examples=examples,
            stateful_step_count=max_steps,
            deadline=None,
            report_multiple_bugs=False,
            phases=phases,
            suppress_health_check=[
                *base.suppress_health_check,
                HealthCheck.too_slow,
                HealthCheck.data_too_large,
                HealthCheck.filter_too_much,
            ],
        )
        for check, machine in machines.items():
            progress, counted = progresses[check], machine.statistics
            assert counted is not None
            stats = counted
            try:
                began = time.perf_counter()
                failure = _found(machine, run_settings, _round_seed(seed, base.derandomize, check, number))
                if failure is not None:
                    stats.wall_seconds += time.perf_counter() - began
                    _count(report, check, stats, started)
                    report.failed_after = report.examples  # before the shrinking's runs
                    if shrink:
                        progress.shrinking = True
                        failure = shrunk(machine, failure)
                    failure = reported(failure)
                    failure.checked = report
                    raise failure from None
            except BaseException:
                _finished(display, progress, stats)
                raise
            else:
                stats.wall_seconds += time.perf_counter() - began
            finally:
                _count(report, check, stats, started)
            if number == len(sizes) - 1:
                _finished(display, progress, stats)
                vacuous = stats.reach.vacuous(stats.examples)
                if vacuous is not None:
                    raise OperatorCheckFailed(check, vacuous)


def _finished(display: ProgressDisplay | None, progress: CheckProgress, stats: Statistics) -> None:
    if display is not None:
        _progressed(progress, stats, None)
        progress.finished = time.perf_counter()
        display.finish(progress)


def _round_seed(seed: int | None, derandomized: bool, check: str, number: int) -> int | None:
    """The seed of a check's round: from the user's ``seed``; fixed if the profile is derandomized; else none."""
    if seed is None and not derandomized:
        return None
    return zlib.crc32(f"{seed}/{check}/{number}".encode())


#: Said of a failure that its example's rerun did not repeat.
NOT_REPEATED = (
    "\n(The run of these steps failed once, but not when hypothesis ran them again: the outcome depends on what "
    "virtual time does not order, e.g. sync handlers of several objects at once, each in a thread of its own.)"
)


def _found(
    machine: type[OperatorMachine], settings: hypothesis.settings, seed: int | None
) -> OperatorCheckFailed | None:
    """The failure of the machine's examples, if any; also one that hypothesis could not repeat (``Flaky``)."""
    from hypothesis.errors import FlakyFailure

    try:
        _run_machine(machine, settings, seed)
    except OperatorCheckFailed as failure:
        return failure
    except FlakyFailure as flaky:
        failures = [exc for exc in flaky.exceptions if isinstance(exc, OperatorCheckFailed)]
        if not failures:
            raise
        first = failures[0]
        return OperatorCheckFailed(
            first.check,
            first.details + NOT_REPEATED,
            steps=first.steps,
            trace_tail=first.trace_tail,
            reproduction=first.reproduction,
            evidence=first.evidence,
        )
    return None


def _run_machine(machine: type[OperatorMachine], settings: hypothesis.settings, seed: int | None) -> None:
    """Run a machine's examples as hypothesis' ``run_state_machine_as_test`` does, with this seed (if any)."""
    import hypothesis
    from hypothesis.stateful import get_state_machine_test

    from ._seeding import without_local_constants

    test = get_state_machine_test(machine, settings=settings)
    if seed is not None:
        test = hypothesis.seed(seed)(test)
    with without_local_constants():
        test()


def _count(report: CheckReport, check: str, stats: Statistics, started: float) -> None:
    report.per_check[check] = {
        field.name: _plain(getattr(stats, field.name))
        for field in dataclasses.fields(stats)
        if field.name not in ("noise", "plans")
    }
    report.noise[check] = sorted(dict.fromkeys(str(field) for field in sorted(stats.noise)))
    report.plans.update(stats.plans)
    report.examples = sum(int(figures["examples"]) for figures in report.per_check.values())
    report.steps = sum(int(figures["steps"]) for figures in report.per_check.values())
    report.faults = sum(int(figures["faults"]) for figures in report.per_check.values())
    report.faults += sum(figures.faults for figures in report.plans.values())
    report.crashes = sum(int(figures["crashes"]) for figures in report.per_check.values())
    report.virtual_seconds = sum(figures["virtual_seconds"] for figures in report.per_check.values())
    report.virtual_seconds += sum(figures.virtual_seconds for figures in report.plans.values())
    report.wall_seconds = time.perf_counter() - started


def _plain(value: Any) -> Any:
    """A figure of the statistics as plain data (a dataclass of figures as a dict)."""
    return dataclasses.asdict(value) if dataclasses.is_dataclass(value) and not isinstance(value, type) else value


def _progressed(progress: CheckProgress, stats: Statistics, display: ProgressDisplay | None) -> None:
    """Copy a machine's figures into the progress line (and show it, if there is a display)."""
    progress.examples, progress.steps, progress.failures = stats.examples, stats.steps, stats.failures
    progress.faults = stats.faults + sum(figures.faults for figures in stats.plans.values())
    progress.plans = sum(figures.run for figures in stats.plans.values())
    progress.crashes = stats.crashes
    progress.virtual_seconds = stats.virtual_seconds + sum(figures.virtual_seconds for figures in stats.plans.values())
    if display is not None:
        display.update(progress)


#: At most this many runs to shrink a failing sequence (each a fresh world or two, with the checks).
SHRINK_BUDGET = 150


def shrunk(
    machine: type[OperatorMachine], failure: OperatorCheckFailed, budget: int = SHRINK_BUDGET
) -> OperatorCheckFailed:
    """The failure of the simplest sequence found that still fails the same check (or differs the same way).

    Runs of steps are removed (the longest first; from the end: later steps depend on earlier ones), then simplified
    (:meth:`~pytest_kopf.strategies.Action.simpler`), over and over while that keeps failing.
    The result is deterministic: the same sequence shrinks to the same steps.
    """
    best = failure
    steps = list(failure.steps)
    runs = 0
    if failure.check not in machine.checks:  # e.g. 'convergence' of a planned run of another check: judged so too
        machine = machine.configured(machine.__name__, checks=[failure.check, *machine.checks])

    def fails(candidate: list[Any]) -> OperatorCheckFailed | None:
        nonlocal runs
        runs += 1
        try:
            machine.replay(candidate)
        except OperatorCheckFailed as exc:
            # The same check; or the same difference from the same run, due now to the check of the faults left.
            same = exc.check == failure.check or (failure.compared is not None and exc.compared == failure.compared)
            return exc if same else None
        except Exception:
            return None
        return None

    improved = True
    while improved and runs < budget:
        improved = False
        # Runs of steps removed, the longest first (halves, quarters... single steps), from the end: later steps
        # depend on earlier ones, and a long sequence loses most of its steps in a few runs.
        size = max(1, len(steps) // 2)
        while size >= 1 and runs < budget:
            index = len(steps) - size
            while index >= 0 and runs < budget:
                candidate = steps[:index] + steps[index + size :]
                found = fails(candidate)
                if found is not None:
                    steps, best, improved = candidate, found, True
                index = min(index - size, len(steps) - size)
            size //= 2
        for index in range(len(steps)):
            for simpler in steps[index].simpler():
                if runs >= budget:
                    break
                candidate = [*steps[:index], simpler, *steps[index + 1 :]]
                found = fails(candidate)
                if found is not None:
                    steps, best, improved = candidate, found, True
                    break
    return best
