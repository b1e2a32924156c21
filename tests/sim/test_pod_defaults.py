"""Pods, pod templates and services get the apiserver's defaults; pods also what admission adds on creation."""

from __future__ import annotations

from typing import Any

import pytest

from kopf_sim.store.cluster import Cluster
from kopf_sim.writes.podspecs import image_pull_policy

JsonDict = dict[str, Any]

DEFAULTED_CONTAINER = {
    "terminationMessagePath": "/dev/termination-log",
    "terminationMessagePolicy": "File",
    "resources": {},
}
PROBE = {"timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3}
ADMITTED_TOLERATIONS = [
    {"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
    for key in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")
]


def pod_spec() -> JsonDict:
    return {
        "containers": [
            {
                "name": "c",
                "image": "nginx",
                "ports": [{"containerPort": 80}],
                "readinessProbe": {"httpGet": {"port": 80, "path": "/"}},
                "env": [{"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
            }
        ],
        "initContainers": [{"name": "i", "image": "busybox:1.36", "imagePullPolicy": "Never"}],
        "volumes": [{"name": "v", "configMap": {"name": "cm"}}, {"name": "s", "secret": {"secretName": "s"}}],
    }


def defaulted_pod_spec() -> JsonDict:
    return {
        "containers": [
            {
                "name": "c",
                "image": "nginx",
                "ports": [{"containerPort": 80, "protocol": "TCP"}],
                "readinessProbe": {"httpGet": {"port": 80, "path": "/", "scheme": "HTTP"}, **PROBE},
                "env": [
                    {"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName", "apiVersion": "v1"}}}
                ],
                "imagePullPolicy": "Always",
                **DEFAULTED_CONTAINER,
            }
        ],
        "initContainers": [{"name": "i", "image": "busybox:1.36", "imagePullPolicy": "Never", **DEFAULTED_CONTAINER}],
        "volumes": [
            {"name": "v", "configMap": {"name": "cm", "defaultMode": 420}},
            {"name": "s", "secret": {"secretName": "s", "defaultMode": 420}},
        ],
        "restartPolicy": "Always",
        "dnsPolicy": "ClusterFirst",
        "schedulerName": "default-scheduler",
        "terminationGracePeriodSeconds": 30,
        "securityContext": {},
    }


@pytest.mark.parametrize(
    ("image", "policy"),
    [
        ("nginx", "Always"),
        ("nginx:latest", "Always"),
        ("nginx:1.25", "IfNotPresent"),
        ("registry.local:5000/team/app", "Always"),
        ("registry.local:5000/team/app:v2", "IfNotPresent"),
        ("nginx@sha256:" + "0" * 64, "IfNotPresent"),
    ],
)
def test_the_image_pull_policy_follows_the_tag(image: str, policy: str) -> None:
    assert image_pull_policy(image) == policy


def test_a_pod_gets_the_defaults_and_the_admitted_fields(cluster: Cluster) -> None:
    pods = cluster.resource("", "v1", "pods")
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": pod_spec()}
    created = cluster.create(pods, "default", body)
    assert created["spec"] == {
        **defaulted_pod_spec(),
        "serviceAccountName": "default",
        "serviceAccount": "default",
        "enableServiceLinks": True,
        "preemptionPolicy": "PreemptLowerPriority",
        "priority": 0,
        "tolerations": ADMITTED_TOLERATIONS,
    }
    # The same object written back is the same: the defaults are idempotent.
    again = cluster.update(pods, "default", "p", created)
    assert again["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


def test_admission_keeps_what_the_pod_says(cluster: Cluster) -> None:
    pods = cluster.resource("", "v1", "pods")
    tolerate_all = {"operator": "Exists"}
    spec = {
        "containers": [{"name": "c", "image": "x:1"}],
        "serviceAccountName": "robot",
        "tolerations": [tolerate_all],
        "enableServiceLinks": False,
        "restartPolicy": "Never",
    }
    created = cluster.create(pods, "default", {"metadata": {"name": "p"}, "spec": spec})
    assert created["spec"]["serviceAccount"] == "robot"
    assert created["spec"]["tolerations"] == [tolerate_all]
    assert created["spec"]["enableServiceLinks"] is False
    assert created["spec"]["restartPolicy"] == "Never"


@pytest.mark.parametrize(
    ("group", "plural", "path"),
    [
        ("apps", "deployments", ("spec", "template", "spec")),
        ("apps", "replicasets", ("spec", "template", "spec")),
        ("apps", "statefulsets", ("spec", "template", "spec")),
        ("apps", "daemonsets", ("spec", "template", "spec")),
        ("batch", "jobs", ("spec", "template", "spec")),
        ("batch", "cronjobs", ("spec", "jobTemplate", "spec", "template", "spec")),
    ],
)
def test_pod_templates_get_the_defaults_but_not_the_admitted_fields(
    cluster: Cluster, group: str, plural: str, path: tuple[str, ...]
) -> None:
    rtype = cluster.resource(group, "v1", plural)
    labels = {"app": "x"}
    template: JsonDict = {"metadata": {"labels": labels}, "spec": pod_spec()}
    spec: JsonDict = {"selector": {"matchLabels": labels}, "template": template}
    if plural == "jobs":
        spec = {"template": template}
        template["spec"]["restartPolicy"] = "Never"
    elif plural == "cronjobs":
        spec = {"schedule": "@hourly", "jobTemplate": {"spec": {"template": template}}}
        template["spec"]["restartPolicy"] = "OnFailure"
    created = cluster.create(rtype, "default", {"metadata": {"name": "w"}, "spec": spec})
    stored: Any = created
    for field in path:
        stored = stored[field]
    expected = defaulted_pod_spec()
    if plural in ("jobs", "cronjobs"):
        expected["restartPolicy"] = template["spec"]["restartPolicy"]
    assert stored == expected


def test_a_service_gets_the_defaults(cluster: Cluster) -> None:
    services = cluster.resource("", "v1", "services")
    body = {"metadata": {"name": "s"}, "spec": {"selector": {"app": "x"}, "ports": [{"port": 80}]}}
    created = cluster.create(services, "default", body)
    assert created["spec"] == {
        "selector": {"app": "x"},
        "ports": [{"port": 80, "protocol": "TCP", "targetPort": 80}],
        "type": "ClusterIP",
        "sessionAffinity": "None",
        "internalTrafficPolicy": "Cluster",
        "clusterIP": created["spec"]["clusterIP"],
        "clusterIPs": [created["spec"]["clusterIP"]],
        "ipFamilies": ["IPv4"],
        "ipFamilyPolicy": "SingleStack",
    }
    # An update that leaves out what was allocated and defaulted keeps it all.
    updated = cluster.update(services, "default", "s", body)
    assert updated["spec"] == created["spec"]
    external = {"metadata": {"name": "e"}, "spec": {"type": "ExternalName", "externalName": "a.example"}}
    assert cluster.create(services, "default", external)["spec"] == {
        "type": "ExternalName",
        "externalName": "a.example",
        "sessionAffinity": "None",
    }
