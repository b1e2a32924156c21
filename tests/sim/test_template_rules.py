"""The apiserver's rules that operators' rendered templates break, through the official client (served simulator).

Each refused write is a 422 ``Invalid`` with the apiserver's field errors (``kopf_sim.writes.template_rules``):
a Service's ports (a repeated name, a repeated port & protocol or node port, one unnamed port of several), a
container's ports (a repeated name, a name that is no IANA service name), a mount of an undeclared volume, a
workload with no selector or an empty one, a Job whose pods restart ``Always`` (the default), a Deployment
whose pods do not. What the apiserver accepts passes: the same port over TCP and UDP, a StatefulSet's
container mounting its volume claim.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import kubernetes
import pytest
from kubernetes.client import ApiException

from .test_official_client import ServerThread

NAMESPACE = "default"
Create = Callable[[kubernetes.client.ApiClient, dict[str, Any]], Any]
EXPECTED_LABELS = {"app": "x"}


@pytest.fixture(scope="module")
def api_client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[kubernetes.client.ApiClient]:
    server = ServerThread()
    server.start()
    try:
        path = tmp_path_factory.mktemp("kubeconfig") / "kubeconfig"
        server.served.write_kubeconfig(path)
        configuration = kubernetes.client.Configuration()
        kubernetes.config.load_kube_config(config_file=str(path), client_configuration=configuration)
        with kubernetes.client.ApiClient(configuration) as client:
            yield client
    finally:
        server.stop()


def service(name: str, *ports: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": {"ports": list(ports), **spec}}


def pod_spec(*containers: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {"containers": list(containers), **spec}


def container(name: str = "c", **fields: Any) -> dict[str, Any]:
    return {"name": name, "image": "example/app:1", **fields}


def workload(kind: str, name: str, spec: dict[str, Any], **fields: Any) -> dict[str, Any]:
    group = "batch/v1" if kind == "Job" else "apps/v1"
    template = {"metadata": {"labels": EXPECTED_LABELS}, "spec": spec}
    body = {"selector": {"matchLabels": EXPECTED_LABELS}, "template": template, **fields}
    if kind == "Job":
        del body["selector"]  # generated
    return {"apiVersion": group, "kind": kind, "metadata": {"name": name}, "spec": body}


def create_service(client: kubernetes.client.ApiClient, body: dict[str, Any]) -> Any:
    return kubernetes.client.CoreV1Api(client).create_namespaced_service(NAMESPACE, body)


def create_pod(client: kubernetes.client.ApiClient, body: dict[str, Any]) -> Any:
    return kubernetes.client.CoreV1Api(client).create_namespaced_pod(NAMESPACE, body)


def create_workload(client: kubernetes.client.ApiClient, body: dict[str, Any]) -> Any:
    """Through the official client's dynamic client: its typed models refuse a Deployment with no selector."""
    resources = kubernetes.dynamic.DynamicClient(client).resources
    return resources.get(api_version=body["apiVersion"], kind=body["kind"]).create(body=body, namespace=NAMESPACE)


def go_port(port: int, protocol: str = "TCP") -> str:
    return (
        f'core.ServicePort{{Name:"", Protocol:"{protocol}", AppProtocol:(*string)(nil), Port:{port}, '
        'TargetPort:intstr.IntOrString{Type:0, IntVal:0, StrVal:""}, NodePort:0}'
    )


LABEL_RULE = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end "
    "with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
TEMPLATE = "spec.template.spec"
REFUSED: list[tuple[Create, dict[str, Any], list[str]]] = [
    (
        create_service,
        service("dup-names", {"name": "http", "port": 80}, {"name": "http", "port": 8080}),
        ['spec.ports[1].name: Duplicate value: "http"'],
    ),
    (
        create_service,
        service("one-unnamed", {"name": "http", "port": 80}, {"port": 8080}),
        ["spec.ports[1].name: Required value"],
    ),
    (
        create_service,
        service("dup-pairs", {"name": "a", "port": 80}, {"name": "b", "port": 80, "protocol": "TCP"}),
        [f"spec.ports[1]: Duplicate value: {go_port(80)}"],
    ),
    (
        create_service,
        service("bad-name", {"name": "Http", "port": 80}),
        [f'spec.ports[0].name: Invalid value: "Http": {LABEL_RULE}'],
    ),
    (
        create_service,
        service(
            "dup-node-ports",
            {"name": "a", "port": 80, "nodePort": 30080},
            {"name": "b", "port": 81, "nodePort": 30080},
            type="NodePort",
        ),
        ["spec.ports[1].nodePort: Duplicate value: 30080"],
    ),
    (
        create_pod,
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "dup-port-names"},
            "spec": pod_spec(
                container(ports=[{"name": "http", "containerPort": 80}, {"name": "http", "containerPort": 81}])
            ),
        },
        ['spec.containers[0].ports[1].name: Duplicate value: "http"'],
    ),
    (
        create_pod,
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "long-port-name"},
            "spec": pod_spec(container(ports=[{"name": "metrics-endpoint", "containerPort": 80}])),
        },
        ['spec.containers[0].ports[0].name: Invalid value: "metrics-endpoint": must be no more than 15 characters'],
    ),
    (
        create_workload,
        workload("Deployment", "unmounted", pod_spec(container(volumeMounts=[{"name": "data", "mountPath": "/d"}]))),
        [f'{TEMPLATE}.containers[0].volumeMounts[0].name: Not found: "data"'],
    ),
    (
        create_workload,
        workload(
            "DaemonSet",
            "dup-volumes",
            pod_spec(container(), volumes=[{"name": "v", "emptyDir": {}}, {"name": "v", "emptyDir": {}}]),
        ),
        [f'{TEMPLATE}.volumes[1].name: Duplicate value: "v"'],
    ),
    (
        create_workload,
        {**workload("Deployment", "no-selector", pod_spec(container()))},
        [
            "spec.selector: Required value",
            'spec.template.metadata.labels: Invalid value: map[string]string{"app":"x"}: '
            "`selector` does not match template `labels`",
        ],
    ),
    (
        create_workload,
        workload("StatefulSet", "empty-selector", pod_spec(container()), serviceName="s"),
        [
            "spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{}, "
            "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: empty selector is invalid for statefulset"
        ],
    ),
    (
        create_workload,
        workload("Job", "restarting", pod_spec(container())),
        [f'{TEMPLATE}.restartPolicy: Unsupported value: "Always": supported values: "OnFailure", "Never"'],
    ),
    (
        create_workload,
        workload("Deployment", "not-restarting", pod_spec(container(), restartPolicy="Never")),
        [f'{TEMPLATE}.restartPolicy: Unsupported value: "Never": supported values: "Always"'],
    ),
]
# The rows' selectors: none at all, and an empty one.
del REFUSED[9][1]["spec"]["selector"]
REFUSED[10][1]["spec"]["selector"] = {"matchLabels": {}}


