"""The smoke tests' workloads: the Deployment under test, and a Job that probes one of its pods."""

import kopf

TARGET_LABEL = "smoke-target"
PROBE_LABEL = "smoke-probe"


def target(name, spec, owner):
    """The Deployment under test (its pods carry the smoke test's name), owned by the smoke test."""
    selector = {TARGET_LABEL: name}  # the selector cannot change: the target's label is on the pods only
    labels = {**selector, "app": spec["target"]}
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": f"{name}-target", "labels": {TARGET_LABEL: name}},
        "spec": {
            "replicas": spec.get("replicas", 1),
            "selector": {"matchLabels": selector},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "target", "image": f"example/{spec['target']}:1"}]},
            },
        },
    }
    kopf.adopt(deployment, owner=owner)
    return deployment


def probe(pod, test, path):
    """A Job probing the pod (named after it), owned by the pod: it goes when the pod goes."""
    ip = (pod.get("status") or {}).get("podIP") or "127.0.0.1"
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": f"probe-{pod['metadata']['name']}"[:63], "labels": {PROBE_LABEL: test}},
        "spec": {
            "backoffLimit": 2,
            "template": {
                "metadata": {"labels": {PROBE_LABEL: test}},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {"name": "probe", "image": "curlimages/curl:8", "args": ["-fsS", f"http://{ip}{path}"]}
                    ],
                },
            },
        },
    }
    kopf.adopt(job, owner=pod)
    return job


def ready(pod):
    """Whether the pod runs and is ready (as its status says)."""
    status = pod.get("status") or {}
    conditions = {c.get("type"): c.get("status") for c in status.get("conditions") or []}
    return status.get("phase") == "Running" and conditions.get("Ready") == "True"
