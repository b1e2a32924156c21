"""A smoke-test operator as such operators are written: ``on.event`` handlers on pods drive Jobs.

A SmokeTest runs a Deployment under test; each of its pods, once ready, gets a probing Job (named after the pod,
owned by it); each probe's pod, once finished, reports its outcome into the SmokeTest's status. The Jobs and the
status are written with the official client, from a sync handler (in a thread) and from an async one (the
blocking way, as many do).
"""

import kubernetes
from workloads import PROBE_LABEL, TARGET_LABEL, probe, ready, target

import kopf

kubernetes.config.load_kube_config()


@kopf.on.create("smoketests")
@kopf.on.update("smoketests", field="spec")
@kopf.on.resume("smoketests")
def deploy(name, namespace, spec, body, **_):
    apps = kubernetes.client.AppsV1Api()
    deployment = target(name, spec, body)
    try:
        apps.create_namespaced_deployment(namespace, deployment)
    except kubernetes.client.ApiException as exc:
        if exc.status != 409:
            raise
        apps.patch_namespaced_deployment(deployment["metadata"]["name"], namespace, deployment)
    return {"deployment": deployment["metadata"]["name"]}


@kopf.on.event("pods", labels={TARGET_LABEL: kopf.PRESENT})
def probe_when_ready(type, body, namespace, logger, **_):
    if type == "DELETED" or body.get("metadata", {}).get("deletionTimestamp") or not ready(body):
        return
    test = body["metadata"]["labels"][TARGET_LABEL]
    custom = kubernetes.client.CustomObjectsApi()
    try:
        smoke = custom.get_namespaced_custom_object("qa.example", "v1", namespace, "smoketests", test)
    except kubernetes.client.ApiException as exc:
        if exc.status == 404:
            return  # the test is gone; its pods go too
        raise
    job = probe(body, test, smoke["spec"].get("probe", "/healthz"))
    try:
        kubernetes.client.BatchV1Api().create_namespaced_job(namespace, job)
    except kubernetes.client.ApiException as exc:
        if exc.status not in (409, 404):  # probed already; or its pod is gone meanwhile
            raise
        return
    logger.info(f"Probing {body['metadata']['name']} with {job['metadata']['name']}.")


@kopf.on.event("pods", labels={PROBE_LABEL: kopf.PRESENT})
async def report(type, body, namespace, **_):
    phase = (body.get("status") or {}).get("phase")
    if type == "DELETED" or phase not in ("Succeeded", "Failed"):
        return
    test = body["metadata"]["labels"][PROBE_LABEL]
    patch = {"status": {"lastProbe": phase}}
    try:
        kubernetes.client.CustomObjectsApi().patch_namespaced_custom_object_status(
            "qa.example", "v1", namespace, "smoketests", test, patch
        )
    except kubernetes.client.ApiException as exc:
        if exc.status != 404:
            raise
