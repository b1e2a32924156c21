"""CRD validation rules (``x-kubernetes-validations``) through the real kubectl, worded as the apiserver words them.

The CRD (cel_widgets.yaml) has the rules that kubebuilder projects commonly write: cross-field checks,
immutability and other transitions with ``oldSelf``, string formats, quantities, URLs, sorted and unique lists.
"""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.serving import served_simulator

pytestmark = pytest.mark.kubectl

KUBECTL = shutil.which("kubectl") or "/usr/bin/kubectl"
CRD_PATH = Path(__file__).with_name("cel_widgets.yaml")
VALID_SPEC: dict[str, Any] = {
    "storageClass": "fast",
    "replicas": 3,
    "minReplicas": 1,
    "maxReplicas": 5,
    "mode": "Fast",
    "name": "web-1",
    "image": "nginx:1.25",
    "memory": "512Mi",
    "tls": True,
    "endpoint": "https://example.com/x",
    "tags": ["alpha", "beta"],
    "labels": {"team": "a"},
    "ports": [{"name": "http", "port": 80}, {"name": "https", "port": 443}],
}


class Kubectl:
    def __init__(self, kubeconfig: Path, cache: Path) -> None:
        self.base = [KUBECTL, f"--kubeconfig={kubeconfig}", f"--cache-dir={cache}", "--request-timeout=10s"]

    def run(self, *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*self.base, *args], input=input, capture_output=True, text=True, timeout=30)

    def apply(self, name: str, spec: dict[str, Any]) -> subprocess.CompletedProcess[str]:
        body = {"apiVersion": "cel.example/v1", "kind": "Widget", "metadata": {"name": name}, "spec": spec}
        return self.run("apply", "-f", "-", input=json.dumps(body))


@pytest.fixture(scope="module")
def kubectl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kubectl]:
    tmp = tmp_path_factory.mktemp("cel")
    with served_simulator(tmp / "kubeconfig", "--controllers", "none", "--load", str(CRD_PATH)) as served:
        yield Kubectl(served.kubeconfig, tmp / "cache")


def test_valid_objects_are_created_and_updated(kubectl: Kubectl) -> None:
    created = kubectl.apply("valid", VALID_SPEC)
    assert created.returncode == 0, created.stderr
    assert created.stdout.strip() == "widget.cel.example/valid created"
    changed = {**VALID_SPEC, "replicas": 7, "tags": ["alpha", "beta", "gamma"], "mode": "Slow"}
    updated = kubectl.apply("valid", changed)
    assert updated.returncode == 0, updated.stderr
    assert updated.stdout.strip() == "widget.cel.example/valid configured"
    stored = json.loads(kubectl.run("get", "widget", "valid", "-o", "json").stdout)
    assert stored["spec"]["replicas"] == 7


INVALID: list[tuple[str, dict[str, Any], str]] = [
    (
        "cross-field",
        {"minReplicas": 9},
        'spec.minReplicas: Invalid value: "object": minReplicas must not exceed maxReplicas',
    ),
    ("enum-message-expression", {"mode": "Weird"}, 'spec: Invalid value: "object": mode Weird is not supported'),
    ("required-together", {"tls": None}, "spec: Required value: tls and endpoint go together"),
    ("maximum", {"replicas": 11}, 'spec.replicas: Invalid value: "integer": at most 10 replicas'),
    ("dns-label", {"name": "Web_1"}, 'spec.name: Invalid value: "string": must be a DNS-1123 label'),
    ("forbidden-tag", {"image": "nginx:latest"}, "spec.image: Forbidden: pin the image's tag"),
    ("quantity", {"memory": "2Gi"}, 'spec.memory: Invalid value: "string": must be less than 1Gi'),
    ("url", {"endpoint": "http://example.com"}, 'spec.endpoint: Invalid value: "string": must be an https URL'),
    ("sorted", {"tags": ["beta", "alpha"]}, 'spec.tags: Invalid value: "array": tags must be sorted'),
    ("lower-case", {"tags": ["Alpha"]}, 'spec.tags: Invalid value: "array": tags must be lower-case'),
    ("map-keys", {"labels": {"kubernetes.io/x": "y"}}, 'spec.labels: Invalid value: "object": reserved label prefix'),
    (
        "list-exists",
        {"ports": [{"name": "https", "port": 443}]},
        'spec.ports: Invalid value: "array": an http port is required',
    ),
    (
        "item",
        {"ports": [{"name": "http", "port": 0}]},
        'spec.ports[0]: Invalid value: "object": port 0 is out of range',
    ),
]


@pytest.mark.parametrize(("change", "message"), [(c, m) for _, c, m in INVALID], ids=[i for i, _, _ in INVALID])
def test_an_invalid_object_is_rejected_with_the_apiservers_message(
    kubectl: Kubectl, change: dict[str, Any], message: str
) -> None:
    spec = {key: value for key, value in {**VALID_SPEC, **change}.items() if value is not None}
    result = kubectl.apply("invalid", spec)
    assert result.returncode != 0
    assert result.stderr.strip() == f'The Widget "invalid" is invalid: {message}'
    assert "NotFound" in kubectl.run("get", "widget", "invalid").stderr


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"storageClass": "slow"}, 'spec.storageClass: Invalid value: "string": storageClass is immutable'),
        ({"replicas": 0}, 'spec.replicas: Invalid value: "integer": cannot scale to zero'),
    ],
    ids=["immutable", "transition"],
)
def test_a_transition_rule_compares_with_the_stored_object(
    kubectl: Kubectl, change: dict[str, Any], message: str, request: pytest.FixtureRequest
) -> None:
    name = f"transition-{request.node.callspec.id}"
    assert kubectl.apply(name, VALID_SPEC).returncode == 0
    result = kubectl.apply(name, {**VALID_SPEC, **change})
    assert result.stderr.strip() == f'The Widget "{name}" is invalid: {message}'


def test_several_failures_are_listed_together(kubectl: Kubectl) -> None:
    result = kubectl.apply("several", {**VALID_SPEC, "replicas": 11, "image": "nginx:latest"})
    assert result.stderr.strip().splitlines() == [
        'The Widget "several" is invalid: ',
        '* spec.replicas: Invalid value: "integer": at most 10 replicas',
        "* spec.image: Forbidden: pin the image's tag",
    ]


def test_a_rule_that_does_not_compile_rejects_the_crd_and_nothing_is_stored(kubectl: Kubectl) -> None:
    crd = yaml.safe_load(CRD_PATH.read_text())
    crd = copy.deepcopy(crd)
    crd["metadata"]["name"] = "gadgets.cel.example"
    crd["spec"]["names"] = {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"}
    spec_schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec_schema["x-kubernetes-validations"] = [{"rule": "self.minReplicas <="}]
    result = kubectl.run("apply", "-f", "-", input=json.dumps(crd))
    assert result.returncode != 0
    assert result.stderr.strip().splitlines() == [
        'The CustomResourceDefinition "gadgets.cel.example" is invalid: '
        "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: "
        'apiextensions.ValidationRule{Rule:"self.minReplicas <=", Message:"", MessageExpression:"", '
        'Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:"", OptionalOldSelf:(*bool)(nil)}: '
        "compilation failed: ERROR: <input>:1:20: Syntax error: mismatched input '<EOF>' expecting "
        "{'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, "
        "IDENTIFIER}",
        " | self.minReplicas <=",
        " | ...................^",
    ]
    assert "NotFound" in kubectl.run("get", "crd", "gadgets.cel.example").stderr
