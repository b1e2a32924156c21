"""ValidatingAdmissionPolicies in-process: params, match conditions, failure policies, audit, and via the plugin."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from kopf_sim.admission.policies import AuditRecord
from kopf_sim.kube.errors import ApiError
from kopf_sim.store.cluster import Cluster
from pytest_kopf.cluster import SimKopfCluster
from pytest_kopf.errors import KopfApiError

POLICIES = Path(__file__).with_name("policies.yaml")
GROUP = "admissionregistration.k8s.io"


def load(cluster: Cluster, *documents: Any) -> None:
    cluster.apply_manifests(list(documents) or list(yaml.safe_load_all(POLICIES.read_text())))


def configmap(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": labels}, "data": {}}


def policy(name: str, **spec: Any) -> dict[str, Any]:
    rules = [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["*"], "resources": ["configmaps"]}]
    body = {"matchConstraints": {"resourceRules": rules}, **spec}
    return {"apiVersion": f"{GROUP}/v1", "kind": "ValidatingAdmissionPolicy", "metadata": {"name": name}, "spec": body}


def binding(name: str, policy_name: str, **spec: Any) -> dict[str, Any]:
    body = {"policyName": policy_name, "validationActions": ["Deny"], **spec}
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name},
        "spec": body,
    }


def configmaps(cluster: Cluster) -> Any:
    return cluster.resource("", "v1", "configmaps")


async def test_a_warning_reaches_the_client_as_a_header(client: aiohttp.ClientSession, crd_cluster: Cluster) -> None:
    load(crd_cluster)
    async with client.post("/api/v1/namespaces/default/configmaps", json=configmap("x")) as response:
        assert response.status == 201
        assert response.headers.getall("Warning") == [
            "299 - \"Validation failed for ValidatingAdmissionPolicy 'team-label.example.com' with binding "
            "'team-label-binding': every ConfigMap needs a team label\""
        ]
    assert crd_cluster.admission.policies.audit[-1] == AuditRecord(
        "team-label.example.com", "team-label-binding", "every ConfigMap needs a team label", {}
    )


def test_missing_params_deny_unless_allowed(cluster: Cluster) -> None:
    rule = [{"expression": "object.metadata.name.size() < int(params.data.max)"}]
    kind = {"apiVersion": "v1", "kind": "ConfigMap"}
    ref = {"name": "absent", "namespace": "default", "parameterNotFoundAction": "Deny"}
    load(cluster, policy("p", paramKind=kind, validations=rule), binding("b", "p", paramRef=ref))
    with pytest.raises(ApiError) as info:
        cluster.create(configmaps(cluster), "default", configmap("x"))
    assert info.value.message == (
        "ValidatingAdmissionPolicy 'p' with binding 'b' denied request: failed to configure binding: no params "
        "found for policy binding with `Deny` parameterNotFoundAction"
    )
    bindings = cluster.resource(GROUP, "v1", "validatingadmissionpolicybindings")
    stored = copy.deepcopy(cluster.get(bindings, None, "b"))
    stored["spec"]["paramRef"]["parameterNotFoundAction"] = "Allow"
    cluster.update(bindings, None, "b", stored)
    cluster.create(configmaps(cluster), "default", configmap("x"))


@pytest.mark.parametrize(("failure_policy", "stored"), [("Fail", False), ("Ignore", True)])
def test_an_expression_error_follows_the_failure_policy(cluster: Cluster, failure_policy: str, stored: bool) -> None:
    rule = [{"expression": "object.data.missing == 'x'"}]
    load(cluster, policy("p", failurePolicy=failure_policy, validations=rule), binding("b", "p"))
    if stored:
        cluster.create(configmaps(cluster), "default", configmap("x"))
        return
    with pytest.raises(ApiError) as info:
        cluster.create(configmaps(cluster), "default", configmap("x"))
    assert info.value.code == 422
    assert info.value.message == (
        "ValidatingAdmissionPolicy 'p' with binding 'b' denied request: expression 'object.data.missing == 'x'' "
        "resulted in error: no such key: missing"
    )


def test_match_conditions_and_the_bindings_match_resources_narrow_a_policy(cluster: Cluster) -> None:
    rule = [{"expression": "false", "message": "no"}]
    conditions = [{"name": "labelled", "expression": "'checked' in object.metadata.labels"}]
    narrowing = {"objectSelector": {"matchLabels": {"team": "a"}}}
    load(
        cluster, policy("p", matchConditions=conditions, validations=rule), binding("b", "p", matchResources=narrowing)
    )
    cluster.create(configmaps(cluster), "default", configmap("unchecked", team="a"))
    cluster.create(configmaps(cluster), "default", configmap("other-team", team="b", checked="yes"))
    with pytest.raises(ApiError, match="denied request: no"):
        cluster.create(configmaps(cluster), "default", configmap("denied", team="a", checked="yes"))


def test_a_passing_request_has_its_audit_annotations(cluster: Cluster) -> None:
    annotations = [{"key": "name", "valueExpression": "object.metadata.name"}]
    load(cluster, policy("p", validations=[{"expression": "true"}], auditAnnotations=annotations), binding("b", "p"))
    cluster.create(configmaps(cluster), "default", configmap("x"))
    assert cluster.admission.policies.audit == [AuditRecord("p", "b", None, {"p/name": "x"})]


@pytest.mark.kopf_sim_only
async def test_the_plugins_client_gets_the_denial(kopf_cluster: SimKopfCluster) -> None:
    await kopf_cluster.apply(POLICIES)
    body = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "big"}}
    template = {"metadata": {"labels": {"app": "big"}}, "spec": {"containers": [{"name": "a", "image": "nginx"}]}}
    body["spec"] = {"replicas": 9, "selector": {"matchLabels": {"app": "big"}}, "template": template}
    with pytest.raises(KopfApiError) as info:
        await kopf_cluster.create(body)
    assert (info.value.code, info.value.reason) == (422, "Invalid")
    assert info.value.message.endswith("denied request: replicas must be no greater than 5")


def test_a_policy_whose_expression_does_not_compile_is_rejected(cluster: Cluster) -> None:
    with pytest.raises(ApiError) as info:
        load(cluster, policy("p", validations=[{"expression": "object.metadata.name =="}]))
    assert info.value.message.startswith(
        'ValidatingAdmissionPolicy.admissionregistration.k8s.io "p" is invalid: spec.validations[0].expression: '
        'Invalid value: "object.metadata.name ==": compilation failed: ERROR: <input>:1:24: Syntax error:'
    )
    assert not list(cluster.objects((GROUP, "validatingadmissionpolicies")))


async def test_the_request_carries_the_requesting_user(client: aiohttp.ClientSession, crd_cluster: Cluster) -> None:
    rule = [{"expression": "request.userInfo.username != 'mallory'", "message": "not mallory"}]
    load(crd_cluster, policy("p", validations=rule), binding("b", "p"))
    url = "/api/v1/namespaces/default/configmaps"
    async with client.post(url, json=configmap("x")) as response:
        assert response.status == 201
    async with client.post(url, json=configmap("y"), headers={"Impersonate-User": "mallory"}) as response:
        assert response.status == 422
        assert (await response.json())["message"].endswith("denied request: not mallory")
