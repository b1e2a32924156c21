"""The apiserver's defaults of built-in specs (workloads, their pod templates, pods, services), on every write.

Clients read them back: ``kubectl rollout status`` refuses a StatefulSet or DaemonSet whose
``updateStrategy`` is not (defaulted to) RollingUpdate, and operators read ``spec.replicas`` or
``spec.strategy`` of objects created without them. The pod specs' defaults are in
:mod:`kopf_sim.writes.podspecs`; what is allocated (cluster IPs) or admitted (a pod's service
account) is done on creation only, elsewhere.
"""

from __future__ import annotations

from typing import Any

from kopf_sim.kube.objects import JsonDict
from kopf_sim.kube.resources import ResourceType, StorageKey
from kopf_sim.writes import webhookconfigs
from kopf_sim.writes.podspecs import default_pod_requests, default_pod_spec

__all__ = ["apply_defaults", "fill_status"]


def _spec(obj: JsonDict) -> JsonDict | None:
    spec = obj.get("spec")
    return spec if isinstance(spec, dict) else None


def _set(mapping: JsonDict, key: str, value: Any) -> JsonDict:
    """The nested mapping at ``key`` (created if absent; left alone if it is not a mapping)."""
    current = mapping.setdefault(key, value)
    return current if isinstance(current, dict) else {}


def _deployment(spec: JsonDict) -> None:
    spec.setdefault("replicas", 1)
    strategy = _set(spec, "strategy", {})
    strategy.setdefault("type", "RollingUpdate")
    if strategy.get("type") == "RollingUpdate":
        rolling = _set(strategy, "rollingUpdate", {})
        rolling.setdefault("maxSurge", "25%")
        rolling.setdefault("maxUnavailable", "25%")
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("progressDeadlineSeconds", 600)


def _replica_set(spec: JsonDict) -> None:
    spec.setdefault("replicas", 1)


def _stateful_set(spec: JsonDict) -> None:
    spec.setdefault("replicas", 1)
    spec.setdefault("podManagementPolicy", "OrderedReady")
    strategy = _set(spec, "updateStrategy", {})
    strategy.setdefault("type", "RollingUpdate")
    if strategy.get("type") == "RollingUpdate":
        _set(strategy, "rollingUpdate", {}).setdefault("partition", 0)
    spec.setdefault("revisionHistoryLimit", 10)
    retention = _set(spec, "persistentVolumeClaimRetentionPolicy", {})
    retention.setdefault("whenDeleted", "Retain")
    retention.setdefault("whenScaled", "Retain")


def _daemon_set(spec: JsonDict) -> None:
    strategy = _set(spec, "updateStrategy", {})
    strategy.setdefault("type", "RollingUpdate")
    if strategy.get("type") == "RollingUpdate":
        rolling = _set(strategy, "rollingUpdate", {})
        rolling.setdefault("maxUnavailable", 1)
        rolling.setdefault("maxSurge", 0)
    spec.setdefault("revisionHistoryLimit", 10)


def _job(spec: JsonDict) -> None:
    if "completions" not in spec and "parallelism" not in spec:
        spec["completions"] = 1
    spec.setdefault("parallelism", 1)
    spec.setdefault("backoffLimit", 6)
    spec.setdefault("completionMode", "NonIndexed")
    spec.setdefault("suspend", False)
    spec.setdefault("podReplacementPolicy", "TerminatingOrFailed")


def _cron_job(spec: JsonDict) -> None:
    spec.setdefault("concurrencyPolicy", "Allow")
    spec.setdefault("suspend", False)
    spec.setdefault("successfulJobsHistoryLimit", 3)
    spec.setdefault("failedJobsHistoryLimit", 1)


def _service(spec: JsonDict) -> None:
    spec.setdefault("type", "ClusterIP")
    spec.setdefault("sessionAffinity", "None")
    if spec["type"] != "ExternalName":
        spec.setdefault("internalTrafficPolicy", "Cluster")
    if spec["type"] in ("NodePort", "LoadBalancer"):
        spec.setdefault("externalTrafficPolicy", "Cluster")
    if spec["type"] == "LoadBalancer":
        spec.setdefault("allocateLoadBalancerNodePorts", True)
    for port in spec.get("ports") or ():
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")
            port.setdefault("targetPort", port.get("port"))


