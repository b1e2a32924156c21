"""What updates of built-in objects may not change, refused as the apiserver refuses it: 422 Invalid with causes.

Each refused write leaves the store as it was; the allowed changes next to each rule still go through.
"""

from __future__ import annotations

import json
from typing import Any

import aiohttp
import pytest

from kopf_sim.kube import errors
from kopf_sim.store.cluster import Cluster
from kopf_sim.writes import preparing

from .test_bad_input import snapshot
from .test_typed_builtins import create

NS = "/api/v1/namespaces/default"
PODS, SERVICES, PVCS = f"{NS}/pods", f"{NS}/services", f"{NS}/persistentvolumeclaims"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
STATEFULSETS = "/apis/apps/v1/namespaces/default/statefulsets"
JOBS = "/apis/batch/v1/namespaces/default/jobs"
MERGE = "application/merge-patch+json"
POD_UPDATABLE = (
    "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,"
    "`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),"
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"
)


async def patch(client: aiohttp.ClientSession, url: str, body: Any) -> tuple[int, dict[str, Any]]:
    async with client.patch(url, data=json.dumps(body), headers={"Content-Type": MERGE}) as response:
        return response.status, dict(await response.json())


async def refused(client: aiohttp.ClientSession, cluster: Cluster, url: str, body: Any) -> dict[str, Any]:
    """The Status of a patch that must be refused as Invalid, and change nothing."""
    before = snapshot(cluster)
    code, status = await patch(client, url, body)
    assert (code, status["kind"], status["reason"]) == (422, "Status", "Invalid"), status
    assert snapshot(cluster) == before
    return status


async def allowed(client: aiohttp.ClientSession, url: str, body: Any) -> dict[str, Any]:
    code, obj = await patch(client, url, body)
    assert code == 200, obj
    return obj


def pod(**spec: Any) -> dict[str, Any]:
    containers = [{"name": "c", "image": "nginx:1"}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": containers, **spec}}


async def test_a_pods_spec_changes_only_where_allowed(client: aiohttp.ClientSession, cluster: Cluster) -> None:
    toleration = {"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60}
    created = await create(client, PODS, pod(tolerations=[toleration], activeDeadlineSeconds=100))
    admitted = created["spec"]["tolerations"][1:]  # not-ready, unreachable: added on creation

    status = await refused(client, cluster, f"{PODS}/p", {"spec": {"restartPolicy": "Never"}})
    assert status["message"].startswith(f'Pod "p" is invalid: spec: Forbidden: {POD_UPDATABLE}\n  core.PodSpec{{')
    assert '+ \tRestartPolicy: "Never",' in status["message"]
    assert status["details"]["causes"][0]["field"] == "spec"
    assert status["details"]["causes"][0]["reason"] == "FieldValueForbidden"

    status = await refused(
        client,
        cluster,
        f"{PODS}/p",
        {"spec": {"containers": [{"name": "c", "image": "x"}, {"name": "d", "image": "x"}]}},
    )
    assert (
        status["message"]
        == 'Pod "p" is invalid: spec.containers: Forbidden: pod updates may not add or remove containers'
    )
    status = await refused(client, cluster, f"{PODS}/p", {"spec": {"activeDeadlineSeconds": 200}})
    assert status["message"] == (
        'Pod "p" is invalid: spec.activeDeadlineSeconds: Invalid value: 200: '
        "must be less than or equal to previous value"
    )
    status = await refused(client, cluster, f"{PODS}/p", {"spec": {"tolerations": []}})
    assert status["message"] == (
        'Pod "p" is invalid: spec.tolerations: Forbidden: existing toleration can not be modified except its '
        "tolerationSeconds"
    )

    added = {"key": "other", "operator": "Exists"}
    changed = await allowed(
        client,
        f"{PODS}/p",
        {
            "spec": {
                "containers": [{"name": "c", "image": "nginx:2"}],
                "activeDeadlineSeconds": 50,
                "tolerations": [{**toleration, "tolerationSeconds": 30}, *admitted, added],
            }
        },
    )
    assert changed["spec"]["containers"][0]["image"] == "nginx:2"
    assert changed["spec"]["activeDeadlineSeconds"] == 50
    assert changed["spec"]["tolerations"][-1] == added


async def test_the_scheduler_binds_a_pod_once(cluster: Cluster) -> None:
    pods = cluster.resource("", "v1", "pods")
    cluster.create(pods, "default", pod())
    bound = cluster.update(pods, "default", "p", {"spec": {"nodeName": "n1"}}, subresource=preparing.BINDING)
    assert bound["spec"]["nodeName"] == "n1"
    assert "managedFields" not in bound["metadata"]
    with pytest.raises(errors.ApiError) as conflict:
        cluster.update(pods, "default", "p", {"spec": {"nodeName": "n2"}}, subresource=preparing.BINDING)
    assert conflict.value.code == 409
    assert conflict.value.message == (
        'Operation cannot be fulfilled on pods/binding "p": pod p is already assigned to node "n1"'
    )


def deployment(**spec: Any) -> dict[str, Any]:
    labels = {"app": "x"}
    template = {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
    body = {"selector": {"matchLabels": labels}, "template": template, **spec}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": body}


async def test_a_workloads_selector_is_immutable(client: aiohttp.ClientSession, cluster: Cluster) -> None:
    await create(client, DEPLOYMENTS, deployment())
    selector = {"matchLabels": {"app": "x", "tier": "y"}, "matchExpressions": [{"key": "k", "operator": "Exists"}]}
    labels = {"app": "x", "tier": "y", "k": "z"}  # selected by the new selector: only its change is refused
    status = await refused(
        client,
        cluster,
        f"{DEPLOYMENTS}/d",
        {"spec": {"selector": selector, "template": {"metadata": {"labels": labels}}}},
    )
    assert status["message"] == (
        'Deployment.apps "d" is invalid: spec.selector: Invalid value: v1.LabelSelector{MatchLabels:'
        'map[string]string{"app":"x", "tier":"y"}, MatchExpressions:[]v1.LabelSelectorRequirement{'
        'v1.LabelSelectorRequirement{Key:"k", Operator:"Exists", Values:[]string(nil)}}}: field is immutable'
    )
    assert status["details"]["causes"] == [
        {"reason": "FieldValueInvalid", "field": "spec.selector", "message": status["message"].split(": ", 2)[2]}
    ]
    await allowed(client, f"{DEPLOYMENTS}/d", {"spec": {"replicas": 3, "template": {"metadata": {"labels": labels}}}})


async def test_a_statefulsets_spec_changes_only_where_allowed(client: aiohttp.ClientSession, cluster: Cluster) -> None:
    body = deployment(serviceName="svc")
    await create(client, STATEFULSETS, {**body, "kind": "StatefulSet", "metadata": {"name": "s"}})
    status = await refused(client, cluster, f"{STATEFULSETS}/s", {"spec": {"serviceName": "other"}})
    assert status["message"] == (
        'StatefulSet.apps "s" is invalid: spec: Forbidden: updates to statefulset spec for fields other than '
        "'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and "
        "'minReadySeconds' are forbidden"
    )
    await allowed(client, f"{STATEFULSETS}/s", {"spec": {"replicas": 2, "minReadySeconds": 5}})


def job(**spec: Any) -> dict[str, Any]:
    template = {"spec": {"containers": [{"name": "c", "image": "busybox"}], "restartPolicy": "Never"}}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}, "spec": {"template": template, **spec}}


async def test_a_jobs_template_is_immutable(client: aiohttp.ClientSession, cluster: Cluster) -> None:
    await create(client, JOBS, job())
    status = await refused(
        client, cluster, f"{JOBS}/j", {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}}}
    )
    assert status["message"].startswith('Job.batch "j" is invalid: spec.template: Invalid value: ')
    assert status["message"].endswith(": field is immutable")
    status = await refused(client, cluster, f"{JOBS}/j", {"spec": {"completions": 3}})
    assert status["message"] == 'Job.batch "j" is invalid: spec.completions: Invalid value: 3: field is immutable'
    await allowed(client, f"{JOBS}/j", {"spec": {"suspend": True, "parallelism": 2}})


