"""Operators with children, written as users write them, checked unchanged: true findings only.

``realistic/webapp``: web apps (``webapps.shop.example``) whose operators make Deployments, Services, ConfigMaps
and Secrets with the official client and ``kopf.adopt``, from sync handlers, sharing a sibling module. The correct
ones bring randomness and time: a password drawn once (``secrets.token_urlsafe``), an instance id
(``uuid.uuid4``), a ``Ready`` condition with its ``lastTransitionTime`` and ``observedGeneration``
(``stack_ok``); a sync delete handler that drains for 30 s (``teardown_ok``); a timer that stamps
``lastReconciled`` every 30 s (``heartbeat_ok``); a timer retried after kopf's default delay of 60 s until a
rollout is done (``rollout_ok``). Each planted bug has a fixed twin: a change of ``replicas`` that never reaches
the Deployment (``scale``), a port changed by a strategic merge patch that keeps the old one (``ports``), a
ConfigMap with a generated name made twice across a crash (``config``), a ConfigMap that outlives its app
(``orphans``). A bug counts as found when its shrunk steps pass on its fixed twin.

The suite runs them with a few examples of a fixed seed (every check in one machine for the correct ones, the
bug's check for the twins); ``KOPF_CHECKS_DEFAULT_BUDGET=1`` runs every check at the docs' default budget
(100 examples of up to 20 steps each: minutes per operator).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_kopf.checks import CheckReport, check_operator

from .twins import DEFAULT_BUDGET, MARKS, assert_found_and_passing_on_twin, assert_passes_every_check

WEBAPP = Path(__file__).parent / "realistic" / "webapp"
RESOURCE = "webapps.shop.example"

CORRECT = ["stack_ok", "teardown_ok", "heartbeat_ok", "rollout_ok"]
#: The planted bugs (``<name>_bug.py``, fixed in ``<name>_fixed.py``) and the check that finds each.
TWINS = {"scale": "transition", "ports": "transition", "config": "crash-restart", "orphans": "cleanup"}

#: The docs' default budget (check_operator's defaults), or a bounded one for CI.
BUDGET: dict[str, Any] = {} if DEFAULT_BUDGET else {"combined": True, "max_examples": 3, "max_steps": 8, "seed": 3}
pytestmark = MARKS


def check(operator: str, **options: Any) -> CheckReport:
    return check_operator(
        paths=[WEBAPP / f"{operator}.py"], manifests=[WEBAPP / "crd.yaml"], resources=[RESOURCE], **options
    )


@pytest.mark.parametrize("operator", [*CORRECT, *(f"{name}_fixed" for name in TWINS)])
def test_a_correct_operator_with_children_passes_every_check(operator: str) -> None:
    assert_passes_every_check(check(operator, **BUDGET), operator)


@pytest.mark.parametrize(("name", "finder"), TWINS.items())
def test_a_planted_bug_is_found_and_its_steps_pass_on_the_fixed_twin(name: str, finder: str) -> None:
    assert_found_and_passing_on_twin(check, f"{name}_bug", f"{name}_fixed", finder, max_examples=20, max_steps=8)
