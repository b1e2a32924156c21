"""A copier as real operators are written, checked unchanged: every point of the real operators' issue at once.

``realistic/copier.py`` imports its clients from a sibling module that builds them at its import (the official
client, from the kubeconfig), calls that sync client from an ``async def`` handler, and copies a Secret into
another namespace besides a Deployment of its own. ``copier_bug.py`` gives the copy a generated name.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_kopf.checks import check_operator
from pytest_kopf.errors import OperatorCheckFailed
from pytest_kopf.strategies.steps import CrashAfterWrites

HERE = Path(__file__).parent
REALISTIC = HERE / "realistic"
MANIFESTS = [HERE / "gallery" / "crd.yaml", REALISTIC / "namespace.yaml"]
RESOURCE = "gadgets.checks.example"
pytestmark = pytest.mark.filterwarnings("ignore::pytest_kopf.errors.SyncClientInLoopWarning")


def test_the_copier_passes() -> None:
    report = check_operator(
        paths=[REALISTIC / "copier.py"],
        manifests=MANIFESTS,
        resources=[RESOURCE],
        checks=["convergence", "crash-restart", "idempotence"],
        max_examples=8,
        max_steps=6,
    )
    assert all(figures["reach"]["succeeded"] for figures in report.per_check.values())


def test_the_copiers_bug_is_found_in_the_other_namespace() -> None:
    with pytest.raises(OperatorCheckFailed) as info:
        check_operator(
            paths=[REALISTIC / "copier_bug.py"],
            manifests=MANIFESTS,
            resources=[RESOURCE],
            checks=["crash-restart"],
            initial_steps=[CrashAfterWrites(2)],  # right after the copy's create (the finalizer is the 1st write)
            max_examples=20,
            max_steps=4,
            names=["obj-0"],
        )
    assert info.value.check == "crash-restart"
    assert "generateName: obj-0-copy-" in str(info.value) and "namespace: copies" in str(info.value)
