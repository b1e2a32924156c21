"""The catalogue of the checks is the one list of them: the docs' table, the strategies and the machines read it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pytest_kopf._catalogue import (
    BASELINE,
    CATALOGUE,
    CHECKS,
    DIRECT,
    comparing,
    deleting,
    perturbation_kinds,
    validate_checks,
)
from pytest_kopf.stateful import OperatorMachine
from pytest_kopf.strategies import PERTURBATIONS

DOCS = Path(__file__).parent.parent.parent / "docs" / "checks.md"


def documented_checks() -> list[str]:
    """The first column of the table of checks in docs/checks.md (its rows: | `name` | ... |)."""
    section = DOCS.read_text().split("## What each check means", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\| `([a-z-]+)` \|", section, flags=re.MULTILINE)


def test_the_docs_table_lists_exactly_the_catalogue_in_its_order() -> None:
    assert documented_checks() == list(CHECKS)


def test_the_strategies_perturb_as_the_catalogue_says() -> None:
    assert {name: check.perturbations for name, check in CATALOGUE.items()} == PERTURBATIONS
    assert perturbation_kinds(["retries", "crash-restart", "retries"]) == ("api-errors", "crashes")


def test_a_machine_makes_a_baseline_only_for_the_comparing_checks() -> None:
    assert comparing(["convergence", "retries"]) and not comparing(["convergence", "daemons"])
    assert [name for name, check in CATALOGUE.items() if check.compares == BASELINE] == [
        "idempotence",
        "retries",
        "crash-restart",
        "stale-reads",
        "withheld-events",
    ]
    machine = OperatorMachine.configured("M", checks=("stale-reads", "daemons"))
    assert machine.perturbation_kinds() == ("stale-reads",)
    assert [name for name, check in CATALOGUE.items() if check.compares == DIRECT] == ["transition"]
    assert comparing(["transition"], DIRECT) and not comparing(["transition"])


def test_the_oracles_come_first_and_transition_has_no_deletes() -> None:
    assert CHECKS[:5] == ("convergence", "consistency", "rollback", "transition", "cleanup")
    assert perturbation_kinds(["rollback"]) == ("reverts",)
    assert not deleting(["transition", "cleanup"]) and deleting(["cleanup", "finalizers"])


def test_unknown_or_no_checks_are_clear_errors() -> None:
    with pytest.raises(
        ValueError, match=r"Unknown check\(s\): 'speed'; the checks are: convergence, consistency, rollback"
    ):
        validate_checks(["convergence", "speed"])
    with pytest.raises(ValueError, match="No checks to run"):
        validate_checks([])