async def test_a_suspended_new_job_may_change_its_scheduling(client: aiohttp.ClientSession, cluster: Cluster) -> None:
    await create(client, JOBS, job(suspend=True))
    scheduling = {"metadata": {"labels": {"a": "b"}}, "spec": {"nodeSelector": {"disk": "ssd"}}}
    changed = await allowed(client, f"{JOBS}/j", {"spec": {"template": scheduling}})
    assert changed["spec"]["template"]["spec"]["nodeSelector"] == {"disk": "ssd"}
    await refused(client, cluster, f"{JOBS}/j", {"spec": {"template": {"spec": {"hostNetwork": True}}}})


async def test_a_services_cluster_ip_may_not_change(client: aiohttp.ClientSession, cluster: Cluster) -> None:
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}]}}
    created = await create(client, SERVICES, service)
    status = await refused(client, cluster, f"{SERVICES}/s", {"spec": {"clusterIP": "10.96.0.250"}})
    assert status["message"] == (
        'Service "s" is invalid: spec.clusterIPs[0]: Invalid value: []string{"10.96.0.250"}: may not change once set'
    )
    kept = await allowed(client, f"{SERVICES}/s", {"spec": {"clusterIP": None, "clusterIPs": None}})
    assert kept["spec"]["clusterIPs"] == created["spec"]["clusterIPs"]
    external = await allowed(
        client, f"{SERVICES}/s", {"spec": {"type": "ExternalName", "externalName": "a.example", "clusterIP": None}}
    )
    assert "clusterIP" not in external["spec"]


async def test_a_claims_spec_is_immutable_but_for_bound_resizes(
    client: aiohttp.ClientSession, cluster: Cluster
) -> None:
    claim = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "c"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }
    await create(client, PVCS, claim)
    more = {"spec": {"resources": {"requests": {"storage": "2Gi"}}}}
    status = await refused(client, cluster, f"{PVCS}/c", more)
    assert status["message"] == (
        'PersistentVolumeClaim "c" is invalid: spec: Forbidden: spec is immutable after creation except '
        "resources.requests and volumeAttributesClassName for bound claims"
    )
    await allowed(client, f"{PVCS}/c", {"spec": {"storageClassName": "standard", "volumeName": "pv-1"}})
    await refused(client, cluster, f"{PVCS}/c", {"spec": {"volumeName": "pv-2"}})
    async with client.patch(
        f"{PVCS}/c/status", data=json.dumps({"status": {"phase": "Bound"}}), headers={"Content-Type": MERGE}
    ) as response:
        assert response.status == 200
    resized = await allowed(client, f"{PVCS}/c", more)
    assert resized["spec"]["resources"]["requests"]["storage"] == "2Gi"
