"""Sites' operators in the style users write them (the official client, ``kopf.adopt``, sync handlers and a sync
daemon, a sibling module of helpers), checked unchanged: true findings only.

``realistic/sites`` (``sites.hosting.example``): a Deployment, a Service and a settings ConfigMap whose digest
the pods carry, so that a change of the settings rolls them (``hashed_ok``); a Service named after the site's
``hostname`` and a debug ConfigMap while ``debug`` is on, with ``kopf.on.field``'s ``old=``/``new=`` filters and
``when=`` (``renamed_ok``); a daemon polling the Deployment's rollout every 15 s into ``Available`` and
``Progressing`` conditions with their ``lastTransitionTime`` (``watched_ok``). Each has a buggy twin with a bug
users make: the digest taken from the ConfigMap before it is updated (``hashed_bug``), the old Service left
behind on a rename (``renamed_bug``), ``Progressing`` never cleared after a rollout (``watched_bug``). A bug
counts as found when its shrunk steps pass on the correct twin.

The suite runs them with a few examples of a fixed seed; ``KOPF_CHECKS_DEFAULT_BUDGET=1`` runs every check at
the docs' default budget (100 examples of up to 20 steps each: minutes per operator).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_kopf.checks import CheckReport, check_operator

from .twins import DEFAULT_BUDGET, MARKS, assert_found_and_passing_on_twin, assert_passes_every_check

SITES = Path(__file__).parent / "realistic" / "sites"
RESOURCE = "sites.hosting.example"

#: The correct operators and the check that finds each one's buggy twin (``<name>_bug.py``).
TWINS = {"hashed": "transition", "renamed": "transition", "watched": "transition"}

#: The docs' default budget (check_operator's defaults), or a bounded one for CI.
BUDGET: dict[str, Any] = {} if DEFAULT_BUDGET else {"combined": True, "max_examples": 3, "max_steps": 8, "seed": 3}
pytestmark = MARKS


def check(operator: str, **options: Any) -> CheckReport:
    return check_operator(
        paths=[SITES / f"{operator}.py"], manifests=[SITES / "crd.yaml"], resources=[RESOURCE], **options
    )


@pytest.mark.parametrize("name", TWINS)
def test_a_correct_sites_operator_passes_every_check(name: str) -> None:
    assert_passes_every_check(check(f"{name}_ok", **BUDGET), f"{name}_ok")


@pytest.mark.parametrize(("name", "finder"), TWINS.items())
def test_a_sites_bug_is_found_and_its_steps_pass_on_the_correct_twin(name: str, finder: str) -> None:
    assert_found_and_passing_on_twin(check, f"{name}_bug", f"{name}_ok", finder, max_examples=40, max_steps=6)
