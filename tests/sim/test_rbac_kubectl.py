"""RBAC enforced by a served simulator (``kopf-sim serve --rbac``), through the real kubectl.

The kubeconfig's user is a cluster-admin; ``--as`` impersonates the deployment chapter's service account (or
a user with an aggregated ClusterRole); ``kubectl auth can-i`` and the requests themselves must agree.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.serving import Served, served_simulator

pytestmark = pytest.mark.kubectl

KUBECTL = shutil.which("kubectl") or "/usr/bin/kubectl"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
RBAC = Path(__file__).with_name("rbac_example.yaml")
OPERATOR = "system:serviceaccount:default:kopfexample-account"


class Kubectl:
    def __init__(self, served: Served, cache: Path) -> None:
        self.base = [KUBECTL, f"--kubeconfig={served.kubeconfig}", f"--cache-dir={cache}", "--request-timeout=10s"]

    def __call__(self, *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*self.base, *args], input=input, capture_output=True, text=True, timeout=30)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    tmp = tmp_path_factory.mktemp("rbac")
    loads = ("--load", str(EXAMPLES / "crd.yaml"), "--load", str(RBAC))
    user = f"--rbac-user={OPERATOR}=operator-token"
    with served_simulator(tmp / "kubeconfig", "--controllers", "none", "--rbac", user, *loads) as served:
        yield served


@pytest.fixture(scope="module")
def kubectl(served: Served, tmp_path_factory: pytest.TempPathFactory) -> Kubectl:
    return Kubectl(served, tmp_path_factory.mktemp("cache"))


@pytest.mark.parametrize(
    ("as_", "verb", "resource", "answer"),
    [
        (OPERATOR, "list", "kopfexamples.kopf.dev", "yes"),
        (OPERATOR, "patch", "kopfexamples.kopf.dev", "yes"),
        (OPERATOR, "delete", "kopfexamples.kopf.dev", "no"),
        (OPERATOR, "create", "events", "yes"),
        (OPERATOR, "list", "pods", "no"),
        (OPERATOR, "watch", "namespaces", "yes"),
        ("alice", "list", "configmaps", "yes"),  # through the aggregated ClusterRole
        ("alice", "delete", "configmaps", "no"),
        ("bob", "get", "configmaps", "no"),
    ],
)
def test_can_i_answers_as_the_bindings_allow(kubectl: Kubectl, as_: str, verb: str, resource: str, answer: str) -> None:
    result = kubectl("auth", "can-i", verb, resource, "-n", "default", f"--as={as_}")
    assert result.stdout.strip() == answer, result.stderr


def test_an_allowed_request_succeeds_and_a_denied_one_is_forbidden(kubectl: Kubectl) -> None:
    allowed = kubectl("get", "kopfexamples", "-n", "default", f"--as={OPERATOR}")
    assert allowed.returncode == 0, allowed.stderr
    denied = kubectl("get", "pods", "-n", "default", f"--as={OPERATOR}")
    assert denied.returncode != 0
    assert denied.stderr.strip() == (
        f'Error from server (Forbidden): pods is forbidden: User "{OPERATOR}" cannot list resource "pods" '
        'in API group "" in the namespace "default"'
    )
    cluster_wide = kubectl("get", "configmaps", "-A", "--as=bob")
    assert cluster_wide.stderr.strip() == (
        'Error from server (Forbidden): configmaps is forbidden: User "bob" cannot list resource "configmaps" '
        'in API group "" at the cluster scope'
    )


def test_a_named_object_and_a_subresource_are_named_in_the_denial(kubectl: Kubectl) -> None:
    body = {"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "metadata": {"name": "kex"}, "spec": {}}
    assert kubectl("apply", "-f", "-", input=json.dumps(body)).returncode == 0
    denied = kubectl("delete", "kopfexample", "kex", "-n", "default", f"--as={OPERATOR}")
    assert denied.stderr.strip() == (
        f'Error from server (Forbidden): kopfexamples.kopf.dev "kex" is forbidden: User "{OPERATOR}" cannot '
        'delete resource "kopfexamples" in API group "kopf.dev" in the namespace "default"'
    )
    read = kubectl("patch", "kopfexample", "kex", "-n", "default", "--type=merge", "-p", "{}", f"--as={OPERATOR}")
    assert 'cannot get resource "kopfexamples"' in read.stderr  # kubectl reads first: the Role has no "get"


def test_a_subresource_is_named_in_the_denial(served: Served, kubectl: Kubectl) -> None:
    body = {"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "metadata": {"name": "kex2"}, "spec": {}}
    assert kubectl("apply", "-f", "-", input=json.dumps(body)).returncode == 0
    url = "/apis/kopf.dev/v1/namespaces/default/kopfexamples/kex2"
    assert request(served, "PATCH", url, {"spec": {"x": 1}})[0] == 200
    code, status = request(served, "PATCH", f"{url}/status", {"status": {"x": 1}})
    assert (code, status["message"]) == (
        403,
        f'kopfexamples.kopf.dev "kex2" is forbidden: User "{OPERATOR}" cannot patch resource "kopfexamples/status" '
        'in API group "kopf.dev" in the namespace "default"',
    )


def test_only_an_allowed_user_may_impersonate(kubectl: Kubectl) -> None:
    denied = kubectl("get", "pods", "--as=bob", "--as=alice")  # the last --as wins: as kubectl does
    assert "Forbidden" in denied.stderr


def request(served: Served, method: str, path: str, body: object = None) -> tuple[int, dict[str, Any]]:
    """A request with the operator's token (``--rbac-user``), as the operator would make it."""
    headers = {"Authorization": "Bearer operator-token", "Content-Type": "application/merge-patch+json"}
    data = None if body is None else json.dumps(body).encode()
    sent = urllib.request.Request(served.url + path, data=data, headers=headers, method=method)
    try:
        with urllib.request.urlopen(sent, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_a_users_token_acts_as_that_user(served: Served) -> None:
    assert request(served, "GET", "/apis/kopf.dev/v1/namespaces/default/kopfexamples")[0] == 200
    code, status = request(served, "GET", "/api/v1/namespaces/default/secrets")
    assert (code, status["reason"]) == (403, "Forbidden")
    assert status["details"] == {"kind": "secrets"}
