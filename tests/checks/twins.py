"""What the realistic suites assert of a correct operator and of a planted bug with its correct twin."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import pytest

from pytest_kopf.checks import CHECKS, CheckReport
from pytest_kopf.errors import OperatorCheckFailed

#: ``KOPF_CHECKS_DEFAULT_BUDGET=1``: the docs' default budget (minutes per operator), instead of a bounded one.
DEFAULT_BUDGET = bool(os.environ.get("KOPF_CHECKS_DEFAULT_BUDGET"))
#: The marks of a realistic suite's tests: at the default budget, each runs for more than the suite's timeout
#: (300 s), which would end it.
MARKS = [pytest.mark.filterwarnings("ignore::pytest_kopf.errors.SyncClientInLoopWarning")]
MARKS += [pytest.mark.timeout(0)] if DEFAULT_BUDGET else []


def assert_passes_every_check(report: CheckReport, name: str) -> None:
    print(f"{name}: {report}")  # what was run and learned, for -rP
    assert sorted(report.checks) == sorted(set(CHECKS) - {"consistency"})  # consistency: none declared
    assert all(figures["reach"]["succeeded"] for figures in report.per_check.values())


def assert_found_and_passing_on_twin(
    check: Callable[..., CheckReport], bug: str, twin: str, finder: str, **bounded: Any
) -> None:
    """The bug is found (by ``finder`` within the ``bounded`` budget; by any check at the default one), shrunk to at
    most 6 steps, and those steps pass on its correct twin: a true finding, not one the twin fails the same way."""
    options: dict[str, Any] = {} if DEFAULT_BUDGET else {"checks": [finder], **bounded}
    with pytest.raises(OperatorCheckFailed) as info:
        check(bug, seed=1, **options)
    found = info.value
    print(f"{bug}: {found.check} in {len(found.steps)} step(s)")
    assert found.check == finder or DEFAULT_BUDGET  # at the default budget, any check may find it first
    assert 1 <= len(found.steps) <= 6
    check(twin, checks=[found.check], initial_steps=found.steps, max_examples=1, max_steps=1, seed=1)
