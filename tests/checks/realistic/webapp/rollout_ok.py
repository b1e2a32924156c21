"""Correct, with retries: a Deployment per web app; a timer waits for its rollout, retried after kopf's default
delay (60 s) while the replicas are not all ready, then marks the app available (with a ``lastTransitionTime``)."""

import datetime

from kube import apps, deployment, ensure

import kopf


@kopf.on.create("webapps")
@kopf.on.update("webapps", field="spec")
@kopf.on.resume("webapps")
def deploy(name, namespace, spec, body, **_):
    child = deployment(name, spec)
    kopf.adopt(child, owner=body)
    ensure(apps.create_namespaced_deployment, apps.patch_namespaced_deployment, namespace, child)


@kopf.timer("webapps", interval=300, initial_delay=5)
def rollout(name, namespace, spec, status, patch, **_):
    found = apps.read_namespaced_deployment(name, namespace)  # not there yet: an error, retried as well
    wanted, ready = spec.get("replicas", 1), found.status.ready_replicas or 0
    if found.spec.replicas != wanted or ready != wanted:
        raise kopf.TemporaryError(f"{ready} of {wanted} replica(s) ready")  # again in 60 s
    if status.get("phase") != "Available" or status.get("replicas") != wanted:
        patch.status["phase"] = "Available"
        patch.status["replicas"] = wanted
        patch.status["since"] = datetime.datetime.now(datetime.UTC).isoformat()