def selected_by(kind: str, name: str, *expressions: dict[str, Any]) -> dict[str, Any]:
    """A workload whose selector is the template's labels and these expressions."""
    body = workload(kind, name, pod_spec(container()))
    body["spec"]["selector"]["matchExpressions"] = list(expressions)
    return body


# Set-based selectors: the expressions must select the template's labels too, and be valid.
REFUSED += [
    (
        create_workload,
        selected_by("Deployment", "tier-not-selected", {"key": "tier", "operator": "In", "values": ["web"]}),
        [
            'spec.template.metadata.labels: Invalid value: map[string]string{"app":"x"}: '
            "`selector` does not match template `labels`"
        ],
    ),
    (
        create_workload,
        selected_by("StatefulSet", "app-excluded", {"key": "app", "operator": "NotIn", "values": ["x"]}),
        [
            'spec.template.metadata.labels: Invalid value: map[string]string{"app":"x"}: '
            "`selector` does not match template `labels`"
        ],
    ),
    (
        create_workload,
        selected_by("DaemonSet", "bad-operator", {"key": "app", "operator": "Equals", "values": ["x"]}),
        ['spec.selector.matchExpressions[0].operator: Invalid value: "Equals": not a valid selector operator'],
    ),
    (
        create_workload,
        selected_by("ReplicaSet", "in-without-values", {"key": "app", "operator": "In"}),
        [
            "spec.selector.matchExpressions[0].values: Required value: "
            "must be specified when `operator` is 'In' or 'NotIn'"
        ],
    ),
]


@pytest.mark.parametrize(("create", "body", "causes"), REFUSED, ids=[row[1]["metadata"]["name"] for row in REFUSED])
def test_a_template_the_apiserver_refuses_is_refused_with_its_field_errors(
    api_client: kubernetes.client.ApiClient, create: Create, body: dict[str, Any], causes: list[str]
) -> None:
    with pytest.raises(ApiException) as info:
        create(api_client, body)
    assert info.value.status == 422
    status = json.loads(info.value.body or "{}")
    assert status["reason"] == "Invalid"
    assert [f"{cause['field']}: {cause['message']}" for cause in status["details"]["causes"]] == causes
    listed = causes[0] if len(causes) == 1 else f"[{', '.join(causes)}]"
    kind = body["kind"] if body["kind"] in ("Service", "Pod") else f"{body['kind']}.{body['apiVersion'].split('/')[0]}"
    assert status["message"] == f'{kind} "{body["metadata"]["name"]}" is invalid: {listed}'


ACCEPTED: list[tuple[Create, dict[str, Any]]] = [
    (
        create_service,
        service("tcp-and-udp", {"name": "dns", "port": 53}, {"name": "dns-udp", "port": 53, "protocol": "UDP"}),
    ),
    (create_service, service("single-unnamed", {"port": 80})),
    (
        create_workload,
        {
            **workload(
                "StatefulSet",
                "claims",
                pod_spec(container(volumeMounts=[{"name": "data", "mountPath": "/d"}])),
                serviceName="s",
                volumeClaimTemplates=[
                    {
                        "metadata": {"name": "data"},
                        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
                    }
                ],
            )
        },
    ),
    (create_workload, workload("Job", "completing", pod_spec(container(), restartPolicy="OnFailure"))),
    (create_workload, selected_by("Deployment", "app-in", {"key": "app", "operator": "In", "values": ["x", "y"]})),
    (create_workload, selected_by("StatefulSet", "no-tier", {"key": "tier", "operator": "DoesNotExist"})),
]


@pytest.mark.parametrize(("create", "body"), ACCEPTED, ids=[row[1]["metadata"]["name"] for row in ACCEPTED])
def test_a_template_the_apiserver_accepts_is_created(
    api_client: kubernetes.client.ApiClient, create: Create, body: dict[str, Any]
) -> None:
    assert create(api_client, body).metadata.name == body["metadata"]["name"]
