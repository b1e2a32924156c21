"""ValidatingAdmissionPolicies through the real kubectl: denials and ``Warning:`` lines as the apiserver sends them."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.serving import Served, served_simulator

pytestmark = pytest.mark.kubectl

KUBECTL = shutil.which("kubectl") or "/usr/bin/kubectl"
POLICIES = Path(__file__).with_name("policies.yaml")


class Kubectl:
    def __init__(self, served: Served, cache: Path) -> None:
        self.base = [KUBECTL, f"--kubeconfig={served.kubeconfig}", f"--cache-dir={cache}", "--request-timeout=10s"]

    def __call__(self, *args: str, body: Any = None) -> subprocess.CompletedProcess[str]:
        data = None if body is None else json.dumps(body)
        return subprocess.run([*self.base, *args], input=data, capture_output=True, text=True, timeout=30)


@pytest.fixture(scope="module")
def kubectl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kubectl]:
    tmp = tmp_path_factory.mktemp("policies")
    with served_simulator(tmp / "kubeconfig", "--controllers", "none", "--load", str(POLICIES)) as served:
        yield Kubectl(served, tmp / "cache")


def deployment(name: str, replicas: int) -> dict[str, Any]:
    labels = {"app": name}
    template = {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "app", "image": "nginx"}]}}
    spec = {"replicas": replicas, "selector": {"matchLabels": labels}, "template": template}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name}, "spec": spec}


def test_a_write_within_the_policy_is_allowed(kubectl: Kubectl) -> None:
    result = kubectl("apply", "-f", "-", body=deployment("small", 3))
    assert (result.returncode, result.stderr) == (0, "")


def test_a_denial_names_the_policy_and_binding(kubectl: Kubectl) -> None:
    result = kubectl("apply", "-f", "-", body=deployment("big", 9))
    assert result.returncode != 0
    assert result.stderr.strip() == (
        "The deployments \"big\" is invalid: : ValidatingAdmissionPolicy 'replica-limit.example.com' with binding "
        "'replica-limit-binding' denied request: replicas must be no greater than 5"
    )
    assert "NotFound" in kubectl("get", "deployment", "big").stderr


def test_a_denial_with_a_reason_has_its_status_code(kubectl: Kubectl) -> None:
    result = kubectl("apply", "-f", "-", body=deployment("forbidden-one", 1))
    assert result.stderr.strip() == (
        'Error from server (Forbidden): error when creating "STDIN": ValidatingAdmissionPolicy '
        "'replica-limit.example.com' with binding 'replica-limit-binding' denied request: failed expression: "
        "!object.metadata.name.startsWith('forbidden-')"
    )


def test_a_warning_is_printed_by_kubectl_and_the_write_goes_through(kubectl: Kubectl) -> None:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "unlabelled"}, "data": {"a": "b"}}
    result = kubectl("apply", "-f", "-", body=body)
    assert result.returncode == 0
    assert result.stderr.strip() == (
        "Warning: Validation failed for ValidatingAdmissionPolicy 'team-label.example.com' with binding "
        "'team-label-binding': every ConfigMap needs a team label"
    )
    labelled = {**body, "metadata": {"name": "labelled", "labels": {"team": "a"}}}
    assert kubectl("apply", "-f", "-", body=labelled).stderr == ""
