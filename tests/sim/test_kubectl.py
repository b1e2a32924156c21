"""The real kubectl against a served simulator: every command must behave as with a real apiserver.

One ``kopf-sim serve`` subprocess serves the whole module (on 127.0.0.1, a free port); each test uses its own
namespace or unique names, so the tests do not depend on each other or on their order. These tests are about the
apiserver itself, so its built-in controllers are off (a bare apiserver, as in envtest: a Deployment stays as it
is created); tests/sim/test_kubectl_workloads.py drives kubectl against the controllers.
"""

from __future__ import annotations

import itertools
import json
import os
import queue
import shutil
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any, Protocol

import pytest
import yaml

from tests.serving import served_simulator

pytestmark = pytest.mark.kubectl

KUBECTL = shutil.which("kubectl") or "/usr/bin/kubectl"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
CONFLICT_MESSAGE = "the object has been modified; please apply your changes to the latest version and try again"

WIDGETS_CRD = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gizmos.kubectl.example
spec:
  group: kubectl.example
  scope: Namespaced
  names: {plural: gizmos, singular: gizmo, kind: Gizmo, shortNames: [gz]}
  versions:
    - name: v1
      served: true
      storage: true
      additionalPrinterColumns:
        - {name: Size, type: integer, jsonPath: .spec.size}
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
                size: {type: integer, description: How big the gizmo is.}
"""

DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
  labels: {{app: {name}}}
spec:
  replicas: 1
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
      containers:
        - {{name: main, image: "nginx:1", ports: [{{containerPort: 80}}]}}
        - {{name: side, image: "busybox:1"}}
"""


class Kubectl(Protocol):
    def __call__(
        self, *args: str, input: str | None = None, check: bool = True, timeout: float = 20, quiet: bool = True
    ) -> str: ...


class KubectlError(AssertionError):
    def __init__(self, args: tuple[str, ...], result: subprocess.CompletedProcess[str]) -> None:
        super().__init__(
            f"kubectl {' '.join(args)} exited with {result.returncode}\n"
            f"stdout: {result.stdout}\nstderr: {result.stderr}"
        )
        self.stdout = result.stdout
        self.stderr = result.stderr
        self.returncode = result.returncode


_counter = itertools.count()


def unique(prefix: str) -> str:
    return f"{prefix}-{os.getpid()}-{next(_counter)}"


