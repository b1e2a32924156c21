"""Correct: a site's Deployment, and a daemon that polls its rollout (at once, then every 10 s) and reports it in
the site's status as ``Available``, ``Progressing`` and ``Idle`` (scaled to zero) conditions, with a
``lastTransitionTime`` kept while a status holds; written with the official client, and only when they change."""

import kubernetes
from sitekit import apps, condition, deployment, digest, ensure, read_deployment, report_conditions

import kopf


@kopf.on.create("sites")
@kopf.on.update("sites", field="spec")
@kopf.on.resume("sites")
def deploy(name, namespace, spec, body, **_):
    child = deployment(name, spec, digest({}))
    kopf.adopt(child, owner=body)
    ensure(apps.create_namespaced_deployment, apps.patch_namespaced_deployment, namespace, child)


def rollout_conditions(found, wanted, previous):
    ready = (found.status.ready_replicas or 0) if found else 0
    updated = (found.status.updated_replicas or 0) if found else 0
    rolling = not found or updated < wanted or ready < wanted
    return [
        condition(
            "Available",
            "True" if found and ready >= wanted else "False",
            f"{ready}Of{wanted}Ready",
            previous.get("Available", {}),
        ),
        condition(
            "Progressing",
            "True" if rolling else "False",
            "RollingOut" if rolling else "Done",
            previous.get("Progressing", {}),
        ),
        condition(
            "Idle",
            "True" if wanted == 0 else "False",
            "ScaledToZero" if wanted == 0 else "Serving",
            previous.get("Idle", {}),
        ),
    ]


@kopf.daemon("sites")
def watch_rollout(name, namespace, spec, status, stopped, logger, **_):
    while not stopped:
        previous = {c["type"]: c for c in status.get("conditions") or []}
        try:
            conditions = rollout_conditions(read_deployment(name, namespace), spec.get("replicas", 1), previous)
            if conditions != list(previous.values()):
                report_conditions(name, namespace, conditions)
        except kubernetes.client.ApiException as exc:
            logger.warning(f"Cannot report the rollout ({exc.status}): again in 10 s")
        stopped.wait(10)
