"""Client certificates as identities under ``kopf-sim serve --tls``: CN is the user, each O a group.

``--cert-user PATH=NAME[,GROUP...]`` writes a kubeconfig with a certificate signed by the served CA;
RBAC applies to its user; the admin kubeconfig stays a cluster-admin; a certificate of another CA is refused.
"""

from __future__ import annotations

import base64
import json
import shutil
import ssl
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import kubernetes
import pytest
import yaml
from click.testing import CliRunner
from cryptography import x509
from cryptography.x509.oid import NameOID

from kopf_sim.cli import main
from kopf_sim.transports.certs import generate_self_signed, sign_client_certificate
from tests.serving import Served, served_simulator

KUBECTL = shutil.which("kubectl") or "/usr/bin/kubectl"
RBAC = Path(__file__).with_name("rbac_example.yaml")


def test_a_client_certificate_names_the_user_and_groups() -> None:
    bundle = generate_self_signed()
    cert_pem, key_pem = sign_client_certificate(bundle, "alice", ["dev", "ops"])
    cert = x509.load_pem_x509_certificate(cert_pem)
    assert [a.value for a in cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)] == ["alice"]
    assert [a.value for a in cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)] == ["dev", "ops"]
    assert cert.issuer == x509.load_pem_x509_certificate(bundle.ca_pem).subject
    assert key_pem.startswith(b"-----BEGIN PRIVATE KEY-----")
    with pytest.raises(ValueError, match="needs a user name"):
        sign_client_certificate(bundle, "")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--cert-user", "/tmp/x.kubeconfig=alice"], "--cert-user needs --tls"),
        (["--tls", "--cert-user", "alice"], "expected PATH=NAME[,GROUP...], got 'alice'"),
        (["--tls", "--cert-user", "/tmp/x=alice,,dev"], "expected PATH=NAME[,GROUP...]"),
    ],
)
def test_bad_cert_users_are_refused_clearly(args: list[str], message: str) -> None:
    result = CliRunner().invoke(main, ["serve", *args])
    assert result.exit_code == 2
    assert message in result.output
    assert "Traceback" not in result.output


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    tmp = tmp_path_factory.mktemp("certs")
    options = ["--controllers", "none", "--tls", "--token", "auto", "--rbac", "--load", str(RBAC)]
    options += ["--cert-user", f"{tmp / 'alice.kubeconfig'}=alice,dev,ops"]
    options += ["--cert-user", f"{tmp / 'root.kubeconfig'}=root,system:masters"]
    with served_simulator(tmp / "kubeconfig", *options) as served:
        yield served


def _kubectl(kubeconfig: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [KUBECTL, f"--kubeconfig={kubeconfig}", "--request-timeout=10s", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=30)


def _whoami(kubeconfig: Path) -> dict[str, object]:
    result = _kubectl(kubeconfig, "auth", "whoami", "-o", "json")
    assert result.returncode == 0, result.stderr
    info: dict[str, object] = json.loads(result.stdout)["status"]["userInfo"]
    return info


@pytest.mark.kubectl
def test_kubectl_with_a_client_certificate_acts_as_its_user(served: Served) -> None:
    alice = served.kubeconfig.with_name("alice.kubeconfig")
    assert "token" not in yaml.safe_load(alice.read_text())["users"][0]["user"]
    assert _whoami(alice) == {"username": "alice", "groups": ["dev", "ops", "system:authenticated"]}
    assert _kubectl(alice, "get", "configmaps", "-n", "default").returncode == 0  # the aggregated ClusterRole
    denied = _kubectl(alice, "get", "pods", "-n", "default")
    assert denied.stderr.strip() == (
        'Error from server (Forbidden): pods is forbidden: User "alice" cannot list resource "pods" '
        'in API group "" in the namespace "default"'
    )


@pytest.mark.kubectl
def test_the_masters_group_and_the_admin_kubeconfig_are_cluster_admins(served: Served) -> None:
    root = served.kubeconfig.with_name("root.kubeconfig")
    assert _whoami(root) == {"username": "root", "groups": ["system:masters", "system:authenticated"]}
    assert _kubectl(root, "get", "pods", "-n", "default").returncode == 0
    assert _whoami(served.kubeconfig)["username"] == "kubernetes-admin"


def test_the_official_client_authenticates_with_the_certificate(served: Served) -> None:
    configuration = kubernetes.client.Configuration()
    kubernetes.config.load_kube_config(  # type: ignore[no-untyped-call]
        config_file=str(served.kubeconfig.with_name("alice.kubeconfig")), client_configuration=configuration
    )
    with kubernetes.client.ApiClient(configuration) as client:
        review = kubernetes.client.AuthenticationV1Api(client).create_self_subject_review(
            kubernetes.client.V1SelfSubjectReview()
        )
        assert review.status is not None and review.status.user_info is not None
        assert review.status.user_info.username == "alice"
        with pytest.raises(kubernetes.client.ApiException) as raised:
            kubernetes.client.CoreV1Api(client).list_namespaced_pod("default")
    assert raised.value.status == 403


def test_a_certificate_of_another_ca_is_refused(served: Served, tmp_path: Path) -> None:
    stranger = generate_self_signed()
    cert_pem, key_pem = sign_client_certificate(stranger, "root", ["system:masters"])
    (tmp_path / "tls.crt").write_bytes(cert_pem)
    (tmp_path / "tls.key").write_bytes(key_pem)
    kubeconfig = yaml.safe_load(served.kubeconfig.read_text())
    (tmp_path / "ca.crt").write_bytes(
        base64.b64decode(kubeconfig["clusters"][0]["cluster"]["certificate-authority-data"])
    )
    context = ssl.create_default_context(cafile=str(tmp_path / "ca.crt"))
    context.load_cert_chain(tmp_path / "tls.crt", tmp_path / "tls.key")
    with pytest.raises((ssl.SSLError, urllib.error.URLError, ConnectionError)):
        urllib.request.urlopen(f"{served.url}/api/v1/namespaces/default/pods", context=context, timeout=10).read()
