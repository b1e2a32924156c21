"""OperatorMachine subclassed by users: their own (async) rules and invariants, under plain pytest."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import settings

from pytest_kopf import stateful
from pytest_kopf.driving import tolerate
from pytest_kopf.stateful import OperatorMachine, invariant, rule

GALLERY = Path(__file__).parent / "gallery"
calls: list[str] = []


class OptionalField(OperatorMachine):
    paths = [GALLERY / "optional_field_ok.py"]
    manifests = [GALLERY / "crd.yaml"]
    resources = ["gadgets"]
    checks = ["convergence", "finalizers"]
    names = ["obj-0"]

    @rule()
    async def sized(self) -> None:
        calls.append("rule")
        await tolerate(
            self.cluster.create(
                {
                    "apiVersion": "checks.example/v1",
                    "kind": "Gadget",
                    "metadata": {"name": "sized"},
                    "spec": {"size": 3},
                }
            )
        )
        await self.cluster.sim.advance(5)

    @invariant()
    async def sized_is_doubled(self) -> None:
        calls.append("invariant")
        obj = await self.cluster.get("gadgets", "sized")
        if obj is not None and "create_fn" in obj.get("status", {}):
            assert obj["status"]["create_fn"]["double"] == 6


TestOptionalField = OptionalField.TestCase
TestOptionalField.settings = settings(max_examples=3, stateful_step_count=5, deadline=None)


def test_the_async_rules_and_invariants_have_run() -> None:
    OptionalField.TestCase("runTest").runTest()
    assert "rule" in calls and "invariant" in calls


def test_async_rules_decorated_by_hypothesis_itself_are_refused() -> None:
    import hypothesis.stateful

    with pytest.raises(TypeError, match=r"decorators of pytest_kopf\.stateful"):

        class Wrong(OperatorMachine):
            @hypothesis.stateful.rule()
            async def bad(self) -> None:
                pass

    assert stateful.rule is rule
