"""Service account tokens (``serviceaccounts/NAME/token``) and "who am I?" (SelfSubjectReview).

The token that a TokenRequest issues authenticates as the service account, with its groups; RBAC applies to
it; it expires with the cluster's time, and a token bound to an object ends with the object.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes
import pytest

from kopf_sim.http.app import ServerOptions, build_app
from kopf_sim.store.cluster import Cluster
from kopf_sim.timing.clock import ManualClock, SeededUids
from kopf_sim.transports.direct import DirectClient
from tests.serving import Served, served_simulator

KUBECTL = shutil.which("kubectl") or "/usr/bin/kubectl"
RBAC = Path(__file__).with_name("rbac_example.yaml")
CRD = Path(__file__).resolve().parents[2] / "examples" / "crd.yaml"
ACCOUNT = "kopfexample-account"
OPERATOR = f"system:serviceaccount:default:{ACCOUNT}"
OPERATOR_GROUPS = ["system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"]
TOKEN_URL = "/api/v1/namespaces/default/serviceaccounts/op/token"
JSON = {"Content-Type": "application/json"}


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
async def direct(clock: ManualClock) -> DirectClient:
    cluster = Cluster(clock=clock, uids=SeededUids(1))
    client = DirectClient(build_app(cluster, ServerOptions(enforce_rbac=True)), headers=JSON)
    for path, name in [("serviceaccounts", "op"), ("configmaps", "cm1")]:
        created = await client.request("POST", f"/api/v1/namespaces/default/{path}", body=_body({"name": name}))
        assert created.status == 201, created.body
    return client


def _body(metadata: dict[str, Any], spec: dict[str, Any] | None = None) -> bytes:
    return json.dumps({"metadata": metadata, **({"spec": spec} if spec is not None else {})}).encode()


async def _token(client: DirectClient, spec: dict[str, Any] | None = None) -> str:
    issued = await client.request("POST", TOKEN_URL, body=json.dumps({"spec": spec or {}}).encode())
    assert issued.status == 201, issued.body
    return str(json.loads(issued.body)["status"]["token"])


async def _as(client: DirectClient, token: str, method: str, path: str) -> tuple[int, Any]:
    response = await client.request(method, path, body=b"{}", headers={"Authorization": f"Bearer {token}"})
    return response.status, json.loads(response.body)


async def test_a_token_request_is_answered_as_the_apiserver(direct: DirectClient) -> None:
    issued = await direct.request("POST", TOKEN_URL, body=b'{"spec": {}}')
    assert issued.status == 201
    answer = json.loads(issued.body)
    token = answer["status"].pop("token")
    assert len(token) > 20
    assert answer == {
        "kind": "TokenRequest",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": {"name": "op", "namespace": "default", "creationTimestamp": None},
        "spec": {
            "audiences": ["https://kubernetes.default.svc.cluster.local"],
            "expirationSeconds": 3600,
            "boundObjectRef": None,
        },
        "status": {"expirationTimestamp": "2026-01-01T01:00:00Z"},
    }


async def test_the_token_acts_as_the_service_account_and_rbac_applies(direct: DirectClient) -> None:
    token = await _token(direct)
    status, review = await _as(direct, token, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews")
    assert (status, review["status"]["userInfo"]) == (
        201,
        {"username": "system:serviceaccount:default:op", "groups": OPERATOR_GROUPS},
    )
    status, denied = await _as(direct, token, "GET", "/api/v1/namespaces/default/configmaps/cm1")
    assert (status, denied["message"]) == (
        403,
        'configmaps "cm1" is forbidden: User "system:serviceaccount:default:op" cannot get resource "configmaps" '
        'in API group "" in the namespace "default"',
    )


async def test_a_token_expires_with_the_clusters_time(direct: DirectClient, clock: ManualClock) -> None:
    token = await _token(direct, {"expirationSeconds": 600})
    clock.advance(599)
    assert (await _as(direct, token, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews"))[0] == 201
    clock.advance(1)
    status, error = await _as(direct, token, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews")
    assert (status, error["reason"]) == (401, "Unauthorized")


async def test_a_token_bound_to_an_object_ends_with_it(direct: DirectClient) -> None:
    secret = await direct.request("POST", "/api/v1/namespaces/default/secrets", body=_body({"name": "s1"}))
    assert secret.status == 201
    token = await _token(direct, {"boundObjectRef": {"kind": "Secret", "apiVersion": "v1", "name": "s1"}})
    assert (await _as(direct, token, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews"))[0] == 201
    assert (await direct.request("DELETE", "/api/v1/namespaces/default/secrets/s1")).status == 200
    assert (await _as(direct, token, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews"))[0] == 401


@pytest.mark.parametrize(
    ("url", "spec", "status", "message"),
    [
        (
            TOKEN_URL,
            {"expirationSeconds": 599},
            422,
            'TokenRequest.authentication.k8s.io "op" is invalid: spec.expirationSeconds: Invalid value: 599: '
            "may not specify a duration less than 10 minutes",
        ),
        (
            TOKEN_URL,
            {"boundObjectRef": {"kind": "ConfigMap", "name": "cm1"}},
            422,
            'TokenRequest.authentication.k8s.io "op" is invalid: spec.boundObjectRef.kind: Unsupported value: '
            '"ConfigMap": supported values: "Pod", "Secret", "Node"',
        ),
        (TOKEN_URL, {"boundObjectRef": {"kind": "Pod", "name": "p0"}}, 404, 'pods "p0" not found'),
        (
            "/api/v1/namespaces/default/serviceaccounts/nobody/token",
            {},
            404,
            'serviceaccounts "nobody" not found',
        ),
    ],
)
async def test_a_bad_token_request_is_refused(
    direct: DirectClient, url: str, spec: dict[str, Any], status: int, message: str
) -> None:
    response = await direct.request("POST", url, body=json.dumps({"spec": spec}).encode())
    assert (response.status, json.loads(response.body)["message"]) == (status, message)


async def test_the_token_subresource_is_create_only_and_discovered(direct: DirectClient) -> None:
    assert (await direct.request("GET", TOKEN_URL)).status == 405
    listing = json.loads((await direct.request("GET", "/api/v1")).body)
    [entry] = [item for item in listing["resources"] if item["name"] == "serviceaccounts/token"]
    assert (entry["group"], entry["version"], entry["kind"], entry["verbs"]) == (
        "authentication.k8s.io",
        "v1",
        "TokenRequest",
        ["create"],
    )


# -- Through kubectl and the official client, against ``kopf-sim serve --rbac`` ------------------------------


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    tmp = tmp_path_factory.mktemp("tokens")
    options = ("--controllers", "none", "--tls", "--token", "auto", "--rbac", "--load", str(CRD), "--load", str(RBAC))
    with served_simulator(tmp / "kubeconfig", *options) as served:  # kubectl sends tokens over TLS only
        yield served


def _kubectl(served: Served, *args: str) -> subprocess.CompletedProcess[str]:
    command = [KUBECTL, f"--kubeconfig={served.kubeconfig}", "--request-timeout=10s", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=30)


@pytest.mark.kubectl
def test_kubectl_create_token_and_whoami(served: Served) -> None:
    created = _kubectl(served, "create", "token", ACCOUNT, "-n", "default", "--duration=20m")
    assert created.returncode == 0, created.stderr
    token = created.stdout.strip()
    whoami = _kubectl(served, "auth", "whoami", f"--token={token}", "-o", "json")
    assert whoami.returncode == 0, whoami.stderr
    assert json.loads(whoami.stdout)["status"]["userInfo"] == {"username": OPERATOR, "groups": OPERATOR_GROUPS}
    assert _kubectl(served, "get", "kopfexamples", "-n", "default", f"--token={token}").returncode == 0
    denied = _kubectl(served, "get", "pods", "-n", "default", f"--token={token}")
    assert denied.stderr.strip() == (
        f'Error from server (Forbidden): pods is forbidden: User "{OPERATOR}" cannot list resource "pods" '
        'in API group "" in the namespace "default"'
    )
    admin = _kubectl(served, "auth", "whoami")
    expected = ["ATTRIBUTE", "VALUE", "Username", "kubernetes-admin", "Groups", "[system:masters"]
    assert admin.stdout.split() == [*expected, "system:authenticated]"]


def test_the_official_client_gets_a_token_of_the_service_account(served: Served, tmp_path: Path) -> None:
    configuration = kubernetes.client.Configuration()
    kubernetes.config.load_kube_config(  # type: ignore[no-untyped-call]
        config_file=str(served.kubeconfig), client_configuration=configuration
    )
    with kubernetes.client.ApiClient(configuration) as admin:
        request = kubernetes.client.AuthenticationV1TokenRequest(
            spec=kubernetes.client.V1TokenRequestSpec(audiences=[], expiration_seconds=900)
        )
        issued = kubernetes.client.CoreV1Api(admin).create_namespaced_service_account_token(ACCOUNT, "default", request)
    assert issued.spec is not None and issued.status is not None
    assert issued.spec.expiration_seconds == 900
    configuration.refresh_api_key_hook = None  # it would set the kubeconfig's token again
    configuration.api_key = {"authorization": f"Bearer {issued.status.token}"}  # instead of the admin's
    with kubernetes.client.ApiClient(configuration) as operator:
        asked = kubernetes.client.V1SelfSubjectReview()
        review = kubernetes.client.AuthenticationV1Api(operator).create_self_subject_review(asked)
        assert review.status is not None and review.status.user_info is not None
        assert review.status.user_info.username == OPERATOR
        with pytest.raises(kubernetes.client.ApiException) as raised:
            kubernetes.client.CoreV1Api(operator).list_namespaced_pod("default")
    assert raised.value.status == 403
