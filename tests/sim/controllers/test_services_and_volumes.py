"""Services' Endpoints and EndpointSlices; PersistentVolumeClaims and Volumes; namespaces' defaults."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kopf_sim.controllers import ControllerManager, Fate
from pytest_kopf.cluster import KopfCluster

from .workloads import deployment, pod

JsonDict = dict[str, Any]


def service(name: str, selector: dict[str, str], **spec: Any) -> JsonDict:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "labels": {"team": "a"}},
        "spec": {"selector": selector, "ports": [{"name": "http", "port": 80, "targetPort": "web"}], **spec},
    }


def claim(name: str, size: str = "1Gi", **spec: Any) -> JsonDict:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}, **spec},
    }


def web_deployment(replicas: int) -> JsonDict:
    body = deployment("web", replicas=replicas)
    body["spec"]["template"]["spec"]["containers"][0]["ports"] = [{"name": "web", "containerPort": 8080}]
    return body


async def test_endpoints_follow_the_ready_pods(kopf_cluster: KopfCluster, controllers: ControllerManager) -> None:
    svc = await kopf_cluster.create(service("web", {"app": "web"}))
    assert svc["spec"]["clusterIP"].startswith("10.96.")  # allocated by the apiserver
    endpoints = await kopf_cluster.wait_for("endpoints", "web")
    assert "subsets" not in endpoints  # no pods yet
    assert endpoints["metadata"]["labels"] == {"team": "a"}
    await kopf_cluster.create(web_deployment(2))
    endpoints = await kopf_cluster.wait_for(
        "endpoints", "web", condition=lambda e: len(e["subsets"][0].get("addresses", [])) == 2
    )
    [subset] = endpoints["subsets"]
    assert subset["ports"] == [{"port": 8080, "protocol": "TCP", "name": "http"}]  # the named port, resolved
    assert {a["targetRef"]["kind"] for a in subset["addresses"]} == {"Pod"}
    assert all(a["ip"].startswith("10.244.") and a["nodeName"].startswith("node-") for a in subset["addresses"])
    [slice_] = await kopf_cluster.list("endpointslices")
    assert slice_["metadata"]["name"].startswith("web-")
    assert slice_["metadata"]["labels"] == {
        "team": "a",
        "kubernetes.io/service-name": "web",
        "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io",
    }
    assert slice_["addressType"] == "IPv4"
    assert [e["conditions"] for e in slice_["endpoints"]] == [
        {"ready": True, "serving": True, "terminating": False}
    ] * 2
    assert slice_["ports"] == [{"port": 8080, "protocol": "TCP", "name": "http"}]

    controllers.fate("app=web", Fate.never_ready())
    endpoints = await kopf_cluster.wait_for(
        "endpoints", "web", condition=lambda e: len(e["subsets"][0].get("notReadyAddresses", [])) == 2
    )
    assert "addresses" not in endpoints["subsets"][0]
    await kopf_cluster.delete("services", "web")
    await asyncio.sleep(0.5)
    assert await kopf_cluster.list("endpoints") == []
    assert await kopf_cluster.list("endpointslices") == []


async def test_terminating_pods_leave_the_endpoints(kopf_cluster: KopfCluster) -> None:
    await kopf_cluster.create(service("single", {"app": "single"}, ports=[{"port": 80}]))
    await kopf_cluster.create(pod("single"))
    await kopf_cluster.wait_for("endpoints", "single", condition=lambda e: e["subsets"][0].get("addresses"))
    await kopf_cluster.delete("pods", "single")
    await asyncio.sleep(0.5)
    endpoints = await kopf_cluster.get("endpoints", "single")
    assert endpoints is not None and "subsets" not in endpoints
    [slice_] = await kopf_cluster.list("endpointslices")
    assert slice_["endpoints"][0]["conditions"] == {"ready": False, "serving": True, "terminating": True}


async def test_services_without_selectors_are_left_alone(kopf_cluster: KopfCluster) -> None:
    await kopf_cluster.create(
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "external"}, "spec": {"ports": [{"port": 443}]}}
    )
    await asyncio.sleep(1)
    assert await kopf_cluster.list("endpoints") == []


async def test_a_claim_is_bound_to_a_provisioned_volume(kopf_cluster: KopfCluster) -> None:
    [storage_class] = await kopf_cluster.list("storageclasses")
    assert storage_class["metadata"]["name"] == "standard"
    assert storage_class["metadata"]["annotations"]["storageclass.kubernetes.io/is-default-class"] == "true"
    await kopf_cluster.create(claim("data", "5Gi"))
    obj = await kopf_cluster.wait_for(
        "persistentvolumeclaims", "data", condition=lambda c: c["status"].get("phase") == "Bound"
    )
    assert obj["spec"]["storageClassName"] == "standard"  # the default class, filled in
    assert obj["spec"]["volumeName"] == f"pvc-{obj['metadata']['uid']}"
    assert obj["status"] == {"phase": "Bound", "accessModes": ["ReadWriteOnce"], "capacity": {"storage": "5Gi"}}
    assert obj["metadata"]["finalizers"] == ["kubernetes.io/pvc-protection"]
    assert obj["metadata"]["annotations"]["pv.kubernetes.io/bind-completed"] == "yes"
    volume = await kopf_cluster.get("persistentvolumes", obj["spec"]["volumeName"])
    assert volume is not None
    assert volume["status"]["phase"] == "Bound"
    assert volume["spec"]["claimRef"]["uid"] == obj["metadata"]["uid"]
    assert volume["spec"]["persistentVolumeReclaimPolicy"] == "Delete"

    await kopf_cluster.patch(
        "persistentvolumeclaims", "data", {"spec": {"resources": {"requests": {"storage": "10Gi"}}}}
    )  # the class allows expansion
    obj = await kopf_cluster.wait_for(
        "persistentvolumeclaims", "data", condition=lambda c: c["status"]["capacity"]["storage"] == "10Gi"
    )
    volume = await kopf_cluster.get("persistentvolumes", obj["spec"]["volumeName"])
    assert volume is not None and volume["spec"]["capacity"]["storage"] == "10Gi"

    await kopf_cluster.delete("persistentvolumeclaims", "data")
    await kopf_cluster.wait_gone("persistentvolumeclaims", "data")
    await kopf_cluster.wait_gone("persistentvolumes", volume["metadata"]["name"])  # reclaimed: deleted


async def test_a_claim_in_use_stays_until_its_pods_are_gone(kopf_cluster: KopfCluster) -> None:
    await kopf_cluster.create(claim("shared"))
    await kopf_cluster.create(pod("user", volumes=[{"name": "v", "persistentVolumeClaim": {"claimName": "shared"}}]))
    await asyncio.sleep(3)
    await kopf_cluster.delete("persistentvolumeclaims", "shared")
    await asyncio.sleep(60)
    obj = await kopf_cluster.get("persistentvolumeclaims", "shared")
    assert obj is not None and obj["metadata"]["deletionTimestamp"]  # Terminating
    await kopf_cluster.delete("pods", "user")
    await kopf_cluster.wait_gone("persistentvolumeclaims", "shared")


async def test_static_volumes_and_retained_ones(kopf_cluster: KopfCluster) -> None:
    for name, size in [("big", "100Gi"), ("small", "2Gi")]:
        await kopf_cluster.create(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolume",
                "metadata": {"name": name},
                "spec": {
                    "capacity": {"storage": size},
                    "accessModes": ["ReadWriteOnce"],
                    "storageClassName": "",
                    "persistentVolumeReclaimPolicy": "Retain",
                    "hostPath": {"path": f"/data/{name}"},
                },
            }
        )
    await kopf_cluster.wait_for("persistentvolumes", "small", condition=lambda v: v["status"]["phase"] == "Available")
    await kopf_cluster.create(claim("mine", "1Gi", storageClassName=""))
    obj = await kopf_cluster.wait_for(
        "persistentvolumeclaims", "mine", condition=lambda c: c["status"].get("phase") == "Bound"
    )
    assert obj["spec"]["volumeName"] == "small"  # the smallest that fits
    assert obj["status"]["capacity"] == {"storage": "2Gi"}
    await kopf_cluster.delete("persistentvolumeclaims", "mine")
    await kopf_cluster.wait_for("persistentvolumes", "small", condition=lambda v: v["status"]["phase"] == "Released")


async def test_waiting_for_the_first_consumer(kopf_cluster: KopfCluster) -> None:
    await kopf_cluster.create(
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": "local"},
            "provisioner": "example.com/local",
            "volumeBindingMode": "WaitForFirstConsumer",
        }
    )
    await kopf_cluster.create(claim("lazy", storageClassName="local"))
    await asyncio.sleep(30)
    obj = await kopf_cluster.get("persistentvolumeclaims", "lazy")
    assert obj is not None and obj["status"]["phase"] == "Pending"
    await kopf_cluster.create(pod("consumer", volumes=[{"name": "v", "persistentVolumeClaim": {"claimName": "lazy"}}]))
    obj = await kopf_cluster.wait_for(
        "persistentvolumeclaims", "lazy", condition=lambda c: c["status"].get("phase") == "Bound"
    )
    volume = await kopf_cluster.get("persistentvolumes", obj["spec"]["volumeName"])
    assert volume is not None
    assert volume["metadata"]["annotations"]["pv.kubernetes.io/provisioned-by"] == "example.com/local"


async def test_namespaces_get_their_defaults(kopf_cluster: KopfCluster) -> None:
    for namespace in ("default", "kube-system", "kube-public", "kube-node-lease"):
        assert await kopf_cluster.get("serviceaccounts", "default", namespace) is not None
        root = await kopf_cluster.get("configmaps", "kube-root-ca.crt", namespace)
        assert root is not None and root["data"]["ca.crt"].startswith("-----BEGIN CERTIFICATE-----")
    await kopf_cluster.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}})
    assert await kopf_cluster.wait_for("serviceaccounts", "default", "team") is not None
    root = await kopf_cluster.wait_for("configmaps", "kube-root-ca.crt", "team")
    assert root is not None
    assert [m["manager"] for m in root["metadata"]["managedFields"]] == ["kube-controller-manager"]

    await kopf_cluster.delete("serviceaccounts", "default", "team")  # re-created, as in a real cluster
    await kopf_cluster.patch("configmaps", "kube-root-ca.crt", {"data": {"ca.crt": "tampered"}}, "team")
    await asyncio.sleep(0.5)
    assert await kopf_cluster.get("serviceaccounts", "default", "team") is not None
    root = await kopf_cluster.get("configmaps", "kube-root-ca.crt", "team")
    assert root is not None and root["data"]["ca.crt"].startswith("-----BEGIN CERTIFICATE-----")

    await kopf_cluster.delete("namespaces", "team")
    await kopf_cluster.wait_gone("namespaces", "team")
    assert await kopf_cluster.list("serviceaccounts", "team") == []


@pytest.mark.kopf_controllers("all", "-namespaces", "-volumes")
async def test_switched_off_controllers_do_nothing(kopf_cluster: KopfCluster) -> None:
    assert await kopf_cluster.list("serviceaccounts") == []
    assert await kopf_cluster.list("storageclasses") == []
    await kopf_cluster.create(claim("unbound"))
    await asyncio.sleep(60)
    obj = await kopf_cluster.get("persistentvolumeclaims", "unbound")
    assert obj is not None and "finalizers" not in obj["metadata"]
    assert obj["status"] == {"phase": "Pending"}  # as the apiserver defaults it, and no controller changes it
