"""Built-in objects are decoded as typed Go structs and validated, with the apiserver's codes, reasons and words.

Each row: a write of a built-in (or custom) object, and the exact Status the apiserver answers with:
400 ``BadRequest`` when a value has the wrong type (Go's decoding message, prefixed with ``... cannot be
handled as a Kind`` for whole objects, bare for patches), 422 ``Invalid`` with the field path when the
decoded object breaks a rule. Every refused write leaves the store as it was.
"""

from __future__ import annotations

import json
from typing import Any

import aiohttp
import pytest

from kopf_sim.store.cluster import Cluster

from .conftest import CRD
from .test_bad_input import snapshot

NS = "/api/v1/namespaces/default"
CONFIGMAPS, SECRETS, PODS, SERVICES, EVENTS = (
    f"{NS}/{p}" for p in ("configmaps", "secrets", "pods", "services", "events")
)
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
LEASES = "/apis/coordination.k8s.io/v1/namespaces/default/leases"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
WIDGETS = "/apis/acme.example/v1/namespaces/default/widgets"
MERGE = "application/merge-patch+json"
LABEL_MESSAGE = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
    "start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
    "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
CONFIG_KEY = (
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or "
    "'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"
)
PORTS = "must be between 1 and 65535, inclusive"


def cm(**fields: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, **fields}


def meta(**fields: Any) -> dict[str, Any]:
    return cm(metadata={"name": "cm", **fields})


def pod(*containers: Any, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"containers": list(containers), **spec},
    }


