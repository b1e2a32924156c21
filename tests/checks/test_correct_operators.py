"""Correct operators with randomness, time and children the cluster acts upon pass every check, with no ``mask=``.

Each of them was reported as broken before the checks learned their noise (see ``docs/checks.md``): random
credentials in a Secret, a UUID in the status, ``lastReconciled`` stamped by a timer (two objects 30 s apart),
conditions with ``lastTransitionTime``/``observedGeneration``, a Deployment (its ReplicaSets and Pods stamped by
the simulator's controllers; written once or twice as the operator sees two changes as one or not), its Pods'
generated names in the status, a NodePort Service (its cluster IP and node port allocated), a sync delete handler
that takes 30 s (while a graceful restart happens), a timer retried after kopf's default 60 s, and a child
replaced with the version read (a PUT that a 409 refuses).

The suite runs them with every check in one machine and a few examples each; ``KOPF_CHECKS_DEFAULT_BUDGET=1``
runs them with the docs' default budget instead: every check in a machine of its own, 100 examples of up to
20 steps each (minutes per operator).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from pytest_kopf.checks import CHECKS, check_operator

GALLERY = Path(__file__).parent / "gallery"
CRD = GALLERY / "crd.yaml"
RESOURCE = "gadgets.checks.example"

CORRECT = [
    "random_credentials_ok",
    "uuid_status_ok",
    "last_reconciled_ok",
    "conditions_ok",
    "deployment_owner_ok",
    "deployment_owner_ok+pod_names_ok",  # loaded together: the Pods' generated names observed into the status
    "service_owner_ok",
    "slow_delete_ok",
    "timer_retry_ok",
    "replace_ok",
]

DEFAULT_BUDGET = bool(os.environ.get("KOPF_CHECKS_DEFAULT_BUDGET"))
#: The docs' default budget (check_operator's defaults), or a bounded one for CI.
BUDGET: dict[str, Any] = {} if DEFAULT_BUDGET else {"combined": True, "max_examples": 3, "max_steps": 8}
#: In the bounded profile, deployment_owner_ok is checked loaded with pod_names_ok only (the same Deployment code,
#: a handler more): alone, it costs as much again (16 s of CPU) for little that the pair does not run.
CHECKED = CORRECT if DEFAULT_BUDGET else [name for name in CORRECT if name != "deployment_owner_ok"]


@pytest.mark.long_running
@pytest.mark.parametrize("name", CHECKED)
def test_a_correct_operator_passes_every_check_unmasked(name: str) -> None:
    paths = [GALLERY / f"{part}.py" for part in name.split("+")]
    report = check_operator(paths=paths, manifests=[CRD], resources=[RESOURCE], **BUDGET)
    print(f"{name}: {report}")  # what was run and learned, for -rP
    for check, figures in report.per_check.items():
        print(f"  {check}: {figures}; noise: {', '.join(report.noise.get(check, [])) or 'none'}")
    assert sorted(report.checks) == sorted(set(CHECKS) - {"consistency"})  # consistency: none declared
    assert report.examples >= BUDGET.get("max_examples", 100)
    learned = [field for fields in report.noise.values() for field in fields]
    assert not [field for field in learned if field.startswith(("Pod ", "ReplicaSet "))]  # not compared: not listed
