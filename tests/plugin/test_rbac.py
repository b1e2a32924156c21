"""RBAC for the operator under test: enforced with kopf_cluster.rbac(), and generated/checked from the tests.

The documentation's RBAC (docs/framework/deployment.md) lets the minimal example operator work; without one of
its permissions, the operator's request is 403 Forbidden, kopf logs it, and a SelfSubjectAccessReview (what
``kubectl auth can-i`` sends) agrees. ``--kopf-rbac-report`` writes the RBAC that the example's tests need,
and ``--kopf-rbac-check`` with it passes them; without one of its rules, the test that needs it fails.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_kopf.cluster import KopfCluster, SimKopfCluster
from pytest_kopf.operator import KopfOperator
from tests.plugin.conftest import BASE, NO_ASYNCIO

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "01-minimal"
OPERATOR = "system:serviceaccount:example-operator:example-operator"
STATUS_RULE = {"apiGroups": ["kopf.dev"], "resources": ["kopfexamples/status"], "verbs": ["patch"]}


def documented_rbac() -> list[dict[str, Any]]:
    """The RBAC of docs/framework/deployment.md (its first YAML block under "Permissions")."""
    text = (ROOT / "docs" / "framework" / "deployment.md").read_text()
    section = text.split("## Permissions (RBAC)", 1)[1]
    block = re.search(r"```yaml\n(.*?)```", section, re.DOTALL)
    assert block is not None
    return [doc for doc in yaml.safe_load_all(block.group(1)) if doc]


def without_status_rule(documents: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for document in documents:
        if document["kind"] == "ClusterRole":
            assert STATUS_RULE in document["rules"]
            document["rules"] = [rule for rule in document["rules"] if rule != STATUS_RULE]
    return documents


async def run_minimal_operator(cluster: KopfCluster, operator: KopfOperator, rbac: list[dict[str, Any]]) -> None:
    await cluster.apply(ROOT / "examples" / "crd.yaml")
    await cluster.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "example-operator"}})
    for document in rbac:
        await cluster.create(document)
    cluster.rbac(enforce=True, as_=OPERATOR)
    await operator.start(paths=[EXAMPLE / "example.py"], namespaces=[cluster.namespace])
    body = {"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "metadata": {"name": "greeted"}, "spec": {}}
    await cluster.create(body)


async def can_i(cluster: SimKopfCluster, verb: str, resource: str, subresource: str = "") -> bool:
    """What ``kubectl auth can-i VERB RESOURCE --as=OPERATOR`` asks: a SelfSubjectAccessReview, impersonating."""
    attributes = {"verb": verb, "group": "kopf.dev", "resource": resource, "namespace": cluster.namespace}
    if subresource:
        attributes["subresource"] = subresource
    review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview"}
    review["spec"] = {"resourceAttributes": attributes}
    async with cluster.sim.session() as session:
        url = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
        async with session.post(url, json=review, headers={"Impersonate-User": OPERATOR}) as response:
            assert response.status == 201
            return bool((await response.json())["status"]["allowed"])


async def test_the_minimal_operator_works_with_the_documented_rbac(
    kopf_cluster: SimKopfCluster, kopf_operator: KopfOperator
) -> None:
    await run_minimal_operator(kopf_cluster, kopf_operator, documented_rbac())
    obj = await kopf_cluster.wait_for(
        "kopfexamples", "greeted", timeout=30, condition=lambda o: "create_fn" in o.get("status", {})
    )
    assert obj["status"]["create_fn"] == {"message": "hello, greeted"}
    assert await can_i(kopf_cluster, "patch", "kopfexamples", "status")
    await kopf_operator.stop()
    assert "Forbidden" not in kopf_operator.logs


async def test_without_a_permission_the_request_is_forbidden_and_logged(
    kopf_cluster: SimKopfCluster, kopf_operator: KopfOperator
) -> None:
    await run_minimal_operator(kopf_cluster, kopf_operator, without_status_rule(documented_rbac()))
    expected = (
        f'kopfexamples.kopf.dev "greeted" is forbidden: User "{OPERATOR}" cannot patch resource '
        f'"kopfexamples/status" in API group "kopf.dev" in the namespace "{kopf_cluster.namespace}"'
    )
    for _ in range(30):  # virtual seconds
        if expected in kopf_operator.logs:
            break
        await asyncio.sleep(1)
    assert expected in kopf_operator.logs
    logged = next(line for line in kopf_operator.logs.splitlines() if expected in line)
    assert logged.startswith(
        "ERROR kopf.objects: Throttling for 1 seconds due to an unexpected error: APIForbiddenError("
    )
    assert not await can_i(kopf_cluster, "patch", "kopfexamples", "status")
    assert await can_i(kopf_cluster, "patch", "kopfexamples")
    obj = await kopf_cluster.get("kopfexamples", "greeted")
    assert obj is not None and "create_fn" not in obj.get("status", {})
    await kopf_operator.stop()


def test_rbac_off_by_default_allows_the_operator_everything(kopf_cluster: SimKopfCluster) -> None:
    assert not kopf_cluster.sim.access.enforce


def run_example(pytester: pytest.Pytester, *options: str) -> pytest.RunResult:
    pytester.copy_example(str(EXAMPLE / "example.py"))
    test = (
        (EXAMPLE / "test_example.py")
        .read_text()
        .replace('HERE.parent / "crd.yaml"', repr(str(ROOT / "examples" / "crd.yaml")))
    )
    pytester.makepyfile(test_example=test)
    pytester.makeini("[pytest]\n")
    return pytester.runpytest_inprocess(*NO_ASYNCIO, *BASE, *options)


def test_the_report_of_the_examples_tests_passes_their_check_and_a_missing_rule_is_named(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    report = tmp_path / "rbac.yaml"
    run_example(pytester, f"--kopf-rbac-report={report}").assert_outcomes(passed=1)
    documents = list(yaml.safe_load_all(report.read_text()))
    assert [(d["kind"], d["metadata"]) for d in documents] == [
        ("ClusterRole", {"name": "kopf-operator"}),
        ("Role", {"name": "kopf-operator", "namespace": "default"}),
    ]
    assert STATUS_RULE in documents[1]["rules"]
    run_example(pytester, f"--kopf-rbac-check={report}").assert_outcomes(passed=1)

    documents[1]["rules"].remove(STATUS_RULE)
    smaller = tmp_path / "smaller.yaml"
    smaller.write_text(yaml.safe_dump_all(documents))
    result = run_example(pytester, f"--kopf-rbac-check={smaller}")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*The operator made requests that the checked RBAC does not allow:",
            "*patch kopfexamples.kopf.dev/status in namespace default (outside smaller.yaml)",
        ]
    )


def test_the_rbac_example_keeps_the_rbac_its_tests_need(pytester: pytest.Pytester, tmp_path: Path) -> None:
    """examples/21-rbac/rbac.yaml is what --kopf-rbac-report writes for its test, and passes its check."""
    example = ROOT / "examples" / "21-rbac"
    pytester.copy_example(str(example / "example.py"))
    test = (example / "test_example.py").read_text()
    pytester.makepyfile(
        test_example=test.replace('HERE.parent / "crd.yaml"', repr(str(ROOT / "examples" / "crd.yaml")))
    )
    pytester.makeini("[pytest]\n")
    report = tmp_path / "rbac.yaml"
    checked_in = example / "rbac.yaml"
    options = (*NO_ASYNCIO, *BASE, f"--kopf-rbac-report={report}", f"--kopf-rbac-check={checked_in}")
    pytester.runpytest_inprocess(*options).assert_outcomes(passed=1)
    assert report.read_text() == checked_in.read_text()


def test_the_ini_option_enforces_rbac_for_the_operator_in_every_test(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nkopf_rbac_as = system:serviceaccount:ops:operator\n")
    pytester.makepyfile(
        test_inner="""
        from kopf_sim.rbac.attributes import Attributes

        def test_enforced(kopf_cluster):
            access = kopf_cluster.sim.access
            assert access.enforce
            identity = access.identify({"Authorization": f"Bearer {kopf_cluster.sim.operator_token}"})
            assert identity.user.name == "system:serviceaccount:ops:operator"
            assert not access.decide(identity.user, Attributes("list", "", "pods", namespace="default")).allowed
            assert access.identify({}).user.is_admin  # the test's own requests
        """
    )
    pytester.runpytest_inprocess(*NO_ASYNCIO, *BASE).assert_outcomes(passed=1)