_DEFAULTERS = {
    ("apps", "deployments"): _deployment,
    ("apps", "replicasets"): _replica_set,
    ("apps", "statefulsets"): _stateful_set,
    ("apps", "daemonsets"): _daemon_set,
    ("batch", "jobs"): _job,
    ("batch", "cronjobs"): _cron_job,
    ("", "services"): _service,
    ("", "pods"): default_pod_requests,
}

# Where each kind keeps a pod spec, from the object's root.
_POD_SPECS: dict[StorageKey, tuple[str, ...]] = {
    ("", "pods"): ("spec",),
    ("", "podtemplates"): ("template", "spec"),
    ("", "replicationcontrollers"): ("spec", "template", "spec"),
    ("apps", "deployments"): ("spec", "template", "spec"),
    ("apps", "replicasets"): ("spec", "template", "spec"),
    ("apps", "statefulsets"): ("spec", "template", "spec"),
    ("apps", "daemonsets"): ("spec", "template", "spec"),
    ("batch", "jobs"): ("spec", "template", "spec"),
    ("batch", "cronjobs"): ("spec", "jobTemplate", "spec", "template", "spec"),
}


def _at(obj: JsonDict, path: tuple[str, ...]) -> Any:
    value: Any = obj
    for field in path:
        value = value.get(field) if isinstance(value, dict) else None
    return value


#: What a built-in's status always has: the fields that Go writes even when they are zero (no ``omitempty``),
#: and the defaulted phases. Clients' models require some of them, e.g. the official client's
#: ``V1StatefulSetStatus.replicas``; the status itself is a struct, written even when empty.
_STATUS_FIELDS: dict[StorageKey, JsonDict] = {
    ("", "namespaces"): {"phase": "Active"},
    ("", "pods"): {},
    ("", "services"): {"loadBalancer": {}},
    ("", "persistentvolumeclaims"): {"phase": "Pending"},
    ("", "persistentvolumes"): {"phase": "Pending"},
    ("", "replicationcontrollers"): {"replicas": 0},
    ("apps", "deployments"): {},
    ("apps", "replicasets"): {"replicas": 0},
    ("apps", "statefulsets"): {"replicas": 0, "availableReplicas": 0},
    ("apps", "daemonsets"): {
        "currentNumberScheduled": 0,
        "numberMisscheduled": 0,
        "desiredNumberScheduled": 0,
        "numberReady": 0,
    },
    ("batch", "jobs"): {},
    ("batch", "cronjobs"): {},
}


def fill_status(rtype: ResourceType, obj: JsonDict) -> None:
    """Give a built-in's status the fields it always has (zeros, default phases), in place; nulls are zeros too."""
    fields = _STATUS_FIELDS.get(rtype.storage_key) if not rtype.custom else None
    if fields is None:
        return
    status = obj.get("status")
    if not isinstance(status, dict):
        status = obj["status"] = {}
    for field, zero in fields.items():
        if status.get(field) is None:
            status[field] = zero.copy() if isinstance(zero, dict) else zero


def apply_defaults(rtype: ResourceType, obj: JsonDict) -> None:
    """Fill in the defaults of a built-in's spec, its pod template and its status, in place (the caller's copy)."""
    if rtype.custom:
        return
    if rtype.storage_key in webhookconfigs.CONFIGURATIONS:
        webhookconfigs.apply_defaults(rtype, obj)
    fill_status(rtype, obj)
    defaulter = _DEFAULTERS.get(rtype.storage_key)
    if defaulter is not None and (spec := _spec(obj)) is not None:
        defaulter(spec)
    path = _POD_SPECS.get(rtype.storage_key)
    if path is not None:
        default_pod_spec(_at(obj, path))
