"""Admission webhooks' ``matchConditions`` (CEL), as the apiserver evaluates them, and as it validates them.

Any ``false`` skips the webhook, whatever the others say; all ``true`` call it; errors without a ``false``
follow the failure policy: ``Fail`` forbids the request without calling the webhook, ``Ignore`` skips it.
The same rules hold for a ValidatingAdmissionPolicy's ``matchConditions``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from kopf_sim.http.app import ServerOptions, build_app
from kopf_sim.store.cluster import Cluster
from kopf_sim.transports.inmemory import InMemoryServer
from tests.helpers import widget
from tests.serving import Served, served_simulator

from .test_admission_dispatch import WIDGETS, Api, Review, configuration, recorder, webhook

pytest.importorskip("cel")

KUBECTL = shutil.which("kubectl") or "/usr/bin/kubectl"
ERROR = "object.spec.missing == 1"  # no such key in the widgets below: an evaluation error
FAILS = f"expression '{ERROR}' resulted in error: no such key: missing"


@pytest.fixture
async def api(crd_cluster: Cluster) -> AsyncIterator[Api]:
    async with InMemoryServer(build_app(crd_cluster)) as server, server.session() as session:
        yield Api(session, crd_cluster.admission, crd_cluster)


def conditional(*expressions: str, **fields: Any) -> Review:
    conditions = [{"name": f"c{index}", "expression": source} for index, source in enumerate(expressions)]
    return webhook("widgets.acme.example", matchConditions=conditions, **fields)


async def _create(api: Api, name: str) -> tuple[int, Review]:
    return await api.call("POST", WIDGETS, widget(name, size=1))


async def test_a_false_condition_skips_the_webhook_and_true_ones_call_it(api: Api) -> None:
    seen: list[Review] = []
    api.serve(recorder(seen))
    hook = conditional("!object.metadata.name.startsWith('skip')", "request.operation == 'CREATE'")
    await api.install(configuration("Validating", "conditional", hook))
    assert (await _create(api, "skip-me"))[0] == 201
    assert seen == []
    assert (await _create(api, "w1"))[0] == 201
    assert [review["request"]["name"] for review in seen] == ["w1"]
    status, _ = await api.call("DELETE", f"{WIDGETS}/w1")  # request.operation is DELETE: not called
    assert status == 200 and len(seen) == 1


async def test_a_false_condition_wins_over_errors(api: Api) -> None:
    seen: list[Review] = []
    api.serve(recorder(seen))
    await api.install(configuration("Validating", "conditional", conditional(ERROR, "false")))
    assert (await _create(api, "w1"))[0] == 201
    assert seen == []


async def test_an_error_fails_closed_without_calling_the_webhook(api: Api) -> None:
    seen: list[Review] = []
    api.serve(recorder(seen))
    await api.install(configuration("Validating", "conditional", conditional("true", ERROR)))
    status, body = await _create(api, "w1")
    assert (status, body["reason"], body["message"]) == (
        403,
        "Forbidden",
        f'widgets.acme.example "w1" is forbidden: {FAILS}',
    )
    assert body["details"] == {"name": "w1", "group": "acme.example", "kind": "widgets"}
    assert seen == []
    assert api.cluster.count(("acme.example", "widgets")) == 0


async def test_several_errors_are_aggregated(api: Api) -> None:
    await api.install(configuration("Mutating", "conditional", conditional(ERROR, "object.spec.other > 0")))
    status, body = await _create(api, "w1")
    other = "expression 'object.spec.other > 0' resulted in error: no such key: other"
    assert (status, body["message"]) == (403, f'widgets.acme.example "w1" is forbidden: [{FAILS}, {other}]')


async def test_an_error_with_the_ignore_policy_skips_the_webhook(api: Api) -> None:
    seen: list[Review] = []
    api.serve(recorder(seen))
    await api.install(configuration("Mutating", "conditional", conditional(ERROR, failurePolicy="Ignore")))
    assert (await _create(api, "w1"))[0] == 201
    assert seen == []


async def test_conditions_see_the_old_object_and_the_user(api: Api) -> None:
    seen: list[Review] = []
    api.serve(recorder(seen))
    hook = conditional(
        "request.operation != 'UPDATE' || object.spec.size != oldObject.spec.size",
        "request.userInfo.username == 'kubernetes-admin'",
    )
    await api.install(configuration("Validating", "conditional", hook))
    assert (await _create(api, "w1"))[0] == 201
    merge = {"Content-Type": "application/merge-patch+json"}
    assert (await api.call("PATCH", f"{WIDGETS}/w1", {"metadata": {"labels": {"a": "b"}}}, **merge))[0] == 200
    assert (await api.call("PATCH", f"{WIDGETS}/w1", {"spec": {"size": 2}}, **merge))[0] == 200
    assert [review["request"]["operation"] for review in seen] == ["CREATE", "UPDATE"]


@pytest.mark.parametrize(
    ("conditions", "message"),
    [
        (
            [{"name": "c0", "expression": "object.spec.size >"}],
            'webhooks[0].matchConditions[0].expression: Invalid value: "object.spec.size >": compilation failed: ',
        ),
        (
            [{"name": "c0", "expression": "params.x == 1"}],
            'webhooks[0].matchConditions[0].expression: Invalid value: "params.x == 1": compilation failed: '
            "ERROR: <input>:1:1: undeclared reference to 'params'",
        ),
        (
            [{"name": "c0", "expression": "true"}, {"name": "c0", "expression": "true"}],
            'webhooks[0].matchConditions[1].name: Duplicate value: "c0"',
        ),
        ([{"expression": "true"}], "webhooks[0].matchConditions[0].name: Required value"),
        ([{"name": "c0"}], "webhooks[0].matchConditions[0].expression: Required value"),
        (
            [{"name": "c 0", "expression": "true"}],
            'webhooks[0].matchConditions[0].name: Invalid value: "c 0": name part must consist of',
        ),
        (
            [{"name": f"c{i}", "expression": "true"} for i in range(65)],
            "webhooks[0].matchConditions: Too many: 65: must have at most 64 items",
        ),
    ],
)
async def test_bad_conditions_are_refused_with_the_configuration(
    api: Api, conditions: list[Review], message: str
) -> None:
    config = configuration("Validating", "bad", webhook("widgets.acme.example", matchConditions=conditions))
    path = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
    status, body = await api.call("POST", path, config)
    assert status == 422
    assert message in body["message"]
    assert api.cluster.count(("admissionregistration.k8s.io", "validatingwebhookconfigurations")) == 0


# -- ValidatingAdmissionPolicy: the same rules ---------------------------------------------------------------


def _policy(*conditions: str, failure_policy: str = "Fail") -> list[Review]:
    group = "admissionregistration.k8s.io/v1"
    rules = [{"apiGroups": ["acme.example"], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["*"]}]
    policy = {
        "apiVersion": group,
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "no-big"},
        "spec": {
            "failurePolicy": failure_policy,
            "matchConstraints": {"resourceRules": rules},
            "matchConditions": [{"name": f"c{i}", "expression": source} for i, source in enumerate(conditions)],
            "validations": [{"expression": "object.spec.size < 10", "message": "too big"}],
        },
    }
    binding = {
        "apiVersion": group,
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": "no-big-binding"},
        "spec": {"policyName": "no-big", "validationActions": ["Deny"]},
    }
    return [policy, binding]


@pytest.mark.parametrize(
    ("conditions", "failure_policy", "status"),
    [
        ((ERROR, "false"), "Fail", 201),  # a false condition wins over an error
        (("true",), "Fail", 422),  # the validation applies
        ((ERROR,), "Ignore", 201),
        ((ERROR, "true"), "Fail", 422),
    ],
)
async def test_a_policys_conditions_follow_the_same_rules(
    api: Api, conditions: tuple[str, ...], failure_policy: str, status: int
) -> None:
    policy, binding = _policy(*conditions, failure_policy=failure_policy)
    for plural, obj in [("validatingadmissionpolicies", policy), ("validatingadmissionpolicybindings", binding)]:
        created, body = await api.call("POST", f"/apis/admissionregistration.k8s.io/v1/{plural}", obj)
        assert created == 201, body
    assert (await api.call("POST", WIDGETS, widget("big", size=20)))[0] == status


# -- Through kubectl against ``kopf-sim serve`` ---------------------------------------------------------------


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    tmp = tmp_path_factory.mktemp("conditions")
    crd = Path(__file__).resolve().parents[2] / "examples" / "crd.yaml"
    with served_simulator(tmp / "kubeconfig", "--controllers", "none", "--load", str(crd)) as served:
        yield served


def _kubectl(served: Served, *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
    command = [KUBECTL, f"--kubeconfig={served.kubeconfig}", "--request-timeout=20s", *args]
    return subprocess.run(command, input=input, capture_output=True, text=True, timeout=60)


@pytest.mark.kubectl
def test_kubectl_sees_the_conditions_decide(served: Served) -> None:
    rule = {"apiGroups": ["kopf.dev"], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["*"]}
    hook = {
        "name": "nowhere.kopf.dev",
        "clientConfig": {"url": "https://127.0.0.1:1/review"},  # nothing listens: a call fails
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        "timeoutSeconds": 1,
        "rules": [rule],
        "matchConditions": [
            {"name": "checked", "expression": "object.metadata.name.startsWith('checked-')"},
            {"name": "sized", "expression": "object.spec.size > 0"},
        ],
    }
    config = configuration("Validating", "conditional", hook)
    assert _kubectl(served, "apply", "-f", "-", input=json.dumps(config)).returncode == 0

    def create(name: str, spec: Review) -> subprocess.CompletedProcess[str]:
        body = {"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "metadata": {"name": name}, "spec": spec}
        return _kubectl(served, "create", "-n", "default", "-f", "-", input=json.dumps(body))

    assert create("other", {}).returncode == 0  # "checked" is false: the webhook is not called
    called = create("checked-1", {"size": 1})
    assert 'failed calling webhook "nowhere.kopf.dev"' in called.stderr
    unknown = create("checked-2", {})
    assert unknown.stderr.strip() == (
        'Error from server (Forbidden): error when creating "STDIN": kopfexamples.kopf.dev "checked-2" is '
        "forbidden: expression 'object.spec.size > 0' resulted in error: no such key: size"
    )


# -- CEL's `authorizer`: RBAC's decisions in admission expressions ------------------------------------------


@pytest.fixture
async def enforced(crd_cluster: Cluster) -> AsyncIterator[Api]:
    """As ``api``, with RBAC enforced: alice may create widgets in default, and nothing else."""
    app = build_app(crd_cluster, ServerOptions(enforce_rbac=True))
    async with InMemoryServer(app) as server, server.session() as session:
        api = Api(session, crd_cluster.admission, crd_cluster)
        rbac = "/apis/rbac.authorization.k8s.io/v1/namespaces/default"
        rule = {"apiGroups": ["acme.example"], "resources": ["widgets"], "verbs": ["create"]}
        role = {"metadata": {"name": "widgets"}, "rules": [rule]}
        subject = {"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"}
        ref = {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "widgets"}
        binding = {"metadata": {"name": "widgets"}, "roleRef": ref, "subjects": [subject]}
        assert (await api.call("POST", f"{rbac}/roles", role))[0] == 201
        assert (await api.call("POST", f"{rbac}/rolebindings", binding))[0] == 201
        yield api


async def test_a_webhook_condition_asks_the_authorizer(enforced: Api) -> None:
    seen: list[Review] = []
    enforced.serve(recorder(seen))
    breakglass = "!authorizer.group('acme.example').resource('widgets').check('breakglass').allowed()"
    hook = conditional(breakglass, "authorizer.requestResource.check('create').allowed()")
    await enforced.install(configuration("Validating", "conditional", hook))
    assert (await _create(enforced, "w1"))[0] == 201  # the admin may break glass: not called
    assert seen == []
    status, _ = await enforced.call("POST", WIDGETS, widget("w2", size=1), **{"Impersonate-User": "alice"})
    assert status == 201
    assert [review["request"]["name"] for review in seen] == ["w2"]


@pytest.mark.parametrize(
    ("expression", "alice_allowed"),  # the admin is allowed all, except as a service account without a binding
    [
        ("authorizer.group('acme.example').resource('widgets').namespace('default').check('create').allowed()", True),
        ("authorizer.group('acme.example').resource('widgets').namespace('other').check('create').allowed()", False),
        ("authorizer.requestResource.check('delete').allowed()", False),
        ("authorizer.serviceAccount('default', 'op').resource('widgets').check('create').allowed()", False),
        ("authorizer.path('/healthz').check('get').allowed()", True),
        ("!authorizer.requestResource.check('create').errored()", True),
    ],
)
async def test_a_policy_asks_the_authorizer(enforced: Api, expression: str, alice_allowed: bool) -> None:
    policy, binding = _policy("true")
    policy["spec"]["validations"] = [{"expression": expression, "message": "not authorized"}]
    for plural, obj in [("validatingadmissionpolicies", policy), ("validatingadmissionpolicybindings", binding)]:
        created, body = await enforced.call("POST", f"/apis/admissionregistration.k8s.io/v1/{plural}", obj)
        assert created == 201, body
    status, body = await enforced.call("POST", WIDGETS, widget("w1", size=1), **{"Impersonate-User": "alice"})
    assert status == (201 if alice_allowed else 422), body
    admin_allowed = "serviceAccount" not in expression
    assert (await _create(enforced, "w2"))[0] == (201 if admin_allowed else 422)


def test_the_authorizer_functions_are_for_admission_expressions_only() -> None:
    from kopf_sim.cel.programs import CompileError, compile_expression

    with pytest.raises(CompileError, match="undeclared reference to 'check'"):
        compile_expression("self.check('x')", frozenset({"self", "oldSelf"}))
    compile_expression("authorizer.path('/x').check('get').allowed()", frozenset({"authorizer"}))
