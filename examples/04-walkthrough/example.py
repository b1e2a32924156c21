"""The documentation's walkthrough operator: EphemeralVolumeClaims, claims that go away with their pods.

An EphemeralVolumeClaim (EVC) gets a PersistentVolumeClaim (PVC) of its name and size at once, owned
by it (so deleted with it); later changes of its size and labels go to the PVC. The pods that use it
are those with all the labels of its ``spec.selector`` (or, without a selector, those that mount
the PVC). Once used, and when all those pods are gone or finished for ``gracePeriod`` seconds, the
EVC is deleted, and with it the PVC. An EVC that no pod used within ``expiry`` seconds goes too;
none goes within ``safeTime`` seconds of its creation; the claims are checked every ``EVC_INTERVAL``
seconds (an environment variable; 10 by default). The API calls go through the official client
(``kubernetes``), as in the walkthrough.
"""

import datetime
import os

import kubernetes
import yaml

import kopf

GROUP, VERSION, PLURAL = "kopf.dev", "v1", "ephemeralvolumeclaims"
TEMPLATE = os.path.join(os.path.dirname(__file__), "pvc.yaml")
FINISHED = ("Succeeded", "Failed")
INTERVAL = float(os.environ.get("EVC_INTERVAL", "10"))


@kopf.on.create(PLURAL)
def create_fn(spec, name, namespace, logger, **_):
    size = spec.get("size")
    if not size:
        raise kopf.PermanentError(f"Size must be set. Got {size!r}.")
    with open(TEMPLATE, encoding="utf-8") as f:
        data = yaml.safe_load(f.read().format(name=name, size=size))
    kopf.adopt(data)  # the owner reference (cascaded deletion), the namespace, the labels
    obj = kubernetes.client.CoreV1Api().create_namespaced_persistent_volume_claim(namespace=namespace, body=data)
    logger.info(f"PVC child is created: {obj.metadata.name}")
    return {"pvc-name": obj.metadata.name}


@kopf.on.update(PLURAL, field="spec.size")
def update_fn(spec, status, namespace, logger, **_):
    size = spec.get("size")
    if not size:
        raise kopf.PermanentError(f"Size must be set. Got {size!r}.")
    pvc_name = status["create_fn"]["pvc-name"]
    pvc_patch = {"spec": {"resources": {"requests": {"storage": size}}}}
    kubernetes.client.CoreV1Api().patch_namespaced_persistent_volume_claim(
        namespace=namespace, name=pvc_name, body=pvc_patch
    )
    logger.info(f"PVC child is resized to {size}.")


@kopf.on.field(PLURAL, field="metadata.labels")
def relabel(diff, status, namespace, **_):
    labels_patch = {}  # a removed label is None here: removed from the PVC too
    for _op, field, old, new in diff:
        if field:  # one label added, changed or removed
            labels_patch[field[0]] = new
        else:  # the first labels, or the last ones gone
            labels_patch.update({key: None for key in old or {}})
            labels_patch.update(new or {})
    pvc_name = status["create_fn"]["pvc-name"]
    kubernetes.client.CoreV1Api().patch_namespaced_persistent_volume_claim(
        namespace=namespace, name=pvc_name, body={"metadata": {"labels": labels_patch}}
    )


@kopf.index("pods")
def pods_by_namespace(namespace, name, labels, spec, status, **_):
    claims = [
        v["persistentVolumeClaim"]["claimName"] for v in spec.get("volumes") or [] if v.get("persistentVolumeClaim")
    ]
    return {namespace: {"name": name, "labels": dict(labels), "phase": status.get("phase"), "claims": claims}}


def _users(spec, pvc_name, pods):
    selector = spec.get("selector") or {}
    if selector:
        return [p for p in pods if all(p["labels"].get(k) == v for k, v in selector.items())]
    return [p for p in pods if pvc_name in p["claims"]]


def _seconds_since(text, now):
    return (now - datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))).total_seconds()


@kopf.timer(PLURAL, interval=INTERVAL)
def expire(spec, status, meta, name, namespace, patch, logger, pods_by_namespace, **_):
    pvc_name = (status.get("create_fn") or {}).get("pvc-name", name)
    users = _users(spec, pvc_name, pods_by_namespace.get(namespace, []))
    active = [p["name"] for p in users if p["phase"] not in FINISHED]
    usage = status.get("usage") or {}
    now = datetime.datetime.now(datetime.UTC)
    if active:
        if not usage.get("used") or usage.get("goneSince"):
            patch.status["usage"] = {"used": True, "goneSince": None, "pods": sorted(active)}
        return
    age = _seconds_since(meta["creationTimestamp"], now)
    if usage.get("used"):
        if not usage.get("goneSince"):
            patch.status["usage"] = {"used": True, "goneSince": now.isoformat(), "pods": []}
            return
        due = _seconds_since(usage["goneSince"], now) >= spec.get("gracePeriod", 60)
        reason = "its pods are gone"
    else:
        due = age >= spec.get("expiry", 3600)
        reason = "no pod used it in time"
    if due and age >= spec.get("safeTime", 60):
        logger.info(f"Deleting the claim: {reason}.")
        kubernetes.client.CustomObjectsApi().delete_namespaced_custom_object(
            group=GROUP, version=VERSION, namespace=namespace, plural=PLURAL, name=name
        )