def poll_until(condition: Callable[[], Any], timeout: float = 5.0, interval: float = 0.05) -> Any:
    """Poll until the condition returns something truthy; fail with the last value otherwise."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s; last value: {value!r}")
        time.sleep(interval)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """A served simulator (``kopf-sim serve``) with the example CRD and objects loaded; its URL and kubeconfig."""
    tmp = tmp_path_factory.mktemp("kubectl")
    manifests = ("--load", str(EXAMPLES / "crd.yaml"), "--load", str(EXAMPLES / "objects.yaml"))
    with served_simulator(tmp / "kubeconfig", "--controllers", "none", *manifests) as served:
        assert served.url.startswith("http://127.0.0.1:")
        yield served.url, served.kubeconfig


@pytest.fixture(scope="module")
def kubectl(server: tuple[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Kubectl:
    _, kubeconfig = server
    cache = tmp_path_factory.mktemp("kubectl-cache")

    def run(*args: str, input: str | None = None, check: bool = True, timeout: float = 20, quiet: bool = True) -> str:
        """Run kubectl; by default, a success must also be silent on stderr (no warnings), as with a real server."""
        command = [KUBECTL, f"--kubeconfig={kubeconfig}", f"--cache-dir={cache}", "--request-timeout=10s", *args]
        result = subprocess.run(command, input=input, capture_output=True, text=True, timeout=timeout)
        if check and result.returncode != 0:
            raise KubectlError(args, result)  # callers expecting a failure catch it to look at stderr
        if quiet and result.returncode == 0 and result.stderr and not result.stderr.startswith("No resources found"):
            raise KubectlError(args, result)
        return result.stdout

    return run


@pytest.fixture(scope="module")
def kubectl_popen(
    server: tuple[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Callable[..., subprocess.Popen[str]]]:
    """Start kubectl in the background (watches, waiting deletes); killed at the end if still running."""
    _, kubeconfig = server
    cache = tmp_path_factory.mktemp("kubectl-cache-bg")
    started: list[subprocess.Popen[str]] = []

    def start(*args: str) -> subprocess.Popen[str]:
        command = [KUBECTL, f"--kubeconfig={kubeconfig}", f"--cache-dir={cache}", *args]
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        started.append(process)
        return process

    yield start
    for process in started:
        if process.poll() is None:
            process.kill()
        process.communicate()


# Where the objects live, for checking the effects of kubectl directly over HTTP (faster than more kubectl runs).
PATHS = {
    "kex": ("/apis/kopf.dev/v1", "kopfexamples"),
    "cm": ("/api/v1", "configmaps"),
    "deploy": ("/apis/apps/v1", "deployments"),
    "ns": ("/api/v1", "namespaces"),
}


class Api:
    """A plain HTTP client of the served simulator, to set up and check state around the kubectl commands."""

    def __init__(self, url: str) -> None:
        self.url = url

    def request(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            self.url + path, data=data, method=method, headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read())

    def get(self, kind: str, name: str, ns: str | None = None) -> Any:
        """The object, or None if it does not exist."""
        prefix, plural = PATHS[kind]
        path = f"{prefix}/namespaces/{ns}/{plural}/{name}" if ns else f"{prefix}/{plural}/{name}"
        try:
            return self.request("GET", path)
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return None
            raise

    def create(self, kind: str, body: Any, ns: str | None = None) -> Any:
        prefix, plural = PATHS[kind]
        return self.request("POST", f"{prefix}/namespaces/{ns}/{plural}" if ns else f"{prefix}/{plural}", body)


@pytest.fixture(scope="module")
def api(server: tuple[str, Path]) -> Api:
    return Api(server[0])


@pytest.fixture
def ns(api: Api) -> str:
    """A fresh namespace for one test."""
    name = unique("t")
    api.create("ns", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    return name


def read_lines_until(stream: IO[str], predicate: Callable[[str], bool], timeout: float) -> list[str]:
    """Read lines (in a thread, so that a silent stream cannot hang the test) until one matches."""
    lines: queue.Queue[str | None] = queue.Queue()

    def reader() -> None:
        for line in stream:
            lines.put(line)
            if predicate(line):
                break
        else:
            lines.put(None)

    threading.Thread(target=reader, daemon=True).start()
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    while True:
        try:
            line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            raise AssertionError(f"no matching line within {timeout}s; got: {seen!r}") from None
        if line is None:
            raise AssertionError(f"the stream ended without a matching line; got: {seen!r}")
        seen.append(line)
        if predicate(line):
            return seen


def get_json(kubectl: Kubectl, *args: str) -> Any:
    return json.loads(kubectl("get", *args, "-o", "json"))


def kex(name: str, **extra_metadata: Any) -> str:
    """A KopfExample manifest (the kind of examples/crd.yaml)."""
    body = {
        "apiVersion": "kopf.dev/v1",
        "kind": "KopfExample",
        "metadata": {"name": name, **extra_metadata},
        "spec": {"duration": "1m", "field": "value"},
    }
    return yaml.safe_dump(body)


def kex_body(name: str, **extra_metadata: Any) -> Any:
    return yaml.safe_load(kex(name, **extra_metadata))


def table(output: str) -> list[list[str]]:
    return [line.split() for line in output.strip().splitlines() if line.strip()]


def containers(api: Api, name: str, ns: str) -> list[dict[str, Any]]:
    result: list[dict[str, Any]] = api.get("deploy", name, ns)["spec"]["template"]["spec"]["containers"]
    return result


# -- 1. CRDs --


def test_apply_crd_and_wait_for_established(kubectl: Kubectl, ns: str) -> None:
    output = kubectl("apply", "-f", "-", input=WIDGETS_CRD)
    assert output.strip() == "customresourcedefinition.apiextensions.k8s.io/gizmos.kubectl.example created"
    output = kubectl("wait", "--for=condition=established", "--timeout=10s", "crd/gizmos.kubectl.example")
    assert output.strip() == "customresourcedefinition.apiextensions.k8s.io/gizmos.kubectl.example condition met"
    crd = get_json(kubectl, "crd", "gizmos.kubectl.example")
    conditions = {c["type"]: c["status"] for c in crd["status"]["conditions"]}
    assert conditions["Established"] == "True"
    assert conditions["NamesAccepted"] == "True"
    assert crd["status"]["acceptedNames"]["kind"] == "Gizmo"

    # The new type is usable at once, with its printer column and short name.
    kubectl(
        "apply",
        "-n",
        ns,
        "-f",
        "-",
        input="apiVersion: kubectl.example/v1\nkind: Gizmo\nmetadata: {name: g1}\nspec: {size: 3}\n",
    )
    rows = table(kubectl("get", "gz", "-n", ns))
    assert rows[0] == ["NAME", "SIZE", "AGE"]
    assert rows[1][:2] == ["g1", "3"]


# -- 2. discovery --


def test_api_resources_and_versions(kubectl: Kubectl) -> None:
    by_name = {(row[0], row[-3]): row for row in table(kubectl("api-resources"))[1:]}
    assert by_name["configmaps", "v1"] == ["configmaps", "cm", "v1", "true", "ConfigMap"]
    assert by_name["namespaces", "v1"] == ["namespaces", "ns", "v1", "false", "Namespace"]
    assert by_name["deployments", "apps/v1"] == ["deployments", "deploy", "apps/v1", "true", "Deployment"]
    assert by_name["customresourcedefinitions", "apiextensions.k8s.io/v1"][1] == "crd,crds"
    assert by_name["kopfexamples", "kopf.dev/v1"] == ["kopfexamples", "kex,kexs", "kopf.dev/v1", "true", "KopfExample"]
    assert ("secrets", "v1") in by_name

    wide = table(kubectl("api-resources", "--api-group=kopf.dev", "-o", "wide"))
    assert wide[0] == ["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND", "VERBS", "CATEGORIES"]
    assert wide[1][0] == "kopfexamples"
    assert set(wide[1][5].split(",")) >= {"create", "delete", "get", "list", "patch", "update", "watch"}
    assert wide[1][6] == "kopf"
    assert kubectl("api-resources", "--categories=kopf", "-o", "name").split() == ["kopfexamples.kopf.dev"]

    versions = kubectl("api-versions").split()
    for version in ("v1", "apps/v1", "apiextensions.k8s.io/v1", "kopf.dev/v1", "batch/v1"):
        assert version in versions
    assert versions == sorted(versions)


def test_auth_can_i_says_yes(kubectl: Kubectl) -> None:
    """kubectl's access reviews (sent as protobuf) are answered as for a cluster-admin: everything is allowed."""
    assert kubectl("auth", "can-i", "create", "pods").strip() == "yes"
    assert kubectl("auth", "can-i", "get", "deployments.apps/web", "--subresource=scale", "-n", "x").strip() == "yes"
    assert kubectl("auth", "can-i", "get", "/healthz").strip() == "yes"
    rules = table(kubectl("auth", "can-i", "--list"))
    assert rules[0] == ["Resources", "Non-Resource", "URLs", "Resource", "Names", "Verbs"]
    assert rules[1] == ["*.*", "[]", "[]", "[*]"]
    reviews = table(kubectl("api-resources", "--api-group=authorization.k8s.io", "-o", "wide"))
    assert [(row[0], row[-1]) for row in reviews[1:]] == [  # no categories: the verbs come last
        ("localsubjectaccessreviews", "create"),
        ("selfsubjectaccessreviews", "create"),
        ("selfsubjectrulesreviews", "create"),
        ("subjectaccessreviews", "create"),
    ]


# -- 3. get in all forms --


