"""A failed check's report: the two worlds side by side on a timeline, their end states' difference, a reproduction.

The machine keeps a failure's evidence (:class:`FailureEvidence`: the typed traces of the checked world
and of the fault-free world, and their end states, as they were when the check failed); the report is
written once, for the failure that is finally raised (after shrinking), to the session's report
directory (``--kopf-report DIR``), and the failure's message names the file.
"""

from __future__ import annotations

import dataclasses
import os
import warnings
from collections.abc import Sequence
from typing import Any

from kopf_sim.timelines.model import Code, Differences, Page, Run, Section, Text
from kopf_sim.timelines.rendering import write

from .._tracing import Entry
from ..errors import OperatorCheckFailed
from .location import PathScrubber, report_path
from .states import Masking, state_differences
from .worlds import world_run

__all__ = ["CHECKED", "FAULT_FREE", "FailureEvidence", "failure_page", "reported"]

CHECKED = "the checked world"
FAULT_FREE = "the fault-free world"


@dataclasses.dataclass(frozen=True)
class FailureEvidence:
    """What a failure's report shows, taken when the check failed.

    ``checked``/``baseline``: the typed traces of the checked world and of the fault-free world (the same
    user actions, no faults, no crashes; None where the check has none). ``checked_state``/``baseline_state``:
    their end states with only the always-volatile fields masked; ``masking``: what the check's comparison
    masked on top (the user's ``mask=``, the learned noise), to grey those differences out. ``named``: the
    files the user named (their paths stay in the report; no other path of the machine does). ``noise``: the
    fields learned as nondeterministic, described.
    """

    checked: Sequence[Entry]
    baseline: Sequence[Entry] | None = None
    checked_state: Sequence[dict[str, Any]] | None = None
    baseline_state: Sequence[dict[str, Any]] | None = None
    masking: Masking = dict
    named: Sequence[str] = ()
    #: The fields learned as noise in this example (as the failure's message names them).
    noise: str = ""


def reported(failure: OperatorCheckFailed) -> OperatorCheckFailed:
    """The failure naming its report, written now (a failure with no evidence, or already reported, as it is)."""
    if failure.report or not isinstance(failure.evidence, FailureEvidence):
        return failure
    try:
        path = report_path(failure.check)
        write(failure_page(failure), path)
    except OSError as exc:  # the failure is what matters: it is raised all the same, without its report
        warnings.warn(f"The report of the failed check {failure.check!r} could not be written: {exc}", stacklevel=2)
        return failure
    return failure.with_report(os.fspath(path))


def failure_page(failure: OperatorCheckFailed) -> Page:
    """The page of a failure (see the module's docs)."""
    evidence = failure.evidence
    if not isinstance(evidence, FailureEvidence):
        raise ValueError(f"The failure of {failure.check!r} has no evidence to draw.")
    scrub = PathScrubber(evidence.named)
    runs: list[Run] = [world_run(CHECKED, evidence.checked, scrub=scrub)]
    if evidence.baseline is not None:
        runs.append(world_run(FAULT_FREE, evidence.baseline, scrub=scrub))
    steps = [scrub(f"{index}. {_code(step)}") for index, step in enumerate(failure.steps, 1)]
    headline, _, findings = scrub(failure.details).partition("\n")
    before: list[Section] = [
        Text(
            "What failed",
            [
                f"The check {failure.check!r} has failed: {headline}",
                *([f"After {len(steps)} step(s):\n" + "\n".join(steps)] if steps else []),
            ],
            id="failure",
        ),
    ]
    if findings:
        before.append(Code("What the check found", findings, id="findings", copyable=False))
    before.append(Text("How to read the timeline", [_reading(len(runs))], id="reading"))
    after: list[Section] = []
    if evidence.checked_state is not None and evidence.baseline_state is not None:
        rows = state_differences(evidence.baseline_state, evidence.checked_state, evidence.masking)
        after.append(
            Differences(
                "The end states",
                FAULT_FREE,
                CHECKED,
                rows,
                id="end-states",
                note=(
                    "The fields in which the end states differ; greyed: the noise (masked with mask=, or learned "
                    "as differing between two fault-free runs), which the check did not count."
                    if rows
                    else "The end states do not differ."
                )
                + (f" Learned as nondeterministic: {evidence.noise}." if evidence.noise else ""),
            )
        )
    if failure.reproduction:
        title = "The reproduction (save it as a test file; it fails the same way)"
        after.append(Code(title, scrub(failure.reproduction), id="reproduction"))
    return Page(title=f"The check {failure.check!r} has failed", runs=runs, before=before, after=after)


def _reading(runs: int) -> str:
    if runs == 1:
        return (
            "The timeline below: a lane per actor (the user, the simulator's faults and crashes, each incarnation of "
            "the operator) and per object; a row per happening, in the order they happened, with its virtual time. "
            "Hover over an item, or click it, for its details."
        )
    return (
        f"The timeline below: {CHECKED} (with the faults and crashes) and {FAULT_FREE} (the same user actions, "
        "nothing else) side by side, aligned at the user's actions; a lane per actor (the user, the simulator, each "
        "incarnation of the operator) and per object; a row per happening, with its virtual time. The first row "
        "where the worlds do something else is highlighted (the simulator's own faults and crashes do not count: "
        "they are what the check injects). Hover over an item, or click it, for its details."
    )


def _code(step: Any) -> str:
    code = getattr(step, "code", None)
    return str(code()) if callable(code) else str(step)
