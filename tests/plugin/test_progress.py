"""The progress line of long checks: live on a terminal, one line per check elsewhere, nothing with -q."""

from __future__ import annotations

import os
import re
import select
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_kopf import _progress as progress
from pytest_kopf._progress import CheckProgress, TerminalProgress
from pytest_kopf.checks import check_operator
from pytest_kopf.errors import OperatorCheckFailed

from .conftest import BASE, NO_ASYNCIO

ROOT = Path(__file__).parents[2]
GALLERY = ROOT / "tests" / "checks" / "gallery"
# The docs' example (examples/05-hypothesis) with a budget small enough for a test: two checks, two examples each.
CHECKED = f"""
from pytest_kopf.checks import check_operator


def test_every_check_in_one_line():
    check_operator(
        paths=[{str(ROOT / "examples" / "05-hypothesis" / "example.py")!r}],
        manifests=[{str(ROOT / "examples" / "crd.yaml")!r}],
        resources=["kopfexamples.kopf.dev"],
        checks=["convergence", "crash-restart"],
        max_examples=2,
        max_steps=3,
        names=["ex-0"],
    )
"""
LINE = re.compile(
    r"kopf check (convergence|crash-restart): 2/2 examples, \d+ steps?, (\d+ plans?, )?\d+ faults?, \d+ crash(es)?, "
    r"0 failures; "
    r"\d+\.\d s wall, [\d,]+ s virtual"
)


def run_in_terminal(pytester: pytest.Pytester, *args: str, timeout: float = 120) -> str:
    """A pytest process whose output is a terminal (a pseudo-terminal, 160 columns): all that it printed, raw."""
    import fcntl
    import termios

    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 160, 0, 0))
    env = {key: value for key, value in os.environ.items() if key not in ("PYTEST_ADDOPTS", "COLUMNS")}
    process = subprocess.Popen(
        [sys.executable, "-m", "pytest", *args],
        cwd=pytester.path,
        stdin=subprocess.DEVNULL,
        stdout=slave,
        stderr=slave,
        env=env,
    )
    os.close(slave)
    chunks = []
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 1.0)
            if not ready:
                if process.poll() is not None:
                    break
                continue
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the process has closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        process.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(master)
    return b"".join(chunks).decode("utf-8", "replace")


@pytest.mark.timeout(240)
def test_a_terminal_shows_a_live_line_per_check_and_keeps_it_as_the_checks_summary(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_robustness=CHECKED)
    output = run_in_terminal(pytester, "--kopf-sim", *NO_ASYNCIO, *BASE, "-p", "no:randomly")
    assert "1 passed" in output, output
    for check in ("convergence", "crash-restart"):
        # Rewritten in place while the examples run (a carriage return before each version)...
        assert re.search(rf"\rkopf check {check}: 1/2 examples, \d+ steps?", output), output
        # ...and left as the check's summary: the last version, ended by a line break.
        finals = [line for line in re.split(r"\r\n|\n", output) if f"kopf check {check}:" in line]
        assert len(finals) == 1, finals
        assert LINE.search(finals[0].rsplit("\r", 1)[-1]), finals[0]


def test_output_that_is_not_a_terminal_gets_one_line_per_check(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_robustness=CHECKED)
    result = pytester.runpytest_inprocess("--kopf-sim", *NO_ASYNCIO, *BASE)
    result.assert_outcomes(passed=1)
    lines = [line for line in result.outlines if "kopf check" in line]
    assert len(lines) == 2, result.stdout.str()
    assert all(LINE.fullmatch(line) for line in lines), lines
    # The fault plans run (crashes placed after the operator's writes) are counted for the check that has them.
    assert re.search(r"kopf check crash-restart: 2/2 examples, \d+ steps?, [1-9]\d* plans?, ", lines[1]), lines
    assert " plan" not in lines[0], lines
    assert "\r" not in result.stdout.str()
    result = pytester.runpytest_inprocess("-q", "--kopf-sim", *NO_ASYNCIO, *BASE)  # -q: nothing, terminal or not
    result.assert_outcomes(passed=1)
    assert "kopf check" not in result.stdout.str()


class Reporter:
    """What the display writes, as the terminal reporter would get it."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def ensure_newline(self) -> None:
        self.calls.append(("newline", None))

    def rewrite(self, line: str, **markup: bool) -> None:
        self.calls.append(("rewrite", line))

    def write(self, text: str, **markup: bool) -> None:
        self.calls.append(("write", text))

    def write_line(self, line: str) -> None:
        self.calls.append(("line", line))

    def flush(self) -> None:
        pass


def test_the_live_line_is_rewritten_a_few_times_a_second_at_most() -> None:
    now = [100.0]
    reporter = Reporter()
    display = TerminalProgress(reporter, live=True, clock=lambda: now[0])
    state = CheckProgress("retries", budget=100, examples=1, steps=3)
    display.update(state)
    state.examples = 2
    display.update(state)  # too soon: not shown
    now[0] += 0.3
    state.examples = 3
    display.update(state)
    state.finished = state.started + 2.0
    display.finish(state)
    kinds = [kind for kind, _ in reporter.calls]
    assert kinds == ["newline", "rewrite", "rewrite", "rewrite", "write"]
    assert [line.split(":")[1].split(",")[0] for kind, line in reporter.calls if kind == "rewrite"] == [
        " 1/100 examples",
        " 3/100 examples",
        " 3/100 examples",
    ]
    assert reporter.calls[-1] == ("write", "\n")

    quiet = Reporter()
    display = TerminalProgress(quiet, live=False)
    display.update(state)
    display.finish(state)
    assert quiet.calls == [("line", state.line())]


def test_the_line_says_what_a_failing_check_has_done() -> None:
    state = CheckProgress("crash-restart", budget=10, examples=14, steps=1234, plans=56, faults=7, crashes=1)
    state.failures, state.shrinking, state.virtual_seconds = 5, True, 12345.6
    state.finished = state.started + 3.04
    assert state.line() == (
        "kopf check crash-restart: 10/10 examples (+4 replayed), shrinking, 1,234 steps, 56 plans, 7 faults, "
        "1 crash, 5 failures; 3.0 s wall, 12,346 s virtual"
    )


def test_a_failing_check_counts_its_failures_and_its_shrinking() -> None:
    seen: list[CheckProgress] = []

    class Recorder:
        def update(self, state: CheckProgress) -> None:
            pass

        def finish(self, state: CheckProgress) -> None:
            seen.append(state)

    display = Recorder()
    progress.register(display)
    try:
        with pytest.raises(OperatorCheckFailed):
            check_operator(
                paths=[GALLERY / "optional_field_bug.py"],
                manifests=[GALLERY / "crd.yaml"],
                resources=["gadgets.checks.example"],
                checks=["convergence"],
                max_examples=50,
                max_steps=6,
                names=["obj-0"],
                settle_timeout=300,
            )
    finally:
        progress.unregister(display)
    [state] = seen
    assert state.check == "convergence" and state.shrinking
    assert state.failures >= 2  # the example found, and the runs of its shrinking that still failed
    assert state.finished is not None and state.examples >= state.failures
