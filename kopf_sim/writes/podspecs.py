"""The apiserver's defaults of pod specs (in pods and in the pod templates of workloads), and of pods' admission.

Clients read them back: ``kubectl describe`` prints a port's protocol, operators compare a stored
template with the one they want (and must ignore what the apiserver added), and a Deployment's
``pod-template-hash`` is computed from the defaulted template. Defaulting is idempotent, so a
re-applied manifest changes nothing and starts no rollout.

What admission adds in a default cluster (a service account, the default tolerations of unready and
unreachable nodes, a priority, service links) goes into pods only, on creation only, as the admission
plugins do; templates never get it.
"""

from __future__ import annotations

from typing import Any

from kopf_sim.kube.objects import JsonDict
from kopf_sim.kube.quantities import parse_quantity

__all__ = ["admit_pod", "default_pod_requests", "default_pod_spec", "image_pull_policy", "qos_class"]

_CONTAINER_GROUPS = ("initContainers", "containers", "ephemeralContainers")
_PROBES = ("livenessProbe", "readinessProbe", "startupProbe")
_DEFAULT_MODE = 420  # 0644
_UNREACHABLE_TAINTS = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")
_DEFAULT_TOLERATION_SECONDS = 300
_SYSTEM_PRIORITIES = {"system-node-critical": 2_000_001_000, "system-cluster-critical": 2_000_000_000}


def image_pull_policy(image: Any) -> str:
    """``Always`` for the ``latest`` tag or no tag at all (and no digest), else ``IfNotPresent``."""
    if not isinstance(image, str) or "@" in image:
        return "IfNotPresent"
    name = image.rpartition("/")[2]
    tag = name.partition(":")[2] if ":" in name else ""
    return "Always" if tag in ("", "latest") else "IfNotPresent"


def _maps(items: Any) -> list[JsonDict]:
    """The items of a list that are maps (a bad list is the validation's to refuse, not the defaults')."""
    return [item for item in items if isinstance(item, dict)] if isinstance(items, list) else []


def _map(value: Any) -> JsonDict | None:
    return value if isinstance(value, dict) else None


def _http_get(handler: JsonDict | None) -> None:
    if handler is not None and (get := _map(handler.get("httpGet"))) is not None:
        get.setdefault("scheme", "HTTP")


def _probe(probe: JsonDict | None) -> None:
    if probe is None:
        return
    probe.setdefault("timeoutSeconds", 1)
    probe.setdefault("periodSeconds", 10)
    probe.setdefault("successThreshold", 1)
    probe.setdefault("failureThreshold", 3)
    _http_get(probe)


def _env(container: JsonDict) -> None:
    for variable in _maps(container.get("env")):
        source = _map(variable.get("valueFrom"))
        if source is not None and (field := _map(source.get("fieldRef"))) is not None:
            field.setdefault("apiVersion", "v1")


def _container(container: JsonDict) -> None:
    container.setdefault("terminationMessagePath", "/dev/termination-log")
    container.setdefault("terminationMessagePolicy", "File")
    container.setdefault("imagePullPolicy", image_pull_policy(container.get("image")))
    container.setdefault("resources", {})
    for port in _maps(container.get("ports")):
        port.setdefault("protocol", "TCP")
    for name in _PROBES:
        _probe(_map(container.get(name)))
    lifecycle = _map(container.get("lifecycle"))
    if lifecycle is not None:
        for hook in ("postStart", "preStop"):
            _http_get(_map(lifecycle.get(hook)))
    _env(container)


def _volume(volume: JsonDict) -> None:
    for source in ("configMap", "secret", "projected", "downwardAPI"):
        if (found := _map(volume.get(source))) is not None:
            found.setdefault("defaultMode", _DEFAULT_MODE)
    if (path := _map(volume.get("hostPath"))) is not None:
        path.setdefault("type", "")


def default_pod_spec(spec: Any) -> None:
    """Fill in the v1 defaults of a PodSpec, in place (a pod's or a template's)."""
    if not isinstance(spec, dict):
        return
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("securityContext", {})
    for group in _CONTAINER_GROUPS:
        for container in _maps(spec.get(group)):
            _container(container)
    for volume in _maps(spec.get("volumes")):
        _volume(volume)


def admit_pod(spec: Any) -> None:
    """What the default admission plugins add to a new pod: service account, tolerations, priority, links."""
    if not isinstance(spec, dict):
        return
    account = spec.get("serviceAccountName") or spec.get("serviceAccount") or "default"
    spec["serviceAccountName"] = account
    spec["serviceAccount"] = account
    spec.setdefault("enableServiceLinks", True)
    spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
    if "priority" not in spec:
        priority = _SYSTEM_PRIORITIES.get(spec.get("priorityClassName") or "", 0)
        spec["priority"] = priority
    tolerations = spec.get("tolerations")
    if tolerations is None:
        tolerations = spec["tolerations"] = []
    if isinstance(tolerations, list):
        for taint in _UNREACHABLE_TAINTS:
            if not any(_tolerates_no_execute(t, taint) for t in _maps(tolerations)):
                tolerations.append(
                    {
                        "key": taint,
                        "operator": "Exists",
                        "effect": "NoExecute",
                        "tolerationSeconds": _DEFAULT_TOLERATION_SECONDS,
                    }
                )


def _tolerates_no_execute(toleration: JsonDict, taint: str) -> bool:
    """Whether a toleration already covers a NoExecute taint of this key (then none is added)."""
    if toleration.get("effect") not in (None, "", "NoExecute"):
        return False
    key = toleration.get("key") or ""
    return key == taint or (not key and toleration.get("operator") == "Exists")


def default_pod_requests(spec: Any) -> None:
    """A pod's containers request what they limit, unless they say otherwise (pods only, not templates)."""
    if not isinstance(spec, dict):
        return
    for group in ("initContainers", "containers"):
        for container in _maps(spec.get(group)):
            resources = _map(container.get("resources"))
            limits = _map(resources.get("limits")) if resources is not None else None
            if resources is not None and limits:
                requests = resources.setdefault("requests", {})
                if isinstance(requests, dict):
                    for name, value in limits.items():
                        requests.setdefault(name, value)


_QOS_RESOURCES = ("cpu", "memory")


def qos_class(spec: Any) -> str:
    """A new pod's quality of service: Guaranteed, Burstable or BestEffort, by its cpu & memory (non-zero)."""
    requests: dict[str, Any] = {}
    limits: dict[str, Any] = {}
    limited_everywhere = True
    containers = [*_maps((spec or {}).get("initContainers")), *_maps((spec or {}).get("containers"))]
    for container in containers:
        resources = _map(container.get("resources")) or {}
        for given, total in ((resources.get("requests"), requests), (resources.get("limits"), limits)):
            for name in _QOS_RESOURCES:
                amount = parse_quantity((_map(given) or {}).get(name)) or 0
                if amount > 0:
                    total[name] = total.get(name, 0) + amount
        container_limits = _map(resources.get("limits")) or {}
        if not all((parse_quantity(container_limits.get(name)) or 0) > 0 for name in _QOS_RESOURCES):
            limited_everywhere = False
    if not requests and not limits:
        return "BestEffort"
    if limited_everywhere and requests == limits:
        return "Guaranteed"
    return "Burstable"
