"""A Wazuh-agent operator as such operators are written: pykube-ng, Jinja templates and a DaemonSet per agent set.

Each WazuhAgent gets the enrollment password in a Secret (drawn once with ``secrets``, kept afterwards: the
agents enrolled with it), the agents' configuration in a ConfigMap and a DaemonSet of agents on every node, all
rendered from Jinja templates by a sibling module and written with pykube-ng from sync handlers (create, or
update what is there: a crash halfway is redone by the resume handler). The DaemonSet's pods carry a digest of
the configuration, so that a new one rolls them. A timer reports how many agents are ready.
"""

import secrets

import pykube
from rendering import config_hash, render, values_of

import kopf

api = None  # the cluster's client, made at the start (from the kubeconfig, or in the cluster from the pod's account)


@kopf.on.startup()
def connect(**_):
    global api
    api = pykube.HTTPClient(pykube.KubeConfig.from_env())


def _apply(kind, manifest):
    """Create the object, or bring the one there up to date (a merge patch of the whole manifest)."""
    obj = kind(api, manifest)
    if obj.exists():
        obj.update()
    else:
        obj.create()
    return obj


@kopf.on.create("wazuhagents")
@kopf.on.update("wazuhagents", field="spec")
@kopf.on.resume("wazuhagents")
def deploy(name, namespace, spec, body, logger, **_):
    values = values_of(name, spec)
    secret_name = f"{name}-authd"
    if pykube.Secret.objects(api, namespace=namespace).get_or_none(name=secret_name) is None:
        secret = render("secret.yaml.j2", name=name, password=secrets.token_urlsafe(24))
        kopf.adopt(secret, owner=body)
        try:
            pykube.Secret(api, secret).create()
        except pykube.exceptions.HTTPError as exc:
            if exc.code != 409:  # made meanwhile (by a run of this handler before a crash): it is kept
                raise
    configmap = render("configmap.yaml.j2", **values)
    kopf.adopt(configmap, owner=body)
    _apply(pykube.ConfigMap, configmap)
    daemonset = render("daemonset.yaml.j2", config_hash=config_hash(configmap), **values)
    kopf.adopt(daemonset, owner=body)
    _apply(pykube.DaemonSet, daemonset)
    logger.info(f"Wazuh agents {name} report to {values['manager']}:{values['port']} as {values['group']}.")
    return {"daemonset": daemonset["metadata"]["name"], "configHash": config_hash(configmap)}


@kopf.timer("wazuhagents", interval=60)
def report(name, namespace, patch, **_):
    """How many agents the DaemonSet has scheduled and how many are ready."""
    daemonset = pykube.DaemonSet.objects(api, namespace=namespace).get_or_none(name=f"{name}-agent")
    if daemonset is None:
        return
    status = daemonset.obj.get("status") or {}
    patch.status["agents"] = {
        "desired": status.get("desiredNumberScheduled", 0),
        "ready": status.get("numberReady", 0),
    }