def test_get_custom_objects_in_all_forms(kubectl: Kubectl, api: Api, ns: str) -> None:
    name = unique("kex")
    assert kubectl("apply", "-n", ns, "-f", "-", input=kex(name)).strip() == f"kopfexample.kopf.dev/{name} created"
    kubectl(
        "patch",
        "-n",
        ns,
        "kex",
        name,
        "--subresource=status",
        "--type=merge",
        "-p",
        '{"status": {"create_fn": {"message": "hi there", "children": 2}}}',
    )

    rows = table(kubectl("get", "kopfexamples", "-n", ns))
    assert rows[0] == ["NAME", "DURATION", "CHILDREN", "MESSAGE", "AGE"]
    assert rows[1][:5] == [name, "1m", "2", "hi", "there"]
    assert len(rows) == 2

    as_json = get_json(kubectl, "kex", name, "-n", ns)
    stored = api.get("kex", name, ns)
    del stored["metadata"]["managedFields"]  # kubectl hides them unless --show-managed-fields
    assert as_json == stored
    assert as_json["apiVersion"] == "kopf.dev/v1"
    assert as_json["kind"] == "KopfExample"
    assert as_json["metadata"]["namespace"] == ns
    assert as_json["spec"] == {"duration": "1m", "field": "value"}
    assert as_json["status"] == {"create_fn": {"message": "hi there", "children": 2}}

    listed = yaml.safe_load(kubectl("get", "kex", "-n", ns, "-o", "yaml"))
    assert listed["kind"] == "List"
    assert listed["items"] == [as_json]

    assert kubectl("get", "kex", name, "-n", ns, "-o", "jsonpath={.spec.duration}") == "1m"
    assert kubectl("get", "kex", "-n", ns, "-o", "jsonpath={.items[*].status.create_fn.children}") == "2"

    # All the names of the type at once: any unknown one would fail the whole command.
    forms = "kex,kexs,kopfexample,KopfExample,kopfexamples.kopf.dev,kopfexamples.v1.kopf.dev,KopfExample.kopf.dev"
    assert kubectl("get", forms, "-n", ns, "-o", "name").split() == [f"kopfexample.kopf.dev/{name}"]
    output = kubectl("get", f"kex/{name}", f"KopfExample.kopf.dev/{name}", "-n", ns, "--no-headers")
    assert [row[:2] for row in table(output)] == [[name, "1m"]] * 2

    custom = table(kubectl("get", "kex", "-n", ns, "-o", "custom-columns=N:.metadata.name,F:.spec.field"))
    assert custom == [["N", "F"], [name, "value"]]


def test_get_builtins_in_all_forms(kubectl: Kubectl, ns: str) -> None:
    manifest = (
        DEPLOYMENT.format(name="web")
        + "---\n"
        + yaml.safe_dump(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}, "data": {"a": "1", "b": "2"}}
        )
    )
    output = kubectl("apply", "-n", ns, "-f", "-", input=manifest)
    assert output.splitlines() == ["deployment.apps/web created", "configmap/settings created"]

    rows = table(kubectl("get", "deploy,cm", "-n", ns))
    assert rows[0] == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]  # as the real server prints them
    assert rows[1][:4] == ["deployment.apps/web", "0/1", "0", "0"]
    assert rows[2][0] == "NAME"  # a second table for the second type
    assert rows[3][0] == "configmap/settings"

    forms = (
        "cm,configmap,ConfigMap,configmaps,configmaps.v1.,deploy,deployment,Deployment,deployments.apps,"
        "deployments.v1.apps,Deployment.apps"
    )
    assert kubectl("get", forms, "-n", ns, "-o", "name").split() == ["configmap/settings", "deployment.apps/web"]

    items = json.loads(kubectl("get", "cm/settings", "deploy/web", "-n", ns, "-o", "json"))["items"]
    cm, deploy = items
    assert cm["kind"] == "ConfigMap"
    assert cm["apiVersion"] == "v1"
    assert cm["data"] == {"a": "1", "b": "2"}
    assert deploy["kind"] == "Deployment"
    assert deploy["apiVersion"] == "apps/v1"
    assert [c["name"] for c in deploy["spec"]["template"]["spec"]["containers"]] == ["main", "side"]
    assert deploy["metadata"]["generation"] == 1
    assert yaml.safe_load(kubectl("get", "cm", "settings", "-n", ns, "-o", "yaml")) == cm
    images = kubectl("get", "deploy", "web", "-n", ns, "-o", "jsonpath={.spec.template.spec.containers[*].image}")
    assert images == "nginx:1 busybox:1"

    namespaces = table(kubectl("get", "ns"))
    assert namespaces[0] == ["NAME", "STATUS", "AGE"]
    assert [ns, "Active"] in [row[:2] for row in namespaces]
    assert ["kube-system", "Active"] in [row[:2] for row in namespaces]


# -- 4. selectors --


