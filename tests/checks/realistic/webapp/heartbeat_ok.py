"""Correct, with time: a Deployment per web app, and a timer every 30 s that reports its available replicas
with the moment of the check (``status.lastReconciled``)."""

import datetime

import kubernetes
from kube import apps, deployment, ensure

import kopf


@kopf.on.create("webapps")
@kopf.on.update("webapps", field="spec")
@kopf.on.resume("webapps")
def deploy(name, namespace, spec, body, **_):
    child = deployment(name, spec)
    kopf.adopt(child, owner=body)
    ensure(apps.create_namespaced_deployment, apps.patch_namespaced_deployment, namespace, child)


@kopf.timer("webapps", interval=30)
def heartbeat(name, namespace, patch, **_):
    try:
        found = apps.read_namespaced_deployment(name, namespace)
    except kubernetes.client.ApiException as exc:
        if exc.status == 404:
            return  # not made yet: the next tick will see it
        raise
    patch.status["availableReplicas"] = found.status.available_replicas or 0
    patch.status["lastReconciled"] = datetime.datetime.utcnow().isoformat() + "Z"
