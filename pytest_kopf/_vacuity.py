"""Whether a check's run has exercised the operator at all: :class:`Reach`.

A check passes when nothing goes wrong; that is worth nothing when none of the users' actions has
reached the operator: e.g. every create refused because the namespace does not exist, or because the
specs drawn are all invalid for the CRD's schema. The machines count the outcomes of the users' actions
on objects in the checked worlds, over all the examples of a check; a run in which creates were tried
and not one action on an object succeeded is vacuous, and the check fails naming the refusals.

A run with no creates tried (e.g. an example or two of a few steps that only delete, patch or let time
pass) is not vacuous: it has tried nothing that could have reached the operator.
"""

from __future__ import annotations

import dataclasses

from .driving import Refusal
from .strategies.steps import (
    Action,
    Create,
    Delete,
    Outcome,
    PatchAndRevert,
    PatchFields,
    PatchMeta,
    PatchSpec,
    ReplayLog,
)

__all__ = ["Reach"]

#: How the reports name the users' actions on objects.
_ACTIONS: dict[type[Action], str] = {
    Create: "create",
    PatchSpec: "spec patch",
    PatchMeta: "metadata patch",
    PatchFields: "fields patch",
    PatchAndRevert: "change reverted",
    Delete: "delete",
    ReplayLog: "replay",
}
#: How many different refusals a report names (the most frequent first).
_NAMED = 6


@dataclasses.dataclass
class Reach:
    """The outcomes of the users' actions on objects in a check's checked worlds (all its examples)."""

    attempted: int = 0
    succeeded: int = 0
    #: Creates (and replays) tried: a run with none has not tried to reach the operator.
    creates: int = 0
    #: By action and refusal (``create\t404 NotFound``): how many, and the first one's message.
    refusals: dict[str, tuple[int, str]] = dataclasses.field(default_factory=dict)

    def record(self, action: Action, outcome: Outcome) -> None:
        """Count one user's action with its outcome (None: not an action on objects, e.g. time passing)."""
        if outcome is None:
            return
        self.attempted += 1
        if isinstance(action, Create | ReplayLog):
            self.creates += 1
        if isinstance(outcome, Refusal):
            key = f"{_ACTIONS.get(type(action), type(action).__name__)}\t{outcome.code} {outcome.reason}"
            count, message = self.refusals.get(key, (0, outcome.message))
            self.refusals[key] = (count + 1, message)
        else:
            self.succeeded += 1

    def vacuous(self, examples: int) -> str | None:
        """Why the run has not exercised the operator (for the check's failure), or None if it has."""
        if self.succeeded or not self.creates:
            return None
        ranked = sorted(self.refusals.items(), key=lambda item: (-item[1][0], item[0]))
        by_action: dict[str, list[str]] = {}
        for key, (count, message) in ranked:
            action, refusal = key.split("\t", 1)
            by_action.setdefault(action, []).append(f"{refusal} ({message}) x{count}" if message else refusal)
        lines = []
        for action, refusals in list(by_action.items())[:_NAMED]:
            every = "every" if len(refusals) == 1 else "the"
            lines.append(f"{every} {action} answered {', '.join(refusals[:_NAMED])}")
        return (
            f"none of the {self.attempted} user actions on objects in {examples} example(s) has succeeded, so "
            f"the operator was never exercised: {'; '.join(lines)}. Check the namespace, the manifests (CRDs, "
            f"namespaces) and the specs that the actions use."
        )
