"""Operators written as real ones are, checked unchanged: they start, run, and get true findings only.

``realistic/typesense``: a cluster-scoped resource, a namespace per object with a ConfigMap, two Services and a
StatefulSet (with volume claims), all made from sync handlers with the official client, its objects rendered
from a YAML template by a sibling module. ``realistic/smoketest``: ``on.event`` handlers on pods drive Jobs
named after the pods (a sync handler and an async one calling the sync client). Each was checked with every
check at the docs' budget (``benchmarks/bench_realistic_checks.py --parts typesense,smoketest``); here, a few
examples of each check keep them passing. The smoke-test operator has one true finding there, kept as real
operators have it: ``retries`` finds that one 503 on the ``on.event`` handler's GET of its SmokeTest loses that
pod's probe for good (kopf does not retry event handlers, and a ready pod sends no more events).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_kopf.checks import check_operator

REALISTIC = Path(__file__).parent / "realistic"
pytestmark = pytest.mark.filterwarnings("ignore::pytest_kopf.errors.SyncClientInLoopWarning")


def test_the_typesense_operator_passes() -> None:
    report = check_operator(
        paths=[REALISTIC / "typesense" / "operator.py"],
        manifests=[REALISTIC / "typesense" / "crd.yaml"],
        resources=["typesenseclusters.search.example"],
        checks=["convergence", "crash-restart", "idempotence", "rollback", "transition"],
        max_examples=2,
        max_steps=4,
    )
    assert all(figures["reach"]["succeeded"] for figures in report.per_check.values())


def test_the_smoke_test_operator_passes() -> None:
    report = check_operator(
        paths=[REALISTIC / "smoketest" / "operator.py"],
        manifests=[REALISTIC / "smoketest" / "crd.yaml"],
        resources=["smoketests.qa.example"],
        checks=["convergence", "crash-restart", "withheld-events", "transition", "cleanup"],
        max_examples=3,
        max_steps=5,
    )
    assert all(figures["reach"]["succeeded"] for figures in report.per_check.values())
