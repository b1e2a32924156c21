"""The example operator under the checks (sim mode), and one plain test (both modes)."""

from pathlib import Path

import pytest
from hypothesis import settings

from pytest_kopf.checks import CHECKS, check_operator
from pytest_kopf.driving import tolerate
from pytest_kopf.stateful import OperatorMachine, rule

HERE = Path(__file__).parent
CRD = HERE.parent / "crd.yaml"
OPERATOR = HERE / "example.py"


@pytest.mark.kopf_sim_only
def test_every_check_in_one_line():
    report = check_operator(  # every check (consistency would need consistency={...})
        paths=[OPERATOR],
        manifests=[CRD],
        resources=["kopfexamples.kopf.dev"],
        max_examples=3,
        max_steps=8,
        names=["ex-0"],
    )
    assert set(report.per_check) == set(CHECKS) - {"consistency"}


class ExampleMachine(OperatorMachine):
    paths = [OPERATOR]
    manifests = [CRD]
    resources = ["kopfexamples.kopf.dev"]
    checks = ["convergence", "crash-restart"]
    names = ["ex-0"]

    @rule()
    async def empty_the_items(self):
        await tolerate(self.cluster.patch("kopfexamples.kopf.dev", "ex-0", {"spec": {"items": []}}))


TestExampleMachine = ExampleMachine.TestCase
TestExampleMachine.settings = settings(max_examples=3, stateful_step_count=6, deadline=None)
TestExampleMachine.pytestmark = [pytest.mark.kopf_sim_only]


async def test_the_status_follows_the_spec(kopf_cluster, kopf_operator):
    await kopf_cluster.apply(CRD)
    await kopf_operator.start(paths=[OPERATOR])
    await kopf_cluster.create(
        {
            "apiVersion": "kopf.dev/v1",
            "kind": "KopfExample",
            "metadata": {"name": "ex-1"},
            "spec": {"field": "a", "items": ["x"]},
        }
    )
    await kopf_cluster.wait_for(
        "kopfexamples", "ex-1", condition=lambda o: o["status"]["create_fn"] == {"field": "a", "items": 1}
    )
    await kopf_cluster.patch("kopfexamples", "ex-1", {"spec": {"field": None, "items": ["x", "y"]}})
    await kopf_cluster.wait_for(
        "kopfexamples", "ex-1", condition=lambda o: o["status"]["create_fn"] == {"field": "", "items": 2}
    )
    await kopf_cluster.delete("kopfexamples", "ex-1")
    await kopf_cluster.wait_gone("kopfexamples", "ex-1")
    await kopf_operator.stop()
    assert kopf_operator.exception is None
