"""Runs side by side: aligned at their anchors (the user's actions), then item by item where they agree.

Between two anchors, the items of two runs are matched by their identity (what they are, not when) with
the longest matching blocks (``difflib.SequenceMatcher``): what both runs did stands on one row, what
only one did stands opposite an empty cell, and what each did otherwise stands on a row marked as
differing. The first such row is where the runs part.
"""

from __future__ import annotations

import collections
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
    ours = [item for item in left if not item.aside]
    theirs = [item for item in right if not item.aside]
    matcher = difflib.SequenceMatcher(
        None, [item.identity for item in ours], [item.identity for item in theirs], autojunk=False
    )
    rows: list[Row] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            rows.extend(Row((a, b)) for a, b in zip(ours[i1:i2], theirs[j1:j2], strict=True))
            continue
        for offset in range(max(i2 - i1, j2 - j1)):
            a = ours[i1 + offset] if i1 + offset < i2 else None
            b = theirs[j1 + offset] if j1 + offset < j2 else None
            rows.append(Row((a, b), same=False))
    return _with_asides(rows, left, right)


def _with_asides(rows: list[Row], left: list[Item], right: list[Item]) -> list[Row]:
    """The rows, with each run's items set aside put back in their places (each alone on a row of its own)."""
    positions = [{id(item): index for index, item in enumerate(items)} for items in (left, right)]
    asides = [collections.deque((i, item) for i, item in enumerate(items) if item.aside) for items in (left, right)]
    merged: list[Row] = []

    def flush(side: int, before: int) -> None:
        while asides[side] and asides[side][0][0] < before:
            _, item = asides[side].popleft()
            merged.append(Row((item, None) if side == 0 else (None, item)))

    for row in rows:
        for side, item in enumerate(row.cells):
            if item is not None:
                flush(side, positions[side][id(item)])
        merged.append(row)
    flush(0, len(left))
    flush(1, len(right))
    return merged
