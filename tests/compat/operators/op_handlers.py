"""Creation, update, deletion, resumption; results into the status; the official clients piggybacked."""

import kubernetes
import pykube
from compat_record import record

import kopf


@kopf.on.resume("kopfexamples")
def resume_fn(name, spec, reason, retry, **_):
    record("resume_fn", name, reason=reason, retry=retry, spec=spec)


@kopf.on.create("kopfexamples")
def create_fn(name, namespace, spec, reason, retry, logger, patch, **_):
    record("create_fn", name, reason=reason, retry=retry, spec=spec)
    pods = kubernetes.client.CoreV1Api().list_namespaced_pod(namespace)  # the login's default configuration
    api = pykube.HTTPClient(pykube.KubeConfig.from_env())
    namespaces = [ns.name for ns in pykube.Namespace.objects(api)]
    logger.info(f"Seen {len(pods.items)} pods and the namespace {namespace!r} in {sorted(namespaces)[:1]}.")
    patch.metadata.labels["created"] = "yes"
    return {"message": f"created with {spec.get('field')}"}


@kopf.on.update("kopfexamples")
def update_fn(name, diff, old, new, reason, **_):
    record("update_fn", name, reason=reason, diff=list(diff), old=old.get("spec"), new=new.get("spec"))
    return {"updated": new.get("spec", {}).get("field")}


@kopf.on.delete("kopfexamples")
def delete_fn(name, reason, **_):
    record("delete_fn", name, reason=reason)