def test_label_and_field_selectors(kubectl: Kubectl, api: Api, ns: str) -> None:
    for name, labels in [
        ("red", {"color": "red", "tier": "a"}),
        ("blue", {"color": "blue"}),
        ("plain", {}),
        ("green", {"color": "green", "tier": "b"}),
    ]:
        api.create("cm", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": labels}}, ns)

    def names(*args: str) -> list[str]:
        return sorted(kubectl("get", "cm", "-n", ns, "-o", "jsonpath={.items[*].metadata.name}", *args).split())

    assert names() == ["blue", "green", "plain", "red"]
    assert names("-l", "color=red") == ["red"]
    assert names("-l", "color!=red") == ["blue", "green", "plain"]
    assert names("-l", "color in (red,blue)") == ["blue", "red"]
    assert names("-l", "color notin (red,blue)") == ["green", "plain"]
    assert names("-l", "!color") == ["plain"]
    assert names("-l", "color,tier=b") == ["green"]
    assert names("--field-selector", "metadata.name=blue") == ["blue"]
    assert names("--field-selector", f"metadata.name!=blue,metadata.namespace={ns}", "-l", "tier") == ["green", "red"]
    assert names("-l", "color=purple") == []

    custom_name = unique("kex")
    api.create("kex", kex_body(custom_name, labels={"x": "one"}), ns)
    api.create("kex", kex_body(custom_name + "-other"), ns)
    output = kubectl(
        "get", "kex", "-n", ns, "-o", "name", "-l", "x in (one,two)", "--field-selector", f"metadata.name={custom_name}"
    )
    assert output.split() == [f"kopfexample.kopf.dev/{custom_name}"]
    assert kubectl("get", "kex", "-n", ns, "-o", "name", "-l", "!x").split() == [
        f"kopfexample.kopf.dev/{custom_name}-other"
    ]

    with pytest.raises(KubectlError) as error:
        kubectl("get", "cm", "-n", ns, "--field-selector", "data.a=1")
    assert (
        '"data.a" is not a known field selector' in error.value.stderr
        or "field label not supported: data.a" in error.value.stderr
    )


# -- 5. patches --


def test_merge_json_and_strategic_patches(kubectl: Kubectl, api: Api, ns: str) -> None:
    name = unique("kex")
    api.create("kex", kex_body(name), ns)

    output = kubectl("patch", "-n", ns, "kex", name, "--type=merge", "-p", '{"spec": {"field": null, "new": 1}}')
    assert output.strip() == f"kopfexample.kopf.dev/{name} patched"
    assert api.get("kex", name, ns)["spec"] == {"duration": "1m", "new": 1}

    kubectl(
        "patch",
        "-n",
        ns,
        "kex",
        name,
        "--type=json",
        "-p",
        '[{"op": "replace", "path": "/spec/duration", "value": "2m"},'
        ' {"op": "add", "path": "/spec/items", "value": ["x"]}]',
    )
    obj = api.get("kex", name, ns)
    assert obj["spec"] == {"duration": "2m", "new": 1, "items": ["x"]}
    assert obj["metadata"]["generation"] == 3

    output = kubectl("patch", "-n", ns, "kex", name, "--type=merge", "-p", '{"spec": {"new": 1}}')
    assert output.strip() == f"kopfexample.kopf.dev/{name} patched (no change)"

    with pytest.raises(KubectlError) as error:
        kubectl(
            "patch", "-n", ns, "kex", name, "--type=json", "-p", '[{"op": "test", "path": "/spec/new", "value": 2}]'
        )
    assert error.value.stderr.strip() == "The request is invalid: testing value /spec/new failed: test failed"

    with pytest.raises(KubectlError) as error:  # custom resources do not support strategic merge patches
        kubectl("patch", "-n", ns, "kex", name, "-p", '{"spec": {"new": 2}}')
    assert error.value.stderr.strip() == (
        "error: application/strategic-merge-patch+json is not supported by kopf.dev/v1, Kind=KopfExample: "
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
    )

    # Strategic merge patches on a Deployment: containers are merged by name, not replaced as a list.
    api.create("deploy", yaml.safe_load(DEPLOYMENT.format(name="web")), ns)
    kubectl(
        "patch",
        "-n",
        ns,
        "deploy",
        "web",
        "--type=strategic",
        "-p",
        '{"spec": {"template": {"spec": {"containers": [{"name": "side", "image": "busybox:2"}]}}}}',
    )
    assert [(c["name"], c["image"]) for c in containers(api, "web", ns)] == [("main", "nginx:1"), ("side", "busybox:2")]
    assert containers(api, "web", ns)[0]["ports"][0]["containerPort"] == 80

    # The default patch type for built-ins is strategic; $patch: delete removes one container by its name.
    kubectl(
        "patch",
        "-n",
        ns,
        "deploy",
        "web",
        "-p",
        '{"spec": {"template": {"spec": {"containers": [{"name": "main", "$patch": "delete"},'
        ' {"name": "extra", "image": "alpine"}]}}}}',
    )
    assert sorted(c["name"] for c in containers(api, "web", ns)) == ["extra", "side"]

    # A merge patch of the same list replaces it.
    kubectl(
        "patch",
        "-n",
        ns,
        "deploy",
        "web",
        "--type=merge",
        "-p",
        '{"spec": {"template": {"spec": {"containers": [{"name": "only", "image": "alpine"}]}}}}',
    )
    assert [c["name"] for c in containers(api, "web", ns)] == ["only"]


# -- 6. label & annotate --


def test_label_and_annotate(kubectl: Kubectl, api: Api, ns: str) -> None:
    name = unique("kex")
    api.create("kex", kex_body(name), ns)

    assert kubectl("label", "-n", ns, "kex", name, "a=1", "b=2").strip() == f"kopfexample.kopf.dev/{name} labeled"
    assert kubectl("annotate", "-n", ns, "kex", name, "note=hello").strip() == f"kopfexample.kopf.dev/{name} annotated"
    meta = api.get("kex", name, ns)["metadata"]
    assert meta["labels"] == {"a": "1", "b": "2"}
    assert meta["annotations"] == {"note": "hello"}

    with pytest.raises(KubectlError) as error:
        kubectl("label", "-n", ns, "kex", name, "a=3")
    assert "'a' already has a value (1), and --overwrite is false" in error.value.stderr
    with pytest.raises(KubectlError) as error:
        kubectl("annotate", "-n", ns, "kex", name, "note=bye")
    assert (
        "--overwrite is false but found the following declared annotation(s): 'note' already has a value "
        "(hello)" in error.value.stderr
    )

    kubectl("label", "-n", ns, "kex", name, "a=3", "--overwrite")
    kubectl("annotate", "-n", ns, "kex", name, "note=bye", "other=x", "--overwrite")
    meta = api.get("kex", name, ns)["metadata"]
    assert meta["labels"] == {"a": "3", "b": "2"}
    assert meta["annotations"] == {"note": "bye", "other": "x"}

    assert kubectl("label", "-n", ns, "kex", name, "a-").strip() == f"kopfexample.kopf.dev/{name} unlabeled"
    kubectl("annotate", "-n", ns, "kex", name, "note-")
    meta = api.get("kex", name, ns)["metadata"]
    assert meta["labels"] == {"b": "2"}
    assert meta["annotations"] == {"other": "x"}

    # Built-ins, and all the objects of a type at once.
    api.create("cm", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c1"}}, ns)
    api.create("cm", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c2"}}, ns)
    assert kubectl("label", "-n", ns, "cm", "--all", "stage=test").splitlines() == [
        "configmap/c1 labeled",
        "configmap/c2 labeled",
    ]
    assert api.get("cm", "c2", ns)["metadata"]["labels"] == {"stage": "test"}


# -- 7. optimistic concurrency --


def test_replace_with_stale_resource_version_conflicts(kubectl: Kubectl, api: Api, ns: str, tmp_path: Path) -> None:
    name = unique("kex")
    api.create("kex", kex_body(name), ns)
    stale = kubectl("get", "kex", name, "-n", ns, "-o", "yaml")
    kubectl("label", "-n", ns, "kex", name, "bump=1")

    path = tmp_path / "stale.yaml"
    path.write_text(stale.replace("field: value", "field: replaced"))
    with pytest.raises(KubectlError) as error:
        kubectl("replace", "-f", str(path))
    assert error.value.stderr.strip() == (
        f'Error from server (Conflict): error when replacing "{path}": Operation cannot be fulfilled on '
        f'kopfexamples.kopf.dev "{name}": {CONFLICT_MESSAGE}'
    )
    assert api.get("kex", name, ns)["spec"]["field"] == "value"

    # With the current resourceVersion, the same replacement succeeds.
    fresh = api.get("kex", name, ns)
    fresh["spec"]["field"] = "replaced"
    path.write_text(yaml.safe_dump(fresh))
    assert kubectl("replace", "-f", str(path)).strip() == f"kopfexample.kopf.dev/{name} replaced"
    assert api.get("kex", name, ns)["spec"]["field"] == "replaced"


# -- 8. status subresource --


def test_status_subresource_patches(kubectl: Kubectl, api: Api, ns: str) -> None:
    name = unique("kex")
    generation = api.create("kex", kex_body(name), ns)["metadata"]["generation"]

    output = kubectl(
        "patch",
        "-n",
        ns,
        "kex",
        name,
        "--subresource=status",
        "--type=merge",
        "-p",
        '{"status": {"create_fn": {"message": "done"}}, "spec": {"field": "ignored"}}',
    )
    assert output.strip() == f"kopfexample.kopf.dev/{name} patched"
    obj = api.get("kex", name, ns)
    assert obj["status"] == {"create_fn": {"message": "done"}}
    assert obj["spec"]["field"] == "value"  # the status subresource ignores changes outside status
    assert obj["metadata"]["generation"] == generation  # status changes do not bump the generation

    output = kubectl("patch", "-n", ns, "kex", name, "--type=merge", "-p", '{"status": {"create_fn": "other"}}')
    assert output.strip() == f"kopfexample.kopf.dev/{name} patched (no change)"
    assert api.get("kex", name, ns)["status"] == {"create_fn": {"message": "done"}}

    output = kubectl("get", "kex", name, "-n", ns, "--subresource=status", "-o", "jsonpath={.status.create_fn}")
    assert json.loads(output) == {"message": "done"}


# -- 9. client-side apply --


def test_client_side_apply_removes_dropped_fields_of_a_custom_resource(kubectl: Kubectl, api: Api, ns: str) -> None:
    name = unique("kex")
    first = {
        "apiVersion": "kopf.dev/v1",
        "kind": "KopfExample",
        "metadata": {"name": name, "labels": {"keep": "1", "drop": "2"}},
        "spec": {"duration": "1m", "field": "value", "items": ["a", "b"]},
    }
    assert (
        kubectl("apply", "-n", ns, "-f", "-", input=yaml.safe_dump(first)).strip()
        == f"kopfexample.kopf.dev/{name} created"
    )
    annotation = api.get("kex", name, ns)["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
    assert json.loads(annotation)["spec"] == first["spec"]

    # Someone else adds a field: the three-way merge keeps it.
    kubectl("patch", "-n", ns, "kex", name, "--type=merge", "-p", '{"spec": {"foreign": true}}')

    second = json.loads(json.dumps(first))
    del second["spec"]["field"]
    del second["metadata"]["labels"]["drop"]
    second["spec"]["items"] = ["c"]
    assert (
        kubectl("apply", "-n", ns, "-f", "-", input=yaml.safe_dump(second)).strip()
        == f"kopfexample.kopf.dev/{name} configured"
    )
    obj = api.get("kex", name, ns)
    assert obj["spec"] == {"duration": "1m", "items": ["c"], "foreign": True}
    assert obj["metadata"]["labels"] == {"keep": "1"}
    assert {entry["manager"] for entry in obj["metadata"]["managedFields"]} >= {"kubectl-client-side-apply"}
    assert (
        kubectl("apply", "-n", ns, "-f", "-", input=yaml.safe_dump(second)).strip()
        == f"kopfexample.kopf.dev/{name} unchanged"
    )


def test_client_side_apply_removes_dropped_fields_of_a_builtin(kubectl: Kubectl, api: Api, ns: str) -> None:
    assert (
        kubectl("apply", "-n", ns, "-f", "-", input=DEPLOYMENT.format(name="web")).strip()
        == "deployment.apps/web created"
    )
    # Someone else sets an env var on the main container: the strategic three-way merge keeps it.
    kubectl("set", "env", "-n", ns, "deploy/web", "-c", "main", "FOO=bar")

    second = yaml.safe_load(DEPLOYMENT.format(name="web"))
    pod_spec = second["spec"]["template"]["spec"]
    del pod_spec["containers"][1]  # drop the side container
    del pod_spec["containers"][0]["ports"]
    pod_spec["containers"][0]["image"] = "nginx:2"
    pod_spec["containers"][0]["args"] = ["--verbose"]
    pod_spec["containers"][0]["resources"] = {"limits": {"cpu": "1"}}
    second["spec"]["template"]["metadata"]["labels"]["tier"] = "front"
    assert (
        kubectl("apply", "-n", ns, "-f", "-", input=yaml.safe_dump(second)).strip() == "deployment.apps/web configured"
    )
    result = containers(api, "web", ns)
    assert len(result) == 1
    assert result[0]["name"] == "main"
    assert result[0]["image"] == "nginx:2"
    assert "ports" not in result[0]
    assert result[0]["env"] == [{"name": "FOO", "value": "bar"}]

    # Changed maps and lists nested in the pod template (kubectl warns if the OpenAPI schema lacks them).
    pod_spec["containers"][0]["args"] = ["--quiet"]
    pod_spec["containers"][0]["resources"] = {"limits": {"cpu": "2"}, "requests": {"cpu": "1"}}
    second["spec"]["template"]["metadata"]["labels"]["tier"] = "back"
    assert (
        kubectl("apply", "-n", ns, "-f", "-", input=yaml.safe_dump(second)).strip() == "deployment.apps/web configured"
    )
    deploy = api.get("deploy", "web", ns)
    assert deploy["spec"]["selector"]["matchLabels"] == {"app": "web"}
    assert deploy["spec"]["template"]["metadata"]["labels"] == {"app": "web", "tier": "back"}
    assert deploy["spec"]["template"]["spec"]["containers"][0]["args"] == ["--quiet"]
    assert deploy["spec"]["template"]["spec"]["containers"][0]["resources"] == {
        "limits": {"cpu": "2"},
        "requests": {"cpu": "1"},
    }
    assert (
        kubectl("apply", "-n", ns, "-f", "-", input=yaml.safe_dump(second)).strip() == "deployment.apps/web unchanged"
    )
    # A Deployment's selector is immutable in apps/v1.
    second["spec"]["selector"]["matchLabels"]["tier"] = "back"
    with pytest.raises(KubectlError) as refused:
        kubectl("apply", "-n", ns, "-f", "-", input=yaml.safe_dump(second))
    assert refused.value.stderr.strip() == (
        'The Deployment "web" is invalid: spec.selector: Invalid value: v1.LabelSelector{MatchLabels:'
        'map[string]string{"app":"web", "tier":"back"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: '
        "field is immutable"
    )

    # A ConfigMap's data: a changed key is updated, a dropped key is removed.
    def configmap(**data: str) -> str:
        return yaml.safe_dump({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}, "data": data})

    assert kubectl("apply", "-n", ns, "-f", "-", input=configmap(a="1", b="2")).strip() == "configmap/cfg created"
    assert kubectl("apply", "-n", ns, "-f", "-", input=configmap(a="3")).strip() == "configmap/cfg configured"
    assert api.get("cm", "cfg", ns)["data"] == {"a": "3"}


# -- 10. server-side apply --


def test_server_side_apply_with_conflicts_and_force(kubectl: Kubectl, api: Api, ns: str) -> None:
    def manifest(value: str) -> str:
        return yaml.safe_dump(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ssa"}, "data": {"key": value}}
        )

    assert (
        kubectl("apply", "--server-side", "-n", ns, "-f", "-", input=manifest("one")).strip()
        == "configmap/ssa serverside-applied"
    )
    obj = api.get("cm", "ssa", ns)
    assert obj["data"] == {"key": "one"}
    assert [(e["manager"], e["operation"]) for e in obj["metadata"]["managedFields"]] == [("kubectl", "Apply")]
    assert obj["metadata"]["managedFields"][0]["fieldsV1"] == {"f:data": {"f:key": {}}}

    with pytest.raises(KubectlError) as error:
        kubectl("apply", "--server-side", "--field-manager=other", "-n", ns, "-f", "-", input=manifest("two"))
    assert 'error: Apply failed with 1 conflict: conflict with "kubectl": .data.key' in error.value.stderr
    assert "--force-conflicts" in error.value.stderr
    assert api.get("cm", "ssa", ns)["data"] == {"key": "one"}

    output = kubectl(
        "apply",
        "--server-side",
        "--field-manager=other",
        "--force-conflicts",
        "-n",
        ns,
        "-f",
        "-",
        input=manifest("two"),
    )
    assert output.strip() == "configmap/ssa serverside-applied"
    obj = api.get("cm", "ssa", ns)
    assert obj["data"] == {"key": "two"}
    owners = {e["manager"]: e.get("fieldsV1") for e in obj["metadata"]["managedFields"]}
    assert owners == {"other": {"f:data": {"f:key": {}}}}  # kubectl's only field was taken away

    # Server-side apply of a custom resource creates it, too.
    name = unique("kex")
    assert (
        kubectl("apply", "--server-side", "-n", ns, "-f", "-", input=kex(name)).strip()
        == f"kopfexample.kopf.dev/{name} serverside-applied"
    )
    assert api.get("kex", name, ns)["spec"] == {"duration": "1m", "field": "value"}


# -- 11. watching --


def test_get_watch_streams_new_objects(
    kubectl: Kubectl, api: Api, kubectl_popen: Callable[..., subprocess.Popen[str]], ns: str
) -> None:
    api.create("cm", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "before"}}, ns)
    watcher = kubectl_popen("get", "cm", "-n", ns, "--watch", "-o", "name")
    assert watcher.stdout is not None
    read_lines_until(watcher.stdout, lambda line: line.strip() == "configmap/before", timeout=10)

    kubectl("apply", "-n", ns, "-f", "-", input="apiVersion: v1\nkind: ConfigMap\nmetadata: {name: after}\n")
    lines = read_lines_until(watcher.stdout, lambda line: line.strip() == "configmap/after", timeout=10)
    assert lines == ["configmap/after\n"]
    assert watcher.poll() is None  # still watching
    watcher.kill()

    # Table output with watch events: the header once, then rows for additions, modifications, deletions.
    name = unique("kex")
    api.create("kex", kex_body(name), ns)
    watcher = kubectl_popen("get", "kex", "-n", ns, "--watch", "--output-watch-events")
    assert watcher.stdout is not None
    lines = read_lines_until(watcher.stdout, lambda line: name in line, timeout=10)
    assert [line.split()[:3] for line in lines] == [["EVENT", "NAME", "DURATION"], ["ADDED", name, "1m"]]
    kubectl("patch", "-n", ns, "kex", name, "--type=merge", "-p", '{"spec": {"duration": "5m"}}')
    modified = read_lines_until(watcher.stdout, lambda line: name in line, timeout=10)
    assert [line.split()[:3] for line in modified] == [["MODIFIED", name, "5m"]]
    kubectl("delete", "-n", ns, "kex", name)
    deleted = read_lines_until(watcher.stdout, lambda line: name in line, timeout=10)
    assert [line.split()[:3] for line in deleted] == [["DELETED", name, "5m"]]
    watcher.kill()


# -- 12. finalizers --

REMOVE_FINALIZERS = '[{"op": "remove", "path": "/metadata/finalizers"}]'


def test_delete_with_a_finalizer(
    kubectl: Kubectl, api: Api, kubectl_popen: Callable[..., subprocess.Popen[str]], ns: str
) -> None:
    name = unique("kex")
    api.create("kex", kex_body(name, finalizers=["example.com/hold"]), ns)

    output = kubectl("delete", "-n", ns, "kex", name, "--wait=false")
    assert output.strip() == f'kopfexample.kopf.dev "{name}" deleted'
    meta = api.get("kex", name, ns)["metadata"]
    assert meta["deletionTimestamp"]
    assert meta["finalizers"] == ["example.com/hold"]
    assert meta["deletionGracePeriodSeconds"] == 0

    # Removing the finalizer makes it disappear.
    kubectl("patch", "-n", ns, "kex", name, "--type=json", "-p", REMOVE_FINALIZERS)
    assert api.get("kex", name, ns) is None

    # A waiting delete returns only when the finalizer is removed.
    api.create("kex", kex_body(name, finalizers=["example.com/hold"]), ns)
    deleter = kubectl_popen("delete", "-n", ns, "kex", name, "--timeout=15s")
    poll_until(lambda: "deletionTimestamp" in api.get("kex", name, ns)["metadata"])
    time.sleep(0.3)  # give the waiting kubectl a chance to (wrongly) return early
    assert deleter.poll() is None, deleter.communicate()
    kubectl("patch", "-n", ns, "kex", name, "--type=json", "-p", REMOVE_FINALIZERS)
    stdout, stderr = deleter.communicate(timeout=10)
    assert deleter.returncode == 0, stderr
    assert stdout.strip() == f'kopfexample.kopf.dev "{name}" deleted'
    assert api.get("kex", name, ns) is None

    # A waiting delete that times out says so and leaves the object.
    api.create("kex", kex_body(name, finalizers=["example.com/hold"]), ns)
    with pytest.raises(KubectlError) as error:
        kubectl("delete", "-n", ns, "kex", name, "--timeout=1s")
    assert error.value.stdout.strip() == f'kopfexample.kopf.dev "{name}" deleted'
    assert "timed out waiting for the condition" in error.value.stderr
    assert api.get("kex", name, ns) is not None
    kubectl("patch", "-n", ns, "kex", name, "--type=merge", "-p", '{"metadata": {"finalizers": null}}')
    assert api.get("kex", name, ns) is None


# -- 13. garbage collection --


def _owner_and_child(api: Api, ns: str, child_finalizers: list[str] | None = None) -> tuple[str, str]:
    owner = unique("owner")
    uid = api.create("kex", kex_body(owner), ns)["metadata"]["uid"]
    child = f"{owner}-child"
    metadata: dict[str, Any] = {
        "name": child,
        "ownerReferences": [
            {"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "name": owner, "uid": uid, "blockOwnerDeletion": True}
        ],
    }
    if child_finalizers:
        metadata["finalizers"] = child_finalizers
    api.create("cm", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata}, ns)
    return owner, child


def test_garbage_collection_in_background(kubectl: Kubectl, api: Api, ns: str) -> None:
    owner, child = _owner_and_child(api, ns)
    assert kubectl("delete", "-n", ns, "kex", owner).strip() == f'kopfexample.kopf.dev "{owner}" deleted'
    assert api.get("kex", owner, ns) is None
    poll_until(lambda: api.get("cm", child, ns) is None)


def test_garbage_collection_orphans(kubectl: Kubectl, api: Api, ns: str) -> None:
    owner, child = _owner_and_child(api, ns)
    kubectl("delete", "-n", ns, "kex", owner, "--cascade=orphan")
    assert api.get("kex", owner, ns) is None
    meta = api.get("cm", child, ns)["metadata"]
    assert "ownerReferences" not in meta
    assert "deletionTimestamp" not in meta


def test_garbage_collection_in_foreground(kubectl: Kubectl, api: Api, ns: str) -> None:
    owner, child = _owner_and_child(api, ns, child_finalizers=["example.com/hold"])
    kubectl("delete", "-n", ns, "kex", owner, "--cascade=foreground", "--wait=false")
    meta = api.get("kex", owner, ns)["metadata"]
    assert meta["deletionTimestamp"]
    assert meta["finalizers"] == ["foregroundDeletion"]
    poll_until(lambda: "deletionTimestamp" in api.get("cm", child, ns)["metadata"])
    assert api.get("kex", owner, ns) is not None  # the owner waits for its blocking dependent

    kubectl("patch", "-n", ns, "cm", child, "--type=json", "-p", REMOVE_FINALIZERS)
    poll_until(lambda: api.get("kex", owner, ns) is None)
    assert api.get("cm", child, ns) is None


# -- 14. namespaces --


def test_namespace_deletion_removes_its_contents(kubectl: Kubectl, api: Api, ns: str) -> None:
    api.create("cm", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c1"}}, ns)
    api.create("deploy", yaml.safe_load(DEPLOYMENT.format(name="web")), ns)
    api.create("kex", kex_body("k1"), ns)
    assert len(kubectl("get", "cm,deploy,kex", "-n", ns, "-o", "name").split()) == 3

    assert kubectl("delete", "ns", ns, "--timeout=15s").strip() == f'namespace "{ns}" deleted'
    assert api.get("ns", ns) is None
    assert kubectl("get", "cm,deploy,kex", "-n", ns, "-o", "name").strip() == ""
    assert api.get("cm", "c1", ns) is None
    assert api.get("deploy", "web", ns) is None
    assert api.get("kex", "k1", ns) is None

    # A namespace with a finalized object in it stays Terminating until the object is gone.
    ns2 = unique("doomed")
    kubectl("apply", "-f", "-", input=f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: {ns2}}}\n")
    api.create("kex", kex_body("held", finalizers=["example.com/hold"]), ns2)
    kubectl("delete", "ns", ns2, "--wait=false")
    poll_until(lambda: api.get("ns", ns2)["status"].get("phase") == "Terminating")
    assert table(kubectl("get", "ns", ns2))[1][:2] == [ns2, "Terminating"]
    with pytest.raises(KubectlError) as error:
        kubectl("create", "-n", ns2, "-f", "-", input="apiVersion: v1\nkind: ConfigMap\nmetadata: {name: late}\n")
    assert "because it is being terminated" in error.value.stderr
    kubectl("patch", "-n", ns2, "kex", "held", "--type=merge", "-p", '{"metadata": {"finalizers": null}}')
    poll_until(lambda: api.get("ns", ns2) is None)


# -- 15. explain --


def test_explain(kubectl: Kubectl) -> None:
    output = kubectl("explain", "kex.spec")
    assert output.startswith("GROUP:      kopf.dev\nKIND:       KopfExample\nVERSION:    v1\n\nFIELD: spec <Object>\n")
    assert "What the example operators act upon." in output
    assert "duration\t<string>\n    How long the example lasts, e.g. 1m." in output
    assert "items\t<[]string>" in output

    output = kubectl("explain", "kopfexamples.spec.duration")
    assert "FIELD: duration <string>" in output
    assert "How long the example lasts, e.g. 1m." in output

    output = kubectl("explain", "kopfexamples")
    assert "An example resource handled by the example operators." in output
    assert "spec\t<Object>" in output
    assert "status\t<Object>" in output

    with pytest.raises(KubectlError) as error:
        kubectl("explain", "kex.spec.nosuchfield")
    assert 'field "nosuchfield" does not exist' in error.value.stderr

    # Built-in schemas are permissive, but explain still identifies the type and shows what is known.
    output = kubectl("explain", "deployments.spec")
    assert output.startswith("GROUP:      apps\nKIND:       Deployment\nVERSION:    v1\n\nFIELD: spec <Object>\n")
    assert "template\t<Object>" in output


# -- 16. the rest of the everyday commands --


def test_scale(kubectl: Kubectl, api: Api, ns: str) -> None:
    api.create("deploy", yaml.safe_load(DEPLOYMENT.format(name="web")), ns)
    assert kubectl("scale", "-n", ns, "deploy/web", "--replicas=3").strip() == "deployment.apps/web scaled"
    deploy = api.get("deploy", "web", ns)
    assert deploy["spec"]["replicas"] == 3
    assert deploy["metadata"]["generation"] == 2

    with pytest.raises(KubectlError) as error:
        kubectl("scale", "-n", ns, "deploy/web", "--replicas=5", "--current-replicas=1")
    assert "Expected replicas to be 1, was 3" in error.value.stderr
    assert (
        kubectl("scale", "-n", ns, "deploy/web", "--replicas=0", "--current-replicas=3").strip()
        == "deployment.apps/web scaled"
    )
    assert api.get("deploy", "web", ns)["spec"]["replicas"] == 0


def test_get_all_and_all_namespaces(kubectl: Kubectl, api: Api, ns: str) -> None:
    api.create("deploy", yaml.safe_load(DEPLOYMENT.format(name="web")), ns)
    api.create("cm", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "not-in-all"}}, ns)
    rows = table(kubectl("get", "all", "-n", ns))
    assert rows[0][0] == "NAME"
    assert [row[0] for row in rows[1:]] == ["deployment.apps/web"]  # configmaps are not in the "all" category

    rows = table(kubectl("get", "cm", "-A"))
    assert rows[0][:2] == ["NAMESPACE", "NAME"]
    assert [ns, "not-in-all"] in [row[:2] for row in rows]
    assert ["default", "example-settings"] in [row[:2] for row in rows]  # loaded with --load at the start
    output = kubectl("get", "deploy,kex", "--all-namespaces", "-o", "jsonpath={.items[*].metadata.namespace}")
    assert ns in output.split()
    assert "default" in output.split()  # kopf-example-1 from examples/objects.yaml


