"""The progress of a long :func:`~pytest_kopf.checks.check_operator` run: one line per check in pytest's terminal.

The docs' defaults (100 examples of 20 steps, for every check) run for minutes; without this, nothing
would show until the end. The plugin registers a :class:`TerminalProgress` for the session (through
pytest's terminal reporter): on a terminal, one line per check, rewritten in place as the examples go
(at most a few times a second), then left as that check's summary; where the output is not a
terminal (CI logs, a pipe, pytester), only that summary line per check; with ``-q`` (or in an xdist
worker, whose output nobody sees), nothing. Outside of pytest (no display registered), nothing either.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable, Iterator
from typing import Any, Protocol

__all__ = ["CheckProgress", "ProgressDisplay", "TerminalProgress", "current_display", "register", "unregister"]

#: Real seconds between two rewrites of the live line: often enough to see it move, rarely enough to cost nothing.
REFRESH = 0.25


@dataclasses.dataclass
class CheckProgress:
    """Where one check (or one combined group of checks) of a run is."""

    check: str
    budget: int
    examples: int = 0
    steps: int = 0
    plans: int = 0
    faults: int = 0
    crashes: int = 0
    failures: int = 0
    virtual_seconds: float = 0.0
    shrinking: bool = False
    started: float = dataclasses.field(default_factory=time.perf_counter)
    finished: float | None = None

    @property
    def wall_seconds(self) -> float:
        return (self.finished if self.finished is not None else time.perf_counter()) - self.started

    def line(self) -> str:
        examples = f"{min(self.examples, self.budget)}/{self.budget} examples"
        if self.examples > self.budget:
            examples += f" (+{self.examples - self.budget} replayed)"
        if self.shrinking:
            examples += ", shrinking"
        figures = [examples, _count(self.steps, "step")]
        if self.plans:
            figures.append(_count(self.plans, "plan"))
        figures += [_count(self.faults, "fault"), _count(self.crashes, "crash", "crashes")]
        figures.append(_count(self.failures, "failure"))
        return (
            f"kopf check {self.check}: {', '.join(figures)}; "
            f"{self.wall_seconds:.1f} s wall, {self.virtual_seconds:,.0f} s virtual"
        )


def _count(number: int, one: str, many: str = "") -> str:
    return f"{number:,} {one if number == 1 else many or one + 's'}"


class ProgressDisplay(Protocol):
    """Where the progress goes: told of every change, and of each check's end."""

    def update(self, progress: CheckProgress) -> None: ...

    def finish(self, progress: CheckProgress) -> None: ...


class TerminalProgress:
    """The progress in pytest's terminal (``live``: rewritten in place, on a terminal; else the final line only)."""

    def __init__(
        self, reporter: Any, capture_manager: Any = None, *, live: bool, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.reporter = reporter
        self.capture_manager = capture_manager
        self.live = live
        self.clock = clock
        self._shown: float | None = None  # when the live line was last written (None: not on the screen)

    @contextlib.contextmanager
    def _uncaptured(self) -> Iterator[None]:
        """Write past pytest's capturing of the test's output (as pytest's live logging does)."""
        if self.capture_manager is None:
            yield
            return
        with self.capture_manager.global_and_fixture_disabled():
            yield

    def update(self, progress: CheckProgress) -> None:
        if not self.live:
            return
        now = self.clock()
        if self._shown is not None and now - self._shown < REFRESH:
            return
        with self._uncaptured():
            if self._shown is None:
                self.reporter.ensure_newline()  # after the test's file name (or its id with -v)
            self.reporter.rewrite(progress.line(), erase=True)
            self.reporter.flush()
        self._shown = now

    def finish(self, progress: CheckProgress) -> None:
        with self._uncaptured():
            if self.live and self._shown is not None:
                self.reporter.rewrite(progress.line(), erase=True)
                self.reporter.write("\n", flush=True)
            else:
                self.reporter.write_line(progress.line())
                self.reporter.flush()
        self._shown = None


_displays: list[ProgressDisplay] = []


def current_display() -> ProgressDisplay | None:
    """The display of the innermost pytest session running now (a pytester run inside a test has its own)."""
    return _displays[-1] if _displays else None


def register(display: ProgressDisplay) -> None:
    """Make this display the current one (until it is unregistered: a pytest session's own, for its duration)."""
    _displays.append(display)


def unregister(display: ProgressDisplay) -> None:
    if display in _displays:
        _displays.remove(display)
