"""The checks' worlds get the built-in controllers that the test selects, as the ``kopf_cluster`` fixture does."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings
from hypothesis.stateful import run_state_machine_as_test

import kopf
from kopf_sim.controllers import CONTROLLERS, ControllerSettings
from pytest_kopf.checks import check_operator
from pytest_kopf.stateful import OperatorMachine, OperatorSpec, World, initialize, reproduction
from tests.plugin.conftest import BASE, NO_ASYNCIO

GALLERY = Path(__file__).parent / "gallery"
CRD = GALLERY / "crd.yaml"
RESOURCE = "gadgets.checks.example"

#: The controllers that each world of the recording machine was made with.
SEEN: list[frozenset[str]] = []


def quiet_registry() -> kopf.OperatorRegistry:
    registry = kopf.OperatorRegistry()

    @kopf.on.create("gadgets", registry=registry)
    def create_fn(**_: Any) -> None:
        pass

    return registry


class Recording(OperatorMachine):
    registry = staticmethod(quiet_registry)
    manifests = [CRD]
    resources = [RESOURCE]
    checks = ["convergence", "idempotence"]  # two worlds per example

    @initialize()
    def record(self) -> None:
        SEEN.append(self.cluster.sim.controllers.enabled)


def run_recording(machine: type[OperatorMachine] = Recording) -> list[frozenset[str]]:
    SEEN.clear()
    run_state_machine_as_test(machine, settings=settings(max_examples=2, stateful_step_count=1, deadline=None))
    return list(SEEN)


def test_all_controllers_by_default() -> None:
    seen = run_recording()
    assert seen and set(seen) == {frozenset(CONTROLLERS)}


@pytest.mark.kopf_controllers("none")
def test_the_marker_of_the_test_selects_the_worlds_controllers() -> None:
    seen = run_recording()
    assert seen and set(seen) == {frozenset()}


@pytest.mark.kopf_controllers("none")
def test_the_machines_own_selection_wins_over_the_marker() -> None:
    class Selected(Recording):
        controllers = "nodes,pods"

    assert set(run_recording(Selected)) == {frozenset({"nodes", "pods"})}


def test_a_bad_selection_is_named() -> None:
    class Bad(Recording):
        controllers = "deploy"

    with pytest.raises(ValueError, match="Unknown controller 'deploy'"):
        Bad.spec()


def test_the_reproduction_carries_the_marker() -> None:
    spec = OperatorSpec(
        paths=("operator.py",), controllers=ControllerSettings(enabled=frozenset({"nodes"}), pod_ready_delay=3)
    )
    text = reproduction(spec, check="convergence", steps=[], resources=[RESOURCE])
    assert "import pytest\n" in text
    assert "@pytest.mark.kopf_controllers('nodes', pod_ready_delay=3)\nasync def test_reproduction(" in text
    plain = reproduction(OperatorSpec(paths=("operator.py",)), check="convergence", steps=[], resources=[RESOURCE])
    assert "kopf_controllers" not in plain


def test_the_ini_option_and_check_operator(pytester: pytest.Pytester) -> None:
    """``kopf_controllers = none`` in the ini: the worlds of check_operator have no controllers; the marker wins."""
    pytester.makeini("[pytest]\nkopf_controllers = none\n")
    pytester.makepyfile(
        test_ini=textwrap.dedent(f"""
        import kopf
        import pytest
        from pytest_kopf.checks import check_operator
        from pytest_kopf.stateful import World

        def make_registry():
            registry = kopf.OperatorRegistry()
            kopf.on.create("gadgets", registry=registry)(lambda **_: None)
            return registry

        def worlds_controllers(monkeypatch):
            seen = []
            original = World._setup
            async def spy(self):
                seen.append(self.cluster.sim.controllers.enabled)
                await original(self)
            monkeypatch.setattr(World, "_setup", spy)
            check_operator(registry=make_registry, manifests=[{str(CRD)!r}], resources=[{RESOURCE!r}],
                           checks=["convergence"], max_examples=3, max_steps=2)
            return set(seen)

        def test_none_by_the_ini(monkeypatch):
            assert worlds_controllers(monkeypatch) == {{frozenset()}}

        @pytest.mark.kopf_controllers("nodes")
        def test_the_marker_wins(monkeypatch):
            assert worlds_controllers(monkeypatch) == {{frozenset({{"nodes"}})}}
    """)
    )
    result = pytester.runpytest_inprocess(*NO_ASYNCIO, *BASE)
    result.assert_outcomes(passed=2)


@pytest.mark.kopf_controllers("none")
def test_check_operator_takes_a_selection_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[frozenset[str]] = []
    original = World._setup

    async def spy(self: World) -> None:
        seen.append(self.cluster.sim.controllers.enabled)
        await original(self)

    monkeypatch.setattr(World, "_setup", spy)
    check_operator(
        registry=quiet_registry,
        manifests=[CRD],
        resources=[RESOURCE],
        checks=["convergence"],
        max_examples=2,
        max_steps=2,
        controllers="namespaces",
    )
    assert seen and set(seen) == {frozenset({"namespaces"})}