def test_create_and_delete_from_files(kubectl: Kubectl, api: Api, ns: str, tmp_path: Path) -> None:
    path = tmp_path / "objects.yaml"
    path.write_text(
        kex("from-file") + "---\n" + "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: from-file}\ndata: {a: b}\n"
    )
    output = kubectl("create", "-n", ns, "-f", str(path))
    assert output.splitlines() == ["kopfexample.kopf.dev/from-file created", "configmap/from-file created"]
    assert api.get("cm", "from-file", ns)["data"] == {"a": "b"}
    assert "annotations" not in api.get("kex", "from-file", ns)["metadata"]  # no last-applied configuration

    with pytest.raises(KubectlError) as error:
        kubectl("create", "-n", ns, "-f", str(path))
    assert error.value.stderr.splitlines() == [
        f'Error from server (AlreadyExists): error when creating "{path}": '
        f'kopfexamples.kopf.dev "from-file" already exists',
        f'Error from server (AlreadyExists): error when creating "{path}": configmaps "from-file" already exists',
    ]

    output = kubectl("delete", "-n", ns, "-f", str(path))
    assert output.splitlines() == ['kopfexample.kopf.dev "from-file" deleted', 'configmap "from-file" deleted']
    assert api.get("kex", "from-file", ns) is None
    assert api.get("cm", "from-file", ns) is None

    with pytest.raises(KubectlError) as error:
        kubectl("delete", "-n", ns, "-f", str(path))
    assert (
        f'Error from server (NotFound): error when deleting "{path}": kopfexamples.kopf.dev "from-file" '
        f"not found" in error.value.stderr
    )
    assert kubectl("delete", "-n", ns, "-f", str(path), "--ignore-not-found").strip() == ""
