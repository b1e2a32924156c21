"""Correct: a web app's whole stack (Deployment, Service, ConfigMap, a credentials Secret), owned by the app.

The password is drawn once (get-or-create), the app gets a random instance id once, and a ``Ready`` condition
keeps its ``lastTransitionTime`` while it stays true, with the ``observedGeneration`` it was computed for.
"""

import base64
import datetime
import secrets
import uuid

import kubernetes
from kube import apps, config, core, deployment, ensure, service

import kopf


def credentials(name, namespace, owner):
    """The app's Secret, made once with a random password: a password is never changed behind the app's back."""
    try:
        core.read_namespaced_secret(f"{name}-credentials", namespace)
        return
    except kubernetes.client.ApiException as exc:
        if exc.status != 404:
            raise
    password = base64.b64encode(secrets.token_urlsafe(24).encode()).decode()
    secret = {"metadata": {"name": f"{name}-credentials"}, "data": {"password": password}}
    kopf.adopt(secret, owner=owner)
    try:
        core.create_namespaced_secret(namespace, secret)
    except kubernetes.client.ApiException as exc:
        if exc.status != 409:  # made meanwhile: keep that one
            raise


def ready_condition(status, generation):
    previous = next((c for c in status.get("conditions") or [] if c.get("type") == "Ready"), {})
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "type": "Ready",
        "status": "True",
        "reason": "Reconciled",
        "observedGeneration": generation,
        "lastTransitionTime": previous.get("lastTransitionTime", now) if previous.get("status") == "True" else now,
    }


@kopf.on.create("webapps")
@kopf.on.update("webapps")
@kopf.on.resume("webapps")
def reconcile(name, namespace, spec, body, meta, status, patch, **_):
    children = [
        (core.create_namespaced_config_map, core.patch_namespaced_config_map, config(name, spec)),
        (core.create_namespaced_service, core.patch_namespaced_service, service(name, spec)),
        (apps.create_namespaced_deployment, apps.patch_namespaced_deployment, deployment(name, spec)),
    ]
    for create, update, child in children:
        kopf.adopt(child, owner=body)
        ensure(create, update, namespace, child)
    credentials(name, namespace, body)
    if not status.get("instanceId"):
        patch.status["instanceId"] = str(uuid.uuid4())
    patch.status["conditions"] = [ready_condition(status, meta.get("generation"))]
