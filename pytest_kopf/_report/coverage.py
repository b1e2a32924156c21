"""What an exploration covered, counted per check: the actions and faults by kind, the handlers reached.

The machines add each example's figures (:meth:`Coverage.add_example`); :func:`coverage_page` draws a
run's :class:`~pytest_kopf.checks.CheckReport` (``CheckReport.write_html(path)``), e.g. to see whether the
handlers that matter were reached at all, and under which faults.
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from kopf_sim.timelines.model import Page, Table, Text

from .handlers import handler_line

__all__ = ["Coverage", "coverage_page"]


@dataclasses.dataclass
class Coverage:
    """One check's examples, counted: steps by kind (the users' and the perturbations), faults, handlers."""

    actions: collections.Counter[str] = dataclasses.field(default_factory=collections.Counter)
    perturbations: collections.Counter[str] = dataclasses.field(default_factory=collections.Counter)
    faults: collections.Counter[str] = dataclasses.field(default_factory=collections.Counter)
    #: ``Handler 'create_fn'`` → its outcomes (``succeeded``, ``failed temporarily`` …) with their numbers.
    handlers: dict[str, collections.Counter[str]] = dataclasses.field(default_factory=dict)

    def add_step(self, step: Any) -> None:
        kind = type(step).__name__
        (self.actions if getattr(step, "user", True) else self.perturbations)[kind] += 1

    def add_example(self, faults: Iterable[Any], messages: Iterable[str]) -> None:
        """An example's injected faults (the simulator's injections) and kopf's log messages."""
        for injection in faults:
            self.faults[_fault_kind(injection)] += 1
        for message in messages:
            line = handler_line(message)
            if line is not None and not line.invoked:
                self.handlers.setdefault(line.name, collections.Counter())[line.outcome] += 1


def _fault_kind(injection: Any) -> str:
    effect = getattr(getattr(injection, "rule", None), "effect", None)
    kind = type(effect).__name__ if effect is not None else type(injection).__name__
    status = getattr(effect, "status", None)
    method = getattr(getattr(injection, "info", None), "method", None)
    return " ".join(str(part) for part in (kind, status, method) if part)


def coverage_page(
    *, title: str, summary: str, per_check: Mapping[str, Mapping[str, float]], coverage: Mapping[str, Coverage]
) -> Page:
    """The page of a run: its figures per check, then per check what it covered."""
    figures = Table(
        title="Per check",
        header=["check", "examples", "steps", "faults", "crashes", "failures", "virtual s"],
        rows=[
            [
                check,
                *(_number(stats.get(key, 0)) for key in ("examples", "steps", "faults", "crashes", "failures")),
                f"{stats.get('virtual_seconds', 0):,.0f}",
            ]
            for check, stats in per_check.items()
        ],
        id="per-check",
    )
    sections: list[Text | Table] = [Text("What ran", [summary], id="summary"), figures]
    for check, covered in coverage.items():
        sections.extend(_covered(check, covered))
    return Page(title=title, runs=(), before=sections)


def _covered(check: str, covered: Coverage) -> Iterable[Table]:
    yield _counts(f"{check}: the users' actions", "action", covered.actions)
    if covered.perturbations:
        yield _counts(f"{check}: the perturbations", "perturbation", covered.perturbations)
    yield _counts(f"{check}: the faults injected", "fault", covered.faults)
    outcomes = sorted({outcome for counts in covered.handlers.values() for outcome in counts})
    yield Table(
        title=f"{check}: the handlers reached",
        header=["handler", *outcomes],
        rows=[
            [name, *(_number(counts.get(outcome, 0)) for outcome in outcomes)]
            for name, counts in sorted(covered.handlers.items())
        ],
    )


def _counts(title: str, what: str, counts: collections.Counter[str]) -> Table:
    return Table(title=title, header=[what, "number"], rows=[[kind, _number(n)] for kind, n in counts.most_common()])


def _number(value: float) -> str:
    return f"{int(value):,}"
