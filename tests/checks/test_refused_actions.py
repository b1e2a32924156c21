"""Users' actions that the cluster refuses: no-op steps; and a run where all of them are refused is no pass."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import strategies as st

import kopf
from pytest_kopf._vacuity import Reach
from pytest_kopf.checks import check_operator
from pytest_kopf.driving import Refusal, tolerate
from pytest_kopf.errors import OperatorCheckFailed
from pytest_kopf.stateful import OperatorSpec, World
from pytest_kopf.strategies.steps import Create, PatchSpec

GALLERY = Path(__file__).parent / "gallery"
CRD = GALLERY / "crd.yaml"
RESOURCE = "gadgets.checks.example"


def handling_registry() -> kopf.OperatorRegistry:
    registry = kopf.OperatorRegistry()

    @kopf.on.create("gadgets", registry=registry)
    @kopf.on.update("gadgets", registry=registry)
    async def handle_fn(spec: Any, **_: Any) -> Any:
        return spec.get("size")

    return registry


def gadget(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "checks.example/v1", "kind": "Gadget", "metadata": {"name": name}, "spec": spec}


def test_an_invalid_patch_is_a_refused_no_op_step() -> None:
    world = World(OperatorSpec(manifests=(CRD,), registry=handling_registry))
    try:
        assert world.run(Create(gadget("obj-0", size=1)).apply(world)) == "ok"
        refused = world.run(PatchSpec(RESOURCE, "obj-0", {"size": 99}).apply(world))  # the schema's maximum is 9
        assert isinstance(refused, Refusal) and (refused.code, refused.reason) == (422, "Invalid")
        assert "spec.size" in refused.message
        assert world.run(world.cluster.get(RESOURCE, "obj-0"))["spec"] == {"size": 1}
        assert world.run(tolerate(world.cluster.patch(RESOURCE, "obj-0", {"spec": {"mode": "odd"}}))) is None
    finally:
        world.close()


def test_a_check_with_invalid_generated_patches_runs_on() -> None:
    """Specs drawn out of the schema's range (a user's strategy): the 422s are no-op steps, the run goes on."""
    report = check_operator(
        registry=handling_registry,
        manifests=[CRD],
        resources=[RESOURCE],
        checks=["convergence"],
        specs={"gadgets": st.fixed_dictionaries({"size": st.integers(0, 20)})},
        max_examples=30,
        max_steps=6,
        names=["obj-0"],
    )
    refused = [key for key in report.per_check["convergence"]["reach"]["refusals"] if "422 Invalid" in key]
    assert refused, report.per_check  # some were drawn invalid, and refused
    assert report.per_check["convergence"]["reach"]["succeeded"] > 0


def test_a_check_whose_actions_all_fail_is_no_pass() -> None:
    """The namespace does not exist: every create is a tolerated 404; the check fails, naming why."""
    with pytest.raises(OperatorCheckFailed) as info:
        check_operator(
            registry=handling_registry,
            manifests=[CRD],
            resources=[RESOURCE],
            checks=["convergence"],
            namespace="missing",
            max_examples=10,
            max_steps=5,
        )
    message = str(info.value)
    assert info.value.check == "convergence"
    assert "user actions on objects" in message and "has succeeded" in message, message
    assert 'every create answered 404 NotFound (namespaces "missing" not found)' in message, message


def test_a_check_whose_specs_are_all_invalid_is_no_pass() -> None:
    with pytest.raises(OperatorCheckFailed, match="every create answered 422 Invalid"):
        check_operator(
            registry=handling_registry,
            manifests=[CRD],
            resources=[RESOURCE],
            checks=["convergence"],
            specs={"gadgets": st.fixed_dictionaries({"size": st.integers(10, 20)})},
            max_examples=10,
            max_steps=5,
        )


def test_a_normal_run_is_not_vacuous() -> None:
    report = check_operator(
        registry=handling_registry,
        manifests=[CRD],
        resources=[RESOURCE],
        checks=["convergence", "idempotence"],
        max_examples=10,
        max_steps=5,
    )
    for check in ("convergence", "idempotence"):
        assert report.per_check[check]["reach"]["succeeded"] > 0


def test_what_counts_as_vacuous() -> None:
    refused = Refusal(404, "NotFound", 'gadgets.checks.example "obj-0" not found')
    nothing_tried = Reach()
    nothing_tried.record(PatchSpec(RESOURCE, "obj-0", {"size": 1}), refused)  # no create tried: not vacuous
    nothing_tried.record(Create(gadget("obj-0")), None)  # no outcome (e.g. time passing): not counted
    assert nothing_tried.vacuous(1) is None
    one_reached = Reach()
    one_reached.record(Create(gadget("obj-0")), Refusal(409, "AlreadyExists"))
    one_reached.record(PatchSpec(RESOURCE, "obj-0", {"size": 1}), "ok")
    assert one_reached.vacuous(1) is None
    none_reached = Reach()
    none_reached.record(Create(gadget("obj-0")), Refusal(404, "NotFound", 'namespaces "x" not found'))
    none_reached.record(Create(gadget("obj-1")), Refusal(404, "NotFound", 'namespaces "x" not found'))
    none_reached.record(PatchSpec(RESOURCE, "obj-0", {"size": 1}), refused)
    why = none_reached.vacuous(2)
    assert why is not None
    assert why.startswith("none of the 3 user actions on objects in 2 example(s) has succeeded"), why
    assert 'every create answered 404 NotFound (namespaces "x" not found) x2' in why, why
