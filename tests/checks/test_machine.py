"""OperatorMachine subclassed by users: their own (async) rules and invariants, under plain pytest."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st

from pytest_kopf import stateful
from pytest_kopf.driving import tolerate
from pytest_kopf.stateful import OperatorMachine, invariant, precondition, rule
from pytest_kopf.strategies.steps import CrashAfterWrites, Create

from .test_gallery import INNER_PYTEST

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


# -- users' rules are steps: done in both worlds, recorded, replayed -----------------------------------------

GADGET = {"apiVersion": "checks.example/v1", "kind": "Gadget", "metadata": {"name": "obj-0"}, "spec": {}}


class Resized(OperatorMachine):
    """The docs' example: a user's rule on a comparing check (the baseline must get the rule too)."""

    paths = [GALLERY / "optional_field_ok.py"]
    manifests = [GALLERY / "crd.yaml"]
    resources = ["gadgets"]
    checks = ["withheld-events"]
    names = ["obj-0"]

    @rule(size=st.integers(0, 9))
    async def resize(self, size: int) -> None:
        await tolerate(self.cluster.patch("gadgets", "obj-0", {"spec": {"size": size}}))

    @rule(data=st.data())
    async def relabel(self, data: st.DataObject) -> None:
        colour = data.draw(st.sampled_from(["red", "green", "blue"]), label="colour")
        await tolerate(self.cluster.patch("gadgets", "obj-0", {"metadata": {"labels": {"colour": colour}}}))

    @precondition(lambda self: False)
    @rule()
    async def never(self) -> None:
        raise AssertionError("a rule whose precondition is false has run")


def user_fields(world: stateful.World) -> list[tuple[Any, Any]]:
    objects = world.run(world.cluster.list("gadgets"))
    return [(obj["spec"], obj["metadata"].get("labels")) for obj in objects]


def test_a_users_rule_is_done_in_both_worlds_recorded_and_replayed(pytester: pytest.Pytester) -> None:
    machine = Resized()
    try:
        machine.perform(Create(GADGET))
        machine.resize(size=3)
        machine.relabel(data=stateful.ReplayedData(["blue"]))  # as hypothesis' draws are replayed
        assert machine.baseline is not None
        assert user_fields(machine.world) == user_fields(machine.baseline) == [({"size": 3}, {"colour": "blue"})]
        assert [type(step).__name__ for step in machine.steps] == ["Create", "RuleStep", "RuleStep"]
        assert machine.steps[1].code() == "await run_rule(Resized, 'resize', kopf_cluster, kopf_operator, size=3)"
        assert "data=ReplayedData(['blue'])" in machine.steps[2].code()
        expected = machine.expected()
        machine.verify()  # no false difference: the baseline has had the rules too
        reproduction = machine.reproduction("withheld-events", expected)
    finally:
        machine.close()
    assert f"from {__name__} import Resized" in reproduction
    assert expected is not None and any(obj.get("spec") == {"size": 3} for obj in expected)
    # The reproduction replays the rules (else its end state would not be the expected one: size 3, blue).
    pytester.makepyfile(test_reproduction=reproduction)
    result = pytester.runpytest_inprocess(*INNER_PYTEST)
    assert result.ret == 0, result.stdout.str()
    # Without the rules' steps, the same reproduction fails: they do matter.
    without = "\n".join(line for line in reproduction.splitlines() if "await run_rule(" not in line)
    pytester.makepyfile(test_reproduction=without)
    result = pytester.runpytest_inprocess(*INNER_PYTEST)
    assert result.ret == 1, result.stdout.str()
    result.stdout.fnmatch_lines(["*The check 'withheld-events' has failed*"])


class AgreeingWorlds(Resized):
    """Every step of a user (rules with drawn arguments and draws inside) is the same in both worlds."""

    @stateful.invariant()
    def the_worlds_agree_on_the_users_fields(self) -> None:
        if self.baseline is not None:
            assert user_fields(self.world) == user_fields(self.baseline)
        assert not any(type(step).__name__ == "RuleStep" and step.name == "never" for step in self.steps)


def test_the_drawn_arguments_are_the_same_in_both_worlds_and_preconditions_hold() -> None:
    from hypothesis.stateful import run_state_machine_as_test

    AgreeingWorlds.statistics = stats = stateful.Statistics()
    run_state_machine_as_test(
        AgreeingWorlds,
        settings=settings(max_examples=6, stateful_step_count=6, deadline=None, database=None, derandomize=True),
    )
    assert stats.examples >= 6 and stats.steps > 0


def test_the_steps_of_a_rule_of_a_class_made_in_a_function_say_what_to_do() -> None:
    def make() -> type[OperatorMachine]:
        class Local(Resized):
            pass

        return Local

    step = stateful.RuleStep(make(), "resize", Resized.resize, {"size": 2})
    assert step.code().startswith("# here, the rule test_the_steps_of_a_rule_of_a_class_made_in_a_function")
    assert "resize(size=2)" in step.code() and "not importable" in step.code()


def test_a_configured_machine_is_digested_by_its_name_without_a_search_of_its_source() -> None:
    """Hypothesis digests a machine by its source: a configured one is in no source, so by its name (at once)."""
    import inspect

    from hypothesis.internal.reflection import function_digest

    one = OptionalField.configured("Check_convergence", checks=("convergence",))
    other = OperatorMachine.configured("Check_convergence", checks=("finalizers",), max_plans=1)
    with pytest.raises(TypeError):  # no module file to parse (stateful.py's: ~50-130 ms, to find no such class)
        inspect.getfile(one)
    assert function_digest(one) == function_digest(other)  # the name decides, as before
    assert one.spec() == OptionalField.spec()  # the configuration is still the one inherited
    assert one.configured("Again").__module__ == one.__module__  # configured again: still no module


def test_a_reproduction_passes_for_the_fixed_operator_that_makes_another_end_state(pytester: pytest.Pytester) -> None:
    """The docs' example: the crash-restart reproduction of a child with a generated name, made twice after a crash.
    Its operator fixed (a fixed name: crash_child_ok.py in place of crash_child_bug.py), the end state with no faults
    is another one (``obj-0-data``, not ``obj-0-*``): the reproduction compares with the fixed operator's own, made
    anew (its files are other than those it was made of), and passes; the unchanged one still fails."""
    bug = OperatorMachine.configured(
        "CrashChild",
        paths=[GALLERY / "crash_child_bug.py"],
        manifests=[GALLERY / "crd.yaml"],
        resources=["gadgets.checks.example"],
        checks=["crash-restart"],
        names=["obj-0"],
    )
    reproduction = bug.reproduce([CrashAfterWrites(writes=1), Create(GADGET)], "crash-restart")
    assert "EXPECTED = " in reproduction and "generateName" in reproduction  # the bug's end state, written out
    pytester.makepyfile(
        test_as_it_failed=reproduction,
        test_fixed=reproduction.replace("crash_child_bug.py", "crash_child_ok.py"),
    )
    result = pytester.runpytest_inprocess(*INNER_PYTEST, "-rf")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        ["*The check 'crash-restart' has failed*", "FAILED test_as_it_failed.py::test_reproduction*"]
    )
