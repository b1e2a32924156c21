"""Runs side by side: aligned at their anchors (the user's actions), then item by item where they agree.

Between two anchors, the items of two runs are matched by their identity (what they are, not when) with
the longest matching blocks (``difflib.SequenceMatcher``): what both runs did stands on one row, what
only one did stands opposite an empty cell, and what each did otherwise stands on a row marked as
differing. The first such row is where the runs part.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Sequence

from .model import Item, Run

__all__ = ["Row", "align", "first_divergence"]


@dataclasses.dataclass(frozen=True)
class Row:
    """One row of the page: an item (or nothing) per run; ``same``: the runs agree on this row."""

    cells: tuple[Item | None, ...]
    same: bool = True

    @property
    def anchor(self) -> bool:
        return any(item is not None and item.anchor for item in self.cells)


def align(runs: Sequence[Run]) -> list[Row]:
    """The rows of one run (an item each), or of two runs side by side (see the module's docs)."""
    if len(runs) == 1:
        return [Row((item,)) for item in runs[0].items]
    if len(runs) != 2:
        raise ValueError(f"A page shows one run or two side by side, not {len(runs)}.")
    left, right = (_segments(run.items) for run in runs)
    rows: list[Row] = []
    for index in range(max(len(left), len(right))):
        rows.extend(_paired(_at(left, index), _at(right, index)))
    return rows


def first_divergence(rows: Sequence[Row]) -> int | None:
    """The index of the first row where the runs differ (None: they agree throughout)."""
    return next((index for index, row in enumerate(rows) if not row.same), None)


def _segments(items: Sequence[Item]) -> list[list[Item]]:
    """The items before the first anchor, then each anchor with the items up to the next one."""
    segments: list[list[Item]] = [[]]
    for item in items:
        if item.anchor:
            segments.append([])
        segments[-1].append(item)
    return segments


def _at(segments: list[list[Item]], index: int) -> list[Item]:
    return segments[index] if index < len(segments) else []


def _paired(left: list[Item], right: list[Item]) -> list[Row]:
    matcher = difflib.SequenceMatcher(
        None, [item.identity for item in left], [item.identity for item in right], autojunk=False
    )
    rows: list[Row] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            rows.extend(Row((a, b)) for a, b in zip(left[i1:i2], right[j1:j2], strict=True))
            continue
        ours, theirs = left[i1:i2], right[j1:j2]
        for offset in range(max(len(ours), len(theirs))):
            a = ours[offset] if offset < len(ours) else None
            b = theirs[offset] if offset < len(theirs) else None
            rows.append(Row((a, b), same=False))
    return rows
