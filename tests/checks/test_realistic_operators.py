"""Operators written as real ones are, checked unchanged: they start, run, and get true findings only.

``realistic/typesense``: a cluster-scoped resource, a namespace per object with a ConfigMap, two Services and a
StatefulSet (with volume claims), all made from sync handlers with the official client, its objects rendered
from a YAML template by a sibling module. ``realistic/smoketest``: ``on.event`` handlers on pods drive Jobs
named after the pods (a sync handler and an async one calling the sync client). Each was checked with every
check at the docs' budget (``benchmarks/bench_realistic_checks.py --parts typesense,smoketest``); here, a few
examples of each check keep them passing. The smoke-test operator has one true finding there, kept as real
operators have it: ``retries`` finds that one 503 on the ``on.event`` handler's GET of its SmokeTest loses that
pod's probe for good (kopf does not retry event handlers, and a ready pod sends no more events).
``realistic/wazuh``: pykube-ng from sync handlers, Jinja templates rendered by a sibling module, a Secret with a
password drawn once, a ConfigMap and a DaemonSet whose pods carry the configuration's digest, and a timer that
reports the agents' readiness (every check at the docs' budget: ``--parts wazuh`` of the same benchmark).
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


def test_the_wazuh_agent_operator_passes() -> None:
    report = check_operator(
        paths=[REALISTIC / "wazuh" / "operator.py"],
        manifests=[REALISTIC / "wazuh" / "crd.yaml"],
        resources=["wazuhagents.security.example"],
        combined=True,
        max_examples=2,
        max_steps=6,
        seed=3,
    )
    assert all(figures["reach"]["succeeded"] for figures in report.per_check.values())
    learned = [field for fields in report.noise.values() for field in fields]
    assert 'Secret obj-0-authd data["authd.pass"]' in learned  # drawn once per world: noise, not a difference
