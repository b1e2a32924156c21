"""Shrinking stays inside the strategies that made the steps: a user's ``specs=`` are never replaced.

A failing sequence is shrunk by removing steps and simplifying them; a spec simplified into one that the
user's strategy can never make (``spec: {}`` for a strategy that always sets ``size``) would report steps that
cannot happen, and their reproduction may fail otherwise (a ``KeyError`` on the field the user always sets).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import find
from hypothesis import strategies as st

from pytest_kopf.checks import check_operator
from pytest_kopf.errors import OperatorCheckFailed
from pytest_kopf.strategies.schemas import CustomResource
from pytest_kopf.strategies.steps import CrashAfterWrites, Create, PatchSpec, user_actions

GALLERY = Path(__file__).parent / "gallery"
CRD = GALLERY / "crd.yaml"
RESOURCE = "gadgets.checks.example"
SIZES = st.fixed_dictionaries({"size": st.integers(1, 9), "mode": st.sampled_from(["fast", "slow"])})


def test_a_users_specs_are_kept_whole_by_the_shrinker() -> None:
    with pytest.raises(OperatorCheckFailed) as info:
        check_operator(
            paths=[GALLERY / "crash_child_bug.py"],  # a child with a generated name: two after a crash
            manifests=[CRD],
            resources=[RESOURCE],
            checks=["crash-restart"],
            specs={"gadgets": SIZES},
            initial_steps=[CrashAfterWrites(1)],  # right after the child's create: the bug shows at the first create
            max_examples=30,
            max_steps=6,
            names=["obj-0"],
        )
    specs = [step.body["spec"] for step in info.value.steps if isinstance(step, Create)]
    specs += [step.spec for step in info.value.steps if isinstance(step, PatchSpec)]
    assert specs, info.value.steps
    for spec in specs:  # each one as the strategy makes them: both fields, in range
        assert set(spec) == {"size", "mode"} and 1 <= spec["size"] <= 9, info.value


def test_the_schemas_specs_lose_only_what_the_schema_leaves_optional() -> None:
    crd: dict[str, Any] = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "things.checks.example"},
        "spec": {
            "group": "checks.example",
            "scope": "Namespaced",
            "names": {"plural": "things", "singular": "thing", "kind": "Thing"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": {
                                    "type": "object",
                                    "required": ["size"],
                                    "properties": {"size": {"type": "integer"}, "mode": {"type": "string"}},
                                }
                            },
                        }
                    },
                }
            ],
        },
    }
    resource = CustomResource.from_crd(crd)
    create = find(user_actions([resource]), lambda step: isinstance(step, Create))
    full = Create({**create.body, "spec": {"size": 1, "mode": "x"}}, removable=create.removable)
    assert [step.body["spec"] for step in full.simpler() if isinstance(step, Create)] == [{"size": 1}]
    mine = find(user_actions([resource], specs={"things": SIZES}), lambda step: isinstance(step, Create))
    assert mine.simpler() == []
    patch = find(user_actions([resource], specs={"things": SIZES}), lambda step: isinstance(step, PatchSpec))
    assert patch.simpler() == []
    assert Create({"spec": {"a": 1, "b": 2}}).simpler()  # a step written by hand: any field may go
