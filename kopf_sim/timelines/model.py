"""The data of a timeline page: runs of items on lanes, and the sections below them.

A producer (a log's view, a check's report) makes these from what it knows; the renderer draws
them without knowing where they came from.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

__all__ = [
    "Code",
    "DifferenceRow",
    "Differences",
    "Item",
    "Lane",
    "Page",
    "Run",
    "Section",
    "Table",
    "Text",
]


@dataclasses.dataclass(frozen=True)
class Lane:
    """A column of a run: an actor (the user, an operator's incarnation, the simulator) or an object."""

    id: str
    title: str
    #: ``"actor"`` or ``"object"``: only for the styling and the legend.
    role: str = "object"


@dataclasses.dataclass(frozen=True)
class Item:
    """One happening on one lane at one moment.

    ``kind`` names its sort (``action``, ``request``, ``change``, ``fault``, ``crash``, ``handler``, ``log`` …)
    and becomes a CSS class; ``outcome`` (``ok``, ``failed`` or empty) colours it. ``label`` is its one-line
    summary; ``details`` the full text shown on hover or click (a request's body, an event's object, a
    handler's exception, a log line). ``key`` is what it is regardless of when and in which run it happened:
    two runs are aligned by it (empty: the kind and the label). An ``anchor`` is a user's action: two runs
    are aligned at their anchors first. An item ``aside`` is shown in its place but left out of the alignment:
    one run's own doing by design (e.g. a fault injected into it), not a sign that the runs have parted.
    """

    t: float
    lane: str
    kind: str
    label: str
    details: str = ""
    outcome: str = ""
    key: str = ""
    anchor: bool = False
    aside: bool = False

    @property
    def identity(self) -> str:
        return self.key or f"{self.kind} {self.label}"


@dataclasses.dataclass(frozen=True)
class Run:
    """One run (a world, a log): its lanes in the order shown, and its items in the order they happened."""

    title: str
    lanes: Sequence[Lane]
    items: Sequence[Item]


@dataclasses.dataclass(frozen=True)
class Text:
    """Paragraphs of plain text (a failure's message, a summary)."""

    title: str
    paragraphs: Sequence[str]
    id: str = ""


@dataclasses.dataclass(frozen=True)
class Code:
    """A block of code or output, with a button that copies it (e.g. a reproduction)."""

    title: str
    text: str
    id: str = ""
    copyable: bool = True


@dataclasses.dataclass(frozen=True)
class DifferenceRow:
    """A field that differs between two documents; ``noise``: it differs but does not count (masked, learned)."""

    where: str
    path: str
    left: str
    right: str
    noise: bool = False


@dataclasses.dataclass(frozen=True)
class Differences:
    """The fields in which two states differ, side by side; the noise greyed."""

    title: str
    left_title: str
    right_title: str
    rows: Sequence[DifferenceRow]
    id: str = ""
    #: What the comparison found when nothing differs, or a note on the rows.
    note: str = ""


@dataclasses.dataclass(frozen=True)
class Table:
    """A small table of figures (e.g. what an exploration covered)."""

    title: str
    header: Sequence[str]
    rows: Sequence[Sequence[str]]
    id: str = ""


Section = Text | Code | Differences | Table


@dataclasses.dataclass(frozen=True)
class Page:
    """A whole page: a title, the runs (one, or two side by side), and the sections around them.

    ``before``: sections above the timeline (what failed); ``after``: below it (differences, reproduction).
    """

    title: str
    runs: Sequence[Run]
    before: Sequence[Section] = ()
    after: Sequence[Section] = ()
