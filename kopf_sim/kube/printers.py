"""Computed cells of the built-in kinds' tables, as the apiserver's printers compute them for ``kubectl get``.

Most columns are plain JSON paths; these are the ones that a real server derives from several fields:
a pod's READY ``1/1`` and STATUS (``CrashLoopBackOff``, ``Terminating``, ``Completed``), a Job's
STATUS and DURATION, a Service's PORT(S), a node's STATUS and ROLES, the images of a workload.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Mapping
from typing import Any

from kopf_sim.kube.objects import JsonDict, meta
from kopf_sim.timing.clock import parse_timestamp

Renderer = Callable[[JsonDict, datetime.datetime], Any]
NONE = "<none>"


def _age(now: datetime.datetime, text: str | None) -> str | None:
    from kopf_sim.kube.tables import human_duration

    if not text:
        return None
    try:
        return human_duration((now - parse_timestamp(text)).total_seconds())
    except ValueError:
        return None


def _status(obj: Mapping[str, Any]) -> JsonDict:
    status = obj.get("status")
    return status if isinstance(status, dict) else {}


def _spec(obj: Mapping[str, Any]) -> JsonDict:
    spec = obj.get("spec")
    return spec if isinstance(spec, dict) else {}


# -- Pods ----------------------------------------------------------------------------------------------


def pod_ready(obj: JsonDict, now: datetime.datetime) -> str:
    containers = _spec(obj).get("containers") or []
    ready = sum(1 for c in _status(obj).get("containerStatuses") or [] if c.get("ready"))
    return f"{ready}/{len(containers)}"


def pod_status(obj: JsonDict, now: datetime.datetime) -> str:
    """The STATUS column of ``kubectl get pods``: the init containers' state, else the containers', else the phase."""
    status = _status(obj)
    reason = status.get("reason") or status.get("phase") or "Unknown"
    init_reason = _init_status(status, len(_spec(obj).get("initContainers") or []))
    if init_reason is not None:
        reason = init_reason
    else:
        reason, running = _containers_status(status, reason)
        if reason == "Completed" and running:
            ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])
            reason = "Running" if ready else "NotReady"
    if meta(obj).get("deletionTimestamp"):
        reason = "Unknown" if status.get("reason") == "NodeLost" else "Terminating"
    return str(reason)


def _init_status(status: JsonDict, init_count: int) -> str | None:
    """``Init:…`` for the first init container that has not succeeded, if any."""
    for index, container in enumerate(status.get("initContainerStatuses") or []):
        state = container.get("state") or {}
        terminated, waiting = state.get("terminated"), state.get("waiting")
        if terminated and terminated.get("exitCode") == 0:
            continue
        if terminated:
            return "Init:" + (terminated.get("reason") or f"ExitCode:{terminated.get('exitCode')}")
        if waiting and waiting.get("reason") and waiting.get("reason") != "PodInitializing":
            return "Init:" + str(waiting["reason"])
        return f"Init:{index}/{init_count}"
    return None


def _containers_status(status: JsonDict, reason: Any) -> tuple[Any, bool]:
    """The reason of the first container (in order) that waits or ended, else the given one; whether any runs ready."""
    running = False
    for container in reversed(status.get("containerStatuses") or []):
        state = container.get("state") or {}
        waiting, terminated = state.get("waiting"), state.get("terminated")
        if waiting and waiting.get("reason"):
            reason = waiting["reason"]
        elif terminated and terminated.get("reason"):
            reason = terminated["reason"]
        elif terminated:
            signal = terminated.get("signal")
            reason = f"Signal:{signal}" if signal else f"ExitCode:{terminated.get('exitCode')}"
        elif container.get("ready") and state.get("running"):
            running = True
    return reason, running


def pod_restarts(obj: JsonDict, now: datetime.datetime) -> str:
    total = 0
    last: str | None = None
    for container in _status(obj).get("containerStatuses") or []:
        total += int(container.get("restartCount") or 0)
        finished = ((container.get("lastState") or {}).get("terminated") or {}).get("finishedAt")
        if finished and (last is None or finished > last):
            last = finished
    ago = _age(now, last) if total else None
    return f"{total} ({ago} ago)" if ago else str(total)


def pod_ip(obj: JsonDict, now: datetime.datetime) -> str:
    return str(_status(obj).get("podIP") or NONE)


def pod_node(obj: JsonDict, now: datetime.datetime) -> str:
    return str(_spec(obj).get("nodeName") or NONE)


def pod_nominated(obj: JsonDict, now: datetime.datetime) -> str:
    return str(_status(obj).get("nominatedNodeName") or NONE)


def pod_gates(obj: JsonDict, now: datetime.datetime) -> str:
    gates = _spec(obj).get("readinessGates") or []
    if not gates:
        return NONE
    conditions = {c.get("type"): c.get("status") for c in _status(obj).get("conditions") or []}
    passed = sum(1 for g in gates if conditions.get(g.get("conditionType")) == "True")
    return f"{passed}/{len(gates)}"


# -- Workloads -----------------------------------------------------------------------------------------


def _template_containers(obj: JsonDict) -> list[JsonDict]:
    spec = _spec(obj)
    if "jobTemplate" in spec:
        spec = (spec.get("jobTemplate") or {}).get("spec") or {}
    template = spec.get("template") or {}
    return list((template.get("spec") or {}).get("containers") or [])


def containers(obj: JsonDict, now: datetime.datetime) -> str:
    return ",".join(str(c.get("name", "")) for c in _template_containers(obj)) or NONE


def images(obj: JsonDict, now: datetime.datetime) -> str:
    return ",".join(str(c.get("image", "")) for c in _template_containers(obj)) or NONE


def selector(obj: JsonDict, now: datetime.datetime) -> str:
    from kopf_sim.kube.selectors import LabelSelector

    spec = _spec(obj).get("selector")
    if isinstance(spec, dict):
        if "matchLabels" not in spec and "matchExpressions" not in spec:  # a Service's plain map
            return ",".join(f"{k}={v}" for k, v in sorted(spec.items())) or NONE
        try:
            return str(LabelSelector.from_spec(spec)) or NONE
        except Exception:
            return NONE
    return NONE


def node_selector(obj: JsonDict, now: datetime.datetime) -> str:
    template = _spec(obj).get("template") or {}
    labels = (template.get("spec") or {}).get("nodeSelector") or {}
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items())) or NONE


def _job_condition(obj: JsonDict, type_: str) -> bool:
    return any(c.get("type") == type_ and c.get("status") == "True" for c in _status(obj).get("conditions") or [])


def job_status(obj: JsonDict, now: datetime.datetime) -> str:
    for type_ in ("Failed", "Complete", "Suspended", "FailureTarget", "SuccessCriteriaMet"):
        if _job_condition(obj, type_):
            return type_
    if meta(obj).get("deletionTimestamp"):
        return "Terminating"
    return "Running"


def job_completions(obj: JsonDict, now: datetime.datetime) -> str:
    spec, status = _spec(obj), _status(obj)
    succeeded = int(status.get("succeeded") or 0)
    completions = spec.get("completions")
    if completions is not None:
        return f"{succeeded}/{completions}"
    parallelism = spec.get("parallelism", 1)
    return f"{succeeded}/1 of {parallelism}" if parallelism and parallelism > 1 else f"{succeeded}/1"


def job_duration(obj: JsonDict, now: datetime.datetime) -> str:
    from kopf_sim.kube.tables import human_duration

    status = _status(obj)
    started = status.get("startTime")
    if not started:
        return ""
    try:
        end = parse_timestamp(status["completionTime"]) if status.get("completionTime") else now
        return human_duration((end - parse_timestamp(started)).total_seconds())
    except ValueError:
        return ""


def cronjob_last_schedule(obj: JsonDict, now: datetime.datetime) -> str:
    return _age(now, _status(obj).get("lastScheduleTime")) or NONE


def cronjob_active(obj: JsonDict, now: datetime.datetime) -> int:
    return len(_status(obj).get("active") or [])


def cronjob_timezone(obj: JsonDict, now: datetime.datetime) -> str:
    return str(_spec(obj).get("timeZone") or NONE)


def cronjob_suspend(obj: JsonDict, now: datetime.datetime) -> str:
    return "True" if _spec(obj).get("suspend") else "False"


# -- Services & endpoints ------------------------------------------------------------------------------


def service_external_ip(obj: JsonDict, now: datetime.datetime) -> str:
    spec, status = _spec(obj), _status(obj)
    kind = spec.get("type", "ClusterIP")
    if kind == "ExternalName":
        return str(spec.get("externalName") or NONE)
    ips = [i.get("ip") or i.get("hostname") for i in (status.get("loadBalancer") or {}).get("ingress") or []]
    ips = [ip for ip in ips if ip] + list(spec.get("externalIPs") or [])
    if ips:
        return ",".join(str(ip) for ip in ips)
    return "<pending>" if kind == "LoadBalancer" else NONE


def service_ports(obj: JsonDict, now: datetime.datetime) -> str:
    parts = []
    for port in _spec(obj).get("ports") or []:
        text = f"{port.get('port')}"
        if port.get("nodePort"):
            text += f":{port['nodePort']}"
        parts.append(f"{text}/{port.get('protocol', 'TCP')}")
    return ",".join(parts) or NONE


def _shorten(addresses: list[str]) -> str:
    if not addresses:
        return NONE
    shown = ",".join(addresses[:3])
    return shown + (f" + {len(addresses) - 3} more..." if len(addresses) > 3 else "")


def endpoints_list(obj: JsonDict, now: datetime.datetime) -> str:
    addresses = []
    for subset in obj.get("subsets") or []:
        ports = [p.get("port") for p in subset.get("ports") or []] or [None]
        for address in subset.get("addresses") or []:
            for port in ports:
                addresses.append(f"{address.get('ip')}:{port}" if port is not None else str(address.get("ip")))
    return _shorten(addresses)


def slice_ports(obj: JsonDict, now: datetime.datetime) -> str:
    ports = [str(p.get("port")) for p in obj.get("ports") or [] if p.get("port") is not None]
    return ",".join(ports) or NONE


def slice_endpoints(obj: JsonDict, now: datetime.datetime) -> str:
    return _shorten([str(a) for e in obj.get("endpoints") or [] for a in e.get("addresses") or []])


# -- Nodes & storage -----------------------------------------------------------------------------------


def node_status(obj: JsonDict, now: datetime.datetime) -> str:
    ready = next((c for c in _status(obj).get("conditions") or [] if c.get("type") == "Ready"), None)
    text = "Ready" if ready and ready.get("status") == "True" else "NotReady" if ready else "Unknown"
    if _spec(obj).get("unschedulable"):
        text += ",SchedulingDisabled"
    return text


def node_roles(obj: JsonDict, now: datetime.datetime) -> str:
    prefix = "node-role.kubernetes.io/"
    roles = sorted(k[len(prefix) :] for k in (meta(obj).get("labels") or {}) if k.startswith(prefix))
    return ",".join(r for r in roles if r) or NONE


def _node_address(obj: JsonDict, kind: str) -> str:
    for address in _status(obj).get("addresses") or []:
        if address.get("type") == kind:
            return str(address.get("address"))
    return NONE


def node_internal_ip(obj: JsonDict, now: datetime.datetime) -> str:
    return _node_address(obj, "InternalIP")


def node_external_ip(obj: JsonDict, now: datetime.datetime) -> str:
    return _node_address(obj, "ExternalIP")


def _node_info(obj: JsonDict, field: str) -> str:
    return str((_status(obj).get("nodeInfo") or {}).get(field) or "<unknown>")


def node_version(obj: JsonDict, now: datetime.datetime) -> str:
    return _node_info(obj, "kubeletVersion")


_SHORT_MODES = {"ReadWriteOnce": "RWO", "ReadOnlyMany": "ROX", "ReadWriteMany": "RWX", "ReadWriteOncePod": "RWOP"}


def claim_access_modes(obj: JsonDict, now: datetime.datetime) -> str:
    return ",".join(_SHORT_MODES.get(m, m) for m in _status(obj).get("accessModes") or [])


def volume_access_modes(obj: JsonDict, now: datetime.datetime) -> str:
    return ",".join(_SHORT_MODES.get(m, m) for m in _spec(obj).get("accessModes") or [])


def claim_capacity(obj: JsonDict, now: datetime.datetime) -> str:
    return str((_status(obj).get("capacity") or {}).get("storage") or "")


def volume_capacity(obj: JsonDict, now: datetime.datetime) -> str:
    return str((_spec(obj).get("capacity") or {}).get("storage") or "")


def volume_claim(obj: JsonDict, now: datetime.datetime) -> str:
    ref = _spec(obj).get("claimRef") or {}
    return f"{ref.get('namespace')}/{ref.get('name')}" if ref.get("name") else ""


def class_name(obj: JsonDict, now: datetime.datetime) -> str:
    value = _spec(obj).get("storageClassName")
    return str(value) if value else NONE


def revision_controller(obj: JsonDict, now: datetime.datetime) -> str:
    for ref in meta(obj).get("ownerReferences") or []:
        if ref.get("controller"):
            group = str(ref.get("apiVersion", "")).rpartition("/")[0]
            kind = str(ref.get("kind", "")).lower()
            return f"{kind}.{group}/{ref.get('name')}" if group else f"{kind}/{ref.get('name')}"
    return NONE