def deployment(labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    selector = {"app": "x"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d"},
        "spec": {
            "selector": {"matchLabels": selector},
            **spec,
            "template": {
                "metadata": {"labels": labels or selector},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    }


def service(*ports: Any, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": {"ports": list(ports), **spec}}


def event(**fields: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "e"},
        "reason": "R",
        "message": "m",
        "involvedObject": {"kind": "ConfigMap", "name": "cm", "namespace": "default"},
        **fields,
    }


def lease(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"}, "spec": spec}


def secret(**fields: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, **fields}


def handled(kind: str, message: str) -> str:
    return f'{kind} in version "v1" cannot be handled as a {kind}: {message}'


# (url, body, code, reason, message)
CREATES: list[tuple[str, Any, int, str, str]] = [
    # ConfigMap
    (
        CONFIGMAPS,
        cm(data={"a": 5}),
        400,
        "BadRequest",
        handled("ConfigMap", "json: cannot unmarshal number into Go struct field ConfigMap.data of type string"),
    ),
    (
        CONFIGMAPS,
        cm(data="x"),
        400,
        "BadRequest",
        handled(
            "ConfigMap", "json: cannot unmarshal string into Go struct field ConfigMap.data of type map[string]string"
        ),
    ),
    (
        CONFIGMAPS,
        cm(binaryData={"a": "!!"}),
        400,
        "BadRequest",
        handled("ConfigMap", "illegal base64 data at input byte 0"),
    ),
    (
        CONFIGMAPS,
        cm(immutable="yes"),
        400,
        "BadRequest",
        handled("ConfigMap", "json: cannot unmarshal string into Go struct field ConfigMap.immutable of type bool"),
    ),
    (
        CONFIGMAPS,
        cm(data={"a b": "x"}),
        422,
        "Invalid",
        f'ConfigMap "cm" is invalid: data[a b]: Invalid value: "a b": {CONFIG_KEY}',
    ),
    (
        CONFIGMAPS,
        cm(data={"..": "x"}),
        422,
        "Invalid",
        'ConfigMap "cm" is invalid: data[..]: Invalid value: "..": must not be \'..\'',
    ),
    # Object metadata (the same for all kinds)
    (
        CONFIGMAPS,
        meta(finalizers="abc"),
        400,
        "BadRequest",
        handled(
            "ConfigMap",
            "json: cannot unmarshal string into Go struct field ObjectMeta.metadata.finalizers of type []string",
        ),
    ),
    (
        CONFIGMAPS,
        meta(finalizers=["abc"]),
        422,
        "Invalid",
        'ConfigMap "cm" is invalid: metadata.finalizers[0]: Invalid value: "abc": name is neither a standard '
        "finalizer name nor is it fully qualified",
    ),
    (
        CONFIGMAPS,
        meta(labels="x"),
        400,
        "BadRequest",
        handled(
            "ConfigMap",
            "json: cannot unmarshal string into Go struct field ObjectMeta.metadata.labels of type map[string]string",
        ),
    ),
    (
        CONFIGMAPS,
        cm(metadata={"name": 5}),
        400,
        "BadRequest",
        handled(
            "ConfigMap", "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.name of type string"
        ),
    ),
    (
        CONFIGMAPS,
        meta(ownerReferences=[{"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": 5}]),
        400,
        "BadRequest",
        handled(
            "ConfigMap",
            "json: cannot unmarshal number into Go struct field "
            "OwnerReference.metadata.ownerReferences.uid of type string",
        ),
    ),
    (
        CONFIGMAPS,
        meta(ownerReferences=[{"apiVersion": "v1", "kind": "Pod", "name": "p"}]),
        422,
        "Invalid",
        'ConfigMap "cm" is invalid: metadata.ownerReferences.uid: Invalid value: "": uid must not be empty',
    ),
    (
        CONFIGMAPS,
        meta(labels={"a": "-x-"}),
        422,
        "Invalid",
        'ConfigMap "cm" is invalid: metadata.labels: Invalid value: "-x-": a valid label must be an empty string or '
        "consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character "
        "(e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is "
        "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
    ),
    (
        CONFIGMAPS,
        meta(creationTimestamp="yesterday"),
        400,
        "BadRequest",
        handled(
            "ConfigMap", 'parsing time "yesterday" as "2006-01-02T15:04:05Z07:00": cannot parse "yesterday" as "2006"'
        ),
    ),
    # Secret
    (
        SECRETS,
        secret(data={"k": "not base64"}),
        400,
        "BadRequest",
        handled("Secret", "illegal base64 data at input byte 3"),
    ),
    (
        SECRETS,
        secret(stringData={"k": 1}),
        400,
        "BadRequest",
        handled("Secret", "json: cannot unmarshal number into Go struct field Secret.stringData of type string"),
    ),
    (
        SECRETS,
        secret(type=1),
        400,
        "BadRequest",
        handled("Secret", "json: cannot unmarshal number into Go struct field Secret.type of type v1.SecretType"),
    ),
    # Pod
    (
        PODS,
        {**pod(), "spec": {"containers": "x"}},
        400,
        "BadRequest",
        handled(
            "Pod", "json: cannot unmarshal string into Go struct field PodSpec.spec.containers of type []v1.Container"
        ),
    ),
    (
        PODS,
        pod({"name": "c", "image": 5}),
        400,
        "BadRequest",
        handled(
            "Pod", "json: cannot unmarshal number into Go struct field Container.spec.containers.image of type string"
        ),
    ),
    (
        PODS,
        pod({"name": "c", "image": "i", "ports": [{"containerPort": 0}]}),
        422,
        "Invalid",
        f'Pod "p" is invalid: spec.containers[0].ports[0].containerPort: Invalid value: 0: {PORTS}',
    ),
    (PODS, pod(), 422, "Invalid", 'Pod "p" is invalid: spec.containers: Required value'),
    (PODS, pod({"name": "c"}), 422, "Invalid", 'Pod "p" is invalid: spec.containers[0].image: Required value'),
    (
        PODS,
        pod({"name": "c", "image": "i", "resources": {"limits": {"cpu": "lots"}}}),
        400,
        "BadRequest",
        handled("Pod", "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"),
    ),
    (
        PODS,
        pod({"name": "c", "image": "i"}, restartPolicy="Sometimes"),
        422,
        "Invalid",
        'Pod "p" is invalid: spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", '
        '"OnFailure", "Never"',
    ),
    # Deployment
    (
        DEPLOYMENTS,
        deployment(replicas="3"),
        400,
        "BadRequest",
        handled(
            "Deployment",
            "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32",
        ),
    ),
    (
        DEPLOYMENTS,
        deployment(replicas=10_000_000_000),
        400,
        "BadRequest",
        handled(
            "Deployment",
            "json: cannot unmarshal number 10000000000 into Go struct field DeploymentSpec.spec.replicas of type int32",
        ),
    ),
    (
        DEPLOYMENTS,
        deployment(replicas=1.5),
        400,
        "BadRequest",
        handled(
            "Deployment",
            "json: cannot unmarshal number 1.5 into Go struct field DeploymentSpec.spec.replicas of type int32",
        ),
    ),
    (
        DEPLOYMENTS,
        deployment(replicas=-1),
        422,
        "Invalid",
        'Deployment.apps "d" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0',
    ),
    (
        DEPLOYMENTS,
        deployment(labels={"app": "y"}),
        422,
        "Invalid",
        'Deployment.apps "d" is invalid: spec.template.metadata.labels: Invalid value: map[string]string{"app":"y"}: '
        "`selector` does not match template `labels`",
    ),
    # Service
    # (the target port defaults to the port before validation, as in the apiserver: both are reported)
    (
        SERVICES,
        service({"port": 0}),
        422,
        "Invalid",
        f'Service "s" is invalid: [spec.ports[0].port: Invalid value: '
        f"0: {PORTS}, spec.ports[0].targetPort: Invalid value: 0: "
        f"{PORTS}]",
    ),
    (
        SERVICES,
        service({"port": 70000, "targetPort": 8080}),
        422,
        "Invalid",
        f'Service "s" is invalid: spec.ports[0].port: Invalid value: 70000: {PORTS}',
    ),
    (
        SERVICES,
        service({"port": 80, "targetPort": True}),
        400,
        "BadRequest",
        handled(
            "Service",
            "json: cannot unmarshal bool into Go struct field ServicePort.spec.ports.targetPort of type int32",
        ),
    ),
    (
        SERVICES,
        service({"port": 80}, type="Bogus"),
        422,
        "Invalid",
        'Service "s" is invalid: spec.type: Unsupported value: "Bogus": supported values: "ClusterIP", '
        '"ExternalName", "LoadBalancer", "NodePort"',
    ),
    (
        SERVICES,
        service({"port": 80, "protocol": "HTTP"}),
        422,
        "Invalid",
        'Service "s" is invalid: spec.ports[0].protocol: Unsupported value: "HTTP": supported values: "SCTP", "TCP", '
        '"UDP"',
    ),
    # Namespace
    (
        "/api/v1/namespaces",
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "Bad"}},
        422,
        "Invalid",
        f'Namespace "Bad" is invalid: metadata.name: Invalid value: "Bad": {LABEL_MESSAGE}',
    ),
    (
        "/api/v1/namespaces",
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ok"}, "spec": {"finalizers": "x"}},
        400,
        "BadRequest",
        handled(
            "Namespace",
            "json: cannot unmarshal string into Go struct field NamespaceSpec.spec.finalizers of "
            "type []v1.FinalizerName",
        ),
    ),
    # Event
    (
        EVENTS,
        event(count="x"),
        400,
        "BadRequest",
        handled("Event", "json: cannot unmarshal string into Go struct field Event.count of type int32"),
    ),
    (
        EVENTS,
        event(firstTimestamp="2024-13-01T00:00:00Z"),
        400,
        "BadRequest",
        handled("Event", 'parsing time "2024-13-01T00:00:00Z" as "2006-01-02T15:04:05Z07:00": month out of range'),
    ),
    (
        EVENTS,
        event(involvedObject={"kind": "ConfigMap", "name": "cm", "namespace": "other"}),
        422,
        "Invalid",
        'Event "e" is invalid: involvedObject.namespace: Invalid value: "other": does not match event.namespace',
    ),
    # Lease
    (
        LEASES,
        lease(leaseDurationSeconds="15"),
        400,
        "BadRequest",
        handled(
            "Lease",
            "json: cannot unmarshal string into Go struct field LeaseSpec.spec.leaseDurationSeconds of type int32",
        ),
    ),
    (
        LEASES,
        lease(leaseDurationSeconds=0),
        422,
        "Invalid",
        'Lease.coordination.k8s.io "l" is invalid: spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0',
    ),
    (
        LEASES,
        lease(renewTime="now"),
        400,
        "BadRequest",
        handled("Lease", 'parsing time "now" as "2006-01-02T15:04:05.000000Z07:00": cannot parse "now" as "2006"'),
    ),
    # CustomResourceDefinition
    (
        CRDS,
        {**CRD, "spec": {**CRD["spec"], "versions": "x"}},
        400,
        "BadRequest",
        handled(
            "CustomResourceDefinition",
            "json: cannot unmarshal string into Go struct field "
            "CustomResourceDefinitionSpec.spec.versions of type "
            "[]v1.CustomResourceDefinitionVersion",
        ),
    ),
    # A custom resource: its metadata is typed too
    (
        WIDGETS,
        {"apiVersion": "acme.example/v1", "kind": "Widget", "metadata": {"name": 5}},
        400,
        "BadRequest",
        'Widget in version "v1" cannot be handled as a Widget: json: cannot unmarshal number into Go struct field '
        "ObjectMeta.metadata.name of type string",
    ),
    (
        WIDGETS,
        {"apiVersion": "acme.example/v1", "kind": "Widget", "metadata": {"name": "w", "finalizers": ["x/"]}},
        422,
        "Invalid",
        'Widget.acme.example "w" is invalid: [metadata.finalizers: Invalid value: "x/": name part must '
        'be non-empty, metadata.finalizers: Invalid value: "x/": name part must consist of alphanumeric '
        "characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. "
        "'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
        "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')]",
    ),
]


async def expect(
    client: aiohttp.ClientSession,
    cluster: Cluster,
    method: str,
    url: str,
    body: Any,
    *,
    code: int,
    reason: str,
    message: str,
    content_type: str = "application/json",
) -> None:
    before = snapshot(cluster)
    async with client.request(method, url, data=json.dumps(body), headers={"Content-Type": content_type}) as resp:
        status = await resp.json()
    assert (resp.status, status["reason"], status["message"]) == (code, reason, message)
    assert status["kind"] == "Status" and status["code"] == code
    assert snapshot(cluster) == before


@pytest.mark.parametrize(
    ("url", "body", "code", "reason", "message"),
    CREATES,
    ids=[f"{row[0].rsplit('/', 1)[-1]}-{index}" for index, row in enumerate(CREATES)],
)
async def test_creations(
    client: aiohttp.ClientSession, crd_cluster: Cluster, url: str, body: Any, code: int, reason: str, message: str
) -> None:
    await expect(client, crd_cluster, "POST", url, body, code=code, reason=reason, message=message)


async def create(client: aiohttp.ClientSession, url: str, body: Any) -> dict[str, Any]:
    async with client.post(url, json=body) as response:
        assert response.status == 201, await response.text()
        return dict(await response.json())


async def test_patches_fail_with_the_bare_decoding_message(client: aiohttp.ClientSession, crd_cluster: Cluster) -> None:
    await create(client, CONFIGMAPS, cm(data={"a": "1"}))
    await expect(
        client,
        crd_cluster,
        "PATCH",
        f"{CONFIGMAPS}/cm",
        {"data": {"a": 5}},
        content_type=MERGE,
        code=400,
        reason="BadRequest",
        message="json: cannot unmarshal number into Go struct field ConfigMap.data of type string",
    )


async def test_immutable_configmaps_and_secrets(client: aiohttp.ClientSession, crd_cluster: Cluster) -> None:
    await create(client, CONFIGMAPS, cm(data={"a": "1"}, immutable=True))
    await expect(
        client,
        crd_cluster,
        "PATCH",
        f"{CONFIGMAPS}/cm",
        {"data": {"a": "2"}},
        content_type=MERGE,
        code=422,
        reason="Invalid",
        message='ConfigMap "cm" is invalid: data: Forbidden: field is immutable when `immutable` is set',
    )
    await expect(
        client,
        crd_cluster,
        "PATCH",
        f"{CONFIGMAPS}/cm",
        {"immutable": False},
        content_type=MERGE,
        code=422,
        reason="Invalid",
        message='ConfigMap "cm" is invalid: immutable: Forbidden: field is immutable when `immutable` is set',
    )
    await create(client, SECRETS, secret(data={"k": "dg=="}))
    await expect(
        client,
        crd_cluster,
        "PATCH",
        f"{SECRETS}/s",
        {"type": "kubernetes.io/tls"},
        content_type=MERGE,
        code=422,
        reason="Invalid",
        message='Secret "s" is invalid: type: Invalid value: "kubernetes.io/tls": field is immutable',
    )


@pytest.mark.parametrize(
    ("replicas", "code", "reason", "message"),
    [
        (
            -1,
            422,
            "Invalid",
            'Scale.autoscaling "d" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0',
        ),
        (
            10**30,
            400,
            "BadRequest",
            'Scale in version "v1" cannot be handled as a Scale: json: cannot unmarshal '
            "number 1000000000000000000000000000000 into Go struct field "
            "ScaleSpec.spec.replicas of type int32",
        ),
    ],
)
async def test_scale(
    client: aiohttp.ClientSession, crd_cluster: Cluster, replicas: int, code: int, reason: str, message: str
) -> None:
    await create(client, DEPLOYMENTS, deployment(replicas=1))
    body = {"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "d"}, "spec": {"replicas": replicas}}
    await expect(client, crd_cluster, "PUT", f"{DEPLOYMENTS}/d/scale", body, code=code, reason=reason, message=message)


async def test_a_crd_scope_is_immutable(client: aiohttp.ClientSession, crd_cluster: Cluster) -> None:
    await expect(
        client,
        crd_cluster,
        "PATCH",
        f"{CRDS}/widgets.acme.example",
        {"spec": {"scope": "Cluster"}},
        content_type=MERGE,
        code=422,
        reason="Invalid",
        message='CustomResourceDefinition.apiextensions.k8s.io "widgets.acme.example" is invalid: '
        'spec.scope: Invalid value: "Cluster": field is immutable',
    )


async def test_a_second_crd_with_the_same_kind_is_not_served(
    client: aiohttp.ClientSession, crd_cluster: Cluster
) -> None:
    twin = {
        **CRD,
        "metadata": {"name": "gizmos.acme.example"},
        "spec": {**CRD["spec"], "names": {"plural": "gizmos", "singular": "gizmo", "kind": "Widget"}},
    }
    created = await create(client, CRDS, twin)
    conditions = {c["type"]: c for c in created["status"]["conditions"]}
    assert conditions["NamesAccepted"]["status"] == "False"
    assert conditions["NamesAccepted"]["reason"] == "KindConflict"
    assert conditions["NamesAccepted"]["message"] == '"Widget" is already in use'
    assert conditions["Established"]["status"] == "False"
    async with client.get("/apis/acme.example/v1/namespaces/default/gizmos") as response:
        assert response.status == 404
    async with client.get(WIDGETS) as response:  # the first one is served as before
        assert response.status == 200


async def test_nulls_decode_as_zero_values(client: aiohttp.ClientSession, crd_cluster: Cluster) -> None:
    created = await create(client, CONFIGMAPS, {**cm(data={"a": None}), "metadata": {"name": "cm", "labels": None}})
    assert created["data"] == {"a": ""}
    assert "labels" not in created["metadata"]


async def test_null_fields_are_left_at_zero_values_which_go_omits_or_defaults(
    client: aiohttp.ClientSession, crd_cluster: Cluster
) -> None:
    container = {"name": "c", "image": "nginx", "env": None, "ports": [{"containerPort": 80, "protocol": None}]}
    body = deployment(replicas=None)
    body["spec"]["template"]["spec"]["containers"] = [container]
    created = await create(client, DEPLOYMENTS, body)
    assert created["spec"]["replicas"] == 1  # defaulted, as a nil pointer is
    [stored] = created["spec"]["template"]["spec"]["containers"]
    assert "env" not in stored
    assert stored["ports"] == [{"containerPort": 80, "protocol": "TCP"}]


async def test_quantities_are_stored_canonical_and_null_ones_as_zeros(
    client: aiohttp.ClientSession, crd_cluster: Cluster
) -> None:
    limits = {"cpu": None, "memory": "1.5Gi", "ephemeral-storage": 2000}
    created = await create(client, PODS, pod({"name": "c", "image": "i", "resources": {"limits": limits}}))
    resources = created["spec"]["containers"][0]["resources"]
    assert resources["limits"] == {"cpu": "0", "memory": "1536Mi", "ephemeral-storage": "2k"}
    assert resources["requests"] == resources["limits"]  # a pod requests what it limits (not a template)
    assert created["status"]["qosClass"] == "Burstable"  # no cpu: not guaranteed
