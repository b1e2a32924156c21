"""A check's verdict depends on its settings only, not on what the process has run or imported before.

In a whole test session, the stale-reads check once missed its planted bug: hypothesis' own backend draws
constants found in the modules loaded when it starts, and one more collected test module (the protobuf tests'
tables) changed the examples. Here the same check runs in a fresh process and in one that has done unrelated
work first (imported modules full of constants, made garbage and tuned the collector, run another check); and
twice in this process with such work in between: the same failure, shrunk steps, trace and report each time.
"""

from __future__ import annotations

import gc
import importlib
import random
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_kopf.checks import CheckReport, check_operator
from pytest_kopf.errors import OperatorCheckFailed

GALLERY = Path(__file__).parent / "gallery"
CRD = GALLERY / "crd.yaml"
RESOURCE = "gadgets.checks.example"


def failure_of(name: str, check: str) -> OperatorCheckFailed:
    with pytest.raises(OperatorCheckFailed) as info:
        check_operator(
            paths=[GALLERY / f"{name}.py"],
            manifests=[CRD],
            resources=[RESOURCE],
            checks=[check],
            max_examples=100,
            max_steps=8,
            names=["obj-0"],
            settle_timeout=300,
        )
    return info.value


def report_of(name: str, check: str, *, examples: int = 8) -> CheckReport:
    return check_operator(
        paths=[GALLERY / f"{name}.py"],
        manifests=[CRD],
        resources=[RESOURCE],
        checks=[check],
        max_examples=examples,
        max_steps=8,
        names=["obj-0"],
        settle_timeout=300,
    )


def figures(report: CheckReport) -> tuple[int, int, int, int, float]:
    return report.examples, report.steps, report.faults, report.crashes, report.virtual_seconds


def unrelated_work(tmp_path: Path) -> None:
    """What other tests of a session do: import modules (full of constants), make garbage, tune the collector."""
    module = tmp_path / "unrelated_constants.py"
    draw = random.Random(42)
    module.write_text(
        f"NUMBERS = {[draw.randrange(10 ** draw.randrange(1, 7)) for _ in range(400)]!r}\n"
        f"WORDS = {[''.join(draw.choices('abcdefghijklmnopqrstuvwxyz-', k=6)) for _ in range(100)]!r}\n"
    )
    sys.path.insert(0, str(tmp_path))
    try:
        importlib.import_module("unrelated_constants")
    finally:
        sys.path.remove(str(tmp_path))
    garbage = [[object() for _ in range(50)] for _ in range(2000)]
    gc.set_threshold(*(value + 1 for value in gc.get_threshold()))
    del garbage
    report_of("crash_child_ok", "crash-restart", examples=2)  # another check run: its size does not matter


@pytest.mark.long_running
def test_a_failure_is_the_same_after_unrelated_work_in_the_process(tmp_path: Path) -> None:
    thresholds = gc.get_threshold()
    try:
        before = failure_of("stale_read_bug", "stale-reads")
        unrelated_work(tmp_path)
        after = failure_of("stale_read_bug", "stale-reads")
    finally:
        gc.set_threshold(*thresholds)
        sys.modules.pop("unrelated_constants", None)
    assert [step.code() for step in after.steps] == [step.code() for step in before.steps]
    assert after.trace_tail == before.trace_tail
    assert after.reproduction == before.reproduction
    assert after.report and before.report and after.report != before.report  # two files: neither overwritten
    assert str(after).replace(after.report, "") == str(before).replace(before.report, "")
    assert Path(after.report).read_bytes() == Path(before.report).read_bytes()  # the same report, byte for byte


@pytest.mark.long_running
def test_a_passing_report_is_the_same_after_unrelated_work_in_the_process(tmp_path: Path) -> None:
    thresholds = gc.get_threshold()
    try:
        before = report_of("stale_read_ok", "retries")
        unrelated_work(tmp_path)
        after = report_of("stale_read_ok", "retries")
    finally:
        gc.set_threshold(*thresholds)
        sys.modules.pop("unrelated_constants", None)
    assert figures(after) == figures(before)
    assert before.faults > 0  # the examples did inject faults (the same ones)


@pytest.mark.long_running
def test_a_planted_bug_is_found_with_other_test_modules_collected_first() -> None:
    """The session that missed the bug, in small: the protobuf and swagger tests collected before the gallery."""
    root = Path(__file__).parents[2]
    gallery = "tests/checks/test_gallery.py::test_a_planted_bug_is_caught_shrunk_and_reproduced[stale_read-stale-reads]"
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:randomly",
        "tests/sim/test_protobuf.py",
        "tests/sim/test_swagger.py",
        gallery,
        "-k",
        "stale_read or not gallery",
    ]
    done = subprocess.run(command, cwd=root, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout[-3000:]
