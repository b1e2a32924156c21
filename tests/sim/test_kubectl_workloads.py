"""The real kubectl against a served simulator with its controllers: rollouts, jobs, nodes, lists, explain.

One ``kopf-sim serve`` subprocess (127.0.0.1, a free port, quick simulated pods) serves the module; each
test works in a namespace of its own. Time is real here (kubectl waits in real time), so the pods'
delays are short.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.serving import served_simulator

pytestmark = pytest.mark.kubectl

KUBECTL = shutil.which("kubectl") or "/usr/bin/kubectl"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
Kubectl = Callable[..., str]
_counter = itertools.count()

STRICT_CRD = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.workloads.example}
spec:
  group: workloads.example
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget}
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          description: A gadget with a strict schema.
          properties:
            spec:
              type: object
              properties:
                size: {type: integer, description: How big the gadget is.}
"""


class KubectlError(AssertionError):
    def __init__(self, args: tuple[str, ...], result: subprocess.CompletedProcess[str]) -> None:
        super().__init__(
            f"kubectl {' '.join(args)} exited with {result.returncode}\n"
            f"stdout: {result.stdout}\nstderr: {result.stderr}"
        )
        self.stderr = result.stderr


def wait_until(condition: Callable[[], Any], timeout: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value or time.monotonic() > deadline:
            assert value, f"not met within {timeout} s; last value: {value!r}"
            return value
        time.sleep(0.1)


@pytest.fixture(scope="module")
def kubeconfig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    tmp = tmp_path_factory.mktemp("kubectl-workloads")
    delays = (
        "--pod-start-delay",
        "0.2",
        "--pod-ready-delay",
        "0.2",
        "--pod-stop-delay",
        "0.2",
        "--pod-run-time",
        "0.5",
    )
    with served_simulator(tmp / "kubeconfig", "--load", str(EXAMPLES / "crd.yaml"), *delays) as served:
        yield served.kubeconfig


@pytest.fixture(scope="module")
def kubectl(kubeconfig: Path, tmp_path_factory: pytest.TempPathFactory) -> Kubectl:
    cache = tmp_path_factory.mktemp("kubectl-cache")

    def run(*args: str, input: str | None = None, timeout: float = 60) -> str:
        command = [KUBECTL, f"--kubeconfig={kubeconfig}", f"--cache-dir={cache}", *args]
        result = subprocess.run(command, input=input, capture_output=True, text=True, timeout=timeout)
        if result.returncode != 0:
            raise KubectlError(args, result)
        return result.stdout

    return run


@pytest.fixture
def ns(kubectl: Kubectl) -> str:
    name = f"w-{os.getpid()}-{next(_counter)}"
    kubectl("create", "namespace", name)
    return name


def rows(output: str) -> list[list[str]]:
    return [line.split() for line in output.strip().splitlines()]


def test_a_deployments_whole_life(kubectl: Kubectl, ns: str) -> None:
    n = ("-n", ns)
    assert (
        kubectl("create", "deployment", "web", "--image=nginx", "--replicas=3", *n).strip()
        == "deployment.apps/web created"
    )
    assert (
        kubectl("rollout", "status", "deployment/web", "--timeout=30s", *n)
        .strip()
        .endswith('deployment "web" successfully rolled out')
    )
    assert "condition met" in kubectl("wait", "--for=condition=Available", "deployment/web", "--timeout=30s", *n)
    table = rows(kubectl("get", "pods", "-o", "wide", *n))
    assert table[0] == [
        "NAME",
        "READY",
        "STATUS",
        "RESTARTS",
        "AGE",
        "IP",
        "NODE",
        "NOMINATED",
        "NODE",
        "READINESS",
        "GATES",
    ]
    assert len(table) == 4
    for row in table[1:]:
        assert row[1:4] == ["1/1", "Running", "0"]
        assert row[5].startswith("10.244.") and row[6].startswith("node-")
    assert rows(kubectl("get", "deployment", "web", *n))[1][:4] == ["web", "3/3", "3", "3"]

    assert (
        kubectl("set", "image", "deployment/web", "nginx=nginx:1.27", *n).strip() == "deployment.apps/web image updated"
    )
    assert "successfully rolled out" in kubectl("rollout", "status", "deployment/web", "--timeout=30s", *n)
    sets = json.loads(kubectl("get", "replicasets", "-o", "json", *n))["items"]
    assert sorted(rs["spec"]["replicas"] for rs in sets) == [0, 3]
    images = kubectl("get", "pods", "-o", "jsonpath={.items[*].spec.containers[0].image}", *n).split()
    wait_until(
        lambda: (
            set(kubectl("get", "pods", "-o", "jsonpath={.items[*].spec.containers[0].image}", *n).split())
            == {"nginx:1.27"}
        )
    )
    assert images  # some pods were there all along
    history = kubectl("rollout", "history", "deployment/web", *n)
    assert [row[0] for row in rows(history)[2:]] == ["1", "2"]

    assert kubectl("rollout", "undo", "deployment/web", *n).strip() == "deployment.apps/web rolled back"
    assert "successfully rolled out" in kubectl("rollout", "status", "deployment/web", "--timeout=30s", *n)
    deployment = json.loads(kubectl("get", "deployment", "web", "-o", "json", *n))
    assert deployment["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx"
    assert deployment["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "3"

    assert kubectl("scale", "deployment/web", "--replicas=0", *n).strip() == "deployment.apps/web scaled"
    wait_until(lambda: kubectl("get", "pods", "-o", "name", *n).strip() == "")
    assert rows(kubectl("get", "deployment", "web", *n))[1][:4] == ["web", "0/0", "0", "0"]


def test_a_job_to_completion(kubectl: Kubectl, ns: str) -> None:
    assert kubectl("create", "job", "once", "--image=busybox", "-n", ns).strip() == "job.batch/once created"
    assert (
        kubectl("wait", "--for=condition=complete", "job/once", "--timeout=30s", "-n", ns).strip()
        == "job.batch/once condition met"
    )
    assert rows(kubectl("get", "job", "once", "-n", ns))[1][:3] == ["once", "Complete", "1/1"]
    [pod] = rows(kubectl("get", "pods", "-n", ns))[1:]
    assert pod[1:3] == ["0/1", "Completed"]


def test_statefulset_and_daemonset_rollouts(kubectl: Kubectl, ns: str) -> None:
    manifests = [
        {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": {"name": "db"},
            "spec": {
                "replicas": 2,
                "serviceName": "db",
                "selector": {"matchLabels": {"app": "db"}},
                "template": {
                    "metadata": {"labels": {"app": "db"}},
                    "spec": {"containers": [{"name": "db", "image": "postgres"}]},
                },
                "volumeClaimTemplates": [
                    {
                        "metadata": {"name": "data"},
                        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
                    }
                ],
            },
        },
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": "agent"},
            "spec": {
                "selector": {"matchLabels": {"app": "agent"}},
                "template": {
                    "metadata": {"labels": {"app": "agent"}},
                    "spec": {"containers": [{"name": "agent", "image": "agent"}]},
                },
            },
        },
    ]
    kubectl("apply", "-n", ns, "-f", "-", input=yaml.safe_dump_all(manifests))
    assert (
        kubectl("rollout", "status", "sts/db", "--timeout=30s", "-n", ns).splitlines()[-1]
        == "partitioned roll out complete: 2 new pods have been updated..."
    )  # (the partition is defaulted to 0)
    assert 'daemon set "agent" successfully rolled out' in kubectl(
        "rollout", "status", "ds/agent", "--timeout=30s", "-n", ns
    )
    claims = rows(kubectl("get", "pvc", "-n", ns))
    assert [row[:2] for row in claims[1:]] == [["data-db-0", "Bound"], ["data-db-1", "Bound"]]
    assert claims[1][3:6] == ["1Gi", "RWO", "standard"]


def test_lists_and_their_client_side_validation(kubectl: Kubectl, ns: str, tmp_path: Path) -> None:
    items = [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}, "data": {"a": "1"}},
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "listed"},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"app": "listed"}},
                "template": {
                    "metadata": {"labels": {"app": "listed"}},
                    "spec": {"containers": [{"name": "c", "image": "nginx"}]},
                },
            },
        },
        {"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "metadata": {"name": "listed"}, "spec": {"field": "x"}},
    ]
    path = tmp_path / "list.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    assert kubectl("apply", "-n", ns, "-f", str(path)).splitlines() == [
        "configmap/settings created",
        "deployment.apps/listed created",
        "kopfexample.kopf.dev/listed created",
    ]

    kubectl("apply", "-f", "-", input=STRICT_CRD)
    wait_until(lambda: "Gadget" in kubectl("api-resources", "--api-group=workloads.example"))
    bad = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [
            {
                "apiVersion": "workloads.example/v1",
                "kind": "Gadget",
                "metadata": {"name": "g"},
                "spec": {"size": 1, "colour": "red"},
            }
        ],
    }
    with pytest.raises(KubectlError) as error:
        kubectl("apply", "-n", ns, "-f", "-", input=json.dumps(bad))
    assert 'unknown field "colour"' in error.value.stderr

    explained = kubectl("explain", "--output=plaintext-openapiv2", "gadgets.spec.size")
    assert "How big the gadget is." in explained
    assert "FIELD:    size <integer>" in explained


def test_nodes_and_graceful_deletion(kubectl: Kubectl, ns: str) -> None:
    table = rows(kubectl("get", "nodes"))
    assert table[0] == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    assert [row[:2] for row in table[1:]] == [["node-1", "Ready"], ["node-2", "Ready"], ["node-3", "Ready"]]
    kubectl("run", "lonely", "--image=nginx", "-n", ns)
    assert "condition met" in kubectl("wait", "--for=condition=Ready", "pod/lonely", "--timeout=30s", "-n", ns)
    started = time.monotonic()
    assert kubectl("delete", "pod", "lonely", "-n", ns).strip() == 'pod "lonely" deleted'  # waits till gone
    assert time.monotonic() - started < 10
    assert kubectl("get", "pods", "-n", ns, "-o", "name").strip() == ""
