"""The apiserver's rules that operators' rendered templates most often break: ports, selectors, volumes, policies.

A template rendered from a spec (a Jinja file, a dict built in a handler) easily repeats a Service port's name,
leaves one port of several unnamed, names two container ports alike, mounts a volume it never declares, forgets
a workload's selector or gives a Job pods that restart ``Always``. The apiserver refuses each with a 422 and
its field errors; an operator that passes against the simulator must not fail on them in a real cluster.

The objects reach these rules defaulted (a port's protocol is ``TCP``, a pod's ``restartPolicy`` is
``Always``), as in the apiserver. A StatefulSet's pod template is not validated as a pod spec there (its
volume claims become volumes only in its pods), so neither is it here.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from kopf_sim.kube.objects import JsonDict, name_problems
from kopf_sim.kube.resources import ResourceType
from kopf_sim.writes.validation import Cause, go_value, invalid, not_supported, required

__all__ = ["causes"]

_SELECTED = {("apps", "Deployment"), ("apps", "ReplicaSet"), ("apps", "StatefulSet"), ("apps", "DaemonSet")}
#: The word of the "empty selector" message (a ReplicaSet's says "deployment" in the apiserver too).
_EMPTY_SELECTOR_WORD = {"Deployment": "deployment", "ReplicaSet": "deployment", "StatefulSet": "statefulset"}
_EMPTY_SELECTOR_WORD["DaemonSet"] = "daemonset"
#: The pod specs validated as such, with their mounts (a StatefulSet's template is not).
_POD_SPEC_PATHS = {
    ("", "Pod"): ("spec",),
    ("apps", "Deployment"): ("spec", "template", "spec"),
    ("apps", "ReplicaSet"): ("spec", "template", "spec"),
    ("apps", "DaemonSet"): ("spec", "template", "spec"),
    ("batch", "Job"): ("spec", "template", "spec"),
}
_ALWAYS_ONLY = ("Always",)
_RUN_TO_COMPLETION = ("OnFailure", "Never")
_CONTAINER_GROUPS = ("initContainers", "containers")
_PORT_NAME_CHARACTERS = re.compile(r"^[-a-z0-9]+$")


def causes(rtype: ResourceType, obj: JsonDict) -> list[Cause]:
    """The reasons to refuse a built-in Service, Pod or workload for its ports, selector, volumes or policy."""
    if rtype.custom:
        return []
    key = (rtype.group, rtype.kind)
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return []
    found: list[Cause] = []
    if key == ("", "Service"):
        found.extend(_service_port_causes(spec))
    if key in _SELECTED:
        found.extend(_selector_causes(rtype.kind, spec))
    path = _POD_SPEC_PATHS.get(key)
    if path is not None:
        pod_spec = _at(obj, path)
        if pod_spec is not None:
            found.extend(_pod_spec_causes(pod_spec, ".".join(path)))
    template_spec = _at(obj, ("spec", "template", "spec"))
    if template_spec is not None and key in _SELECTED | {("batch", "Job")}:
        found.extend(_restart_policy_causes(key, template_spec))
    return found


def _at(obj: JsonDict, path: tuple[str, ...]) -> JsonDict | None:
    value: Any = obj
    for part in path:
        value = value.get(part) if isinstance(value, dict) else None
    return value if isinstance(value, dict) else None


def _maps(items: Any) -> list[JsonDict]:
    return [item for item in items if isinstance(item, dict)] if isinstance(items, list) else []


# --- Services ----------------------------------------------------------------------------------------------


def _service_port_causes(spec: JsonDict) -> Iterator[Cause]:
    """Names (required when there are several ports, unique, DNS labels), then unique node ports and pairs."""
    ports = _maps(spec.get("ports"))
    names: set[str] = set()
    for index, port in enumerate(ports):
        field = f"spec.ports[{index}].name"
        name = port.get("name")
        if not name:
            if len(ports) > 1:
                yield required(field)
            continue
        if not isinstance(name, str):
            continue  # the decoding's to refuse
        for problem in name_problems(name, label=True):
            yield invalid(field, name, problem)
        if name in names:
            yield _duplicate(field, go_value(name))
        names.add(name)
    node_ports: set[tuple[Any, Any]] = set()
    for index, port in enumerate(ports):
        node_port = port.get("nodePort")
        if node_port:
            if (node_port, _protocol(port)) in node_ports:
                yield _duplicate(f"spec.ports[{index}].nodePort", go_value(node_port))
            node_ports.add((node_port, _protocol(port)))
    pairs: set[tuple[Any, Any]] = set()
    for index, port in enumerate(ports):
        pair = (port.get("port"), _protocol(port))
        if pair in pairs:
            yield _duplicate(f"spec.ports[{index}]", _go_service_port(port))
        pairs.add(pair)


def _protocol(port: JsonDict) -> Any:
    return port.get("protocol") or "TCP"


def _go_service_port(port: JsonDict) -> str:
    """The key the apiserver compares (a port and its protocol), printed as Go prints the struct."""
    return (
        f'core.ServicePort{{Name:"", Protocol:{go_value(_protocol(port))}, AppProtocol:(*string)(nil), '
        f'Port:{go_value(port.get("port") or 0)}, TargetPort:intstr.IntOrString{{Type:0, IntVal:0, StrVal:""}}, '
        "NodePort:0}"
    )


def _duplicate(field: str, printed: str) -> Cause:
    return {"reason": "FieldValueDuplicate", "message": f"Duplicate value: {printed}", "field": field}


# --- workloads' selectors and pods' restart policies --------------------------------------------------------


def _selector_causes(kind: str, spec: JsonDict) -> Iterator[Cause]:
    """apps/v1 requires a selector, and a non-empty one; a missing one matches no template's labels."""
    selector = spec.get("selector")
    if selector is None:
        yield required("spec.selector")
        labels = (_at(spec, ("template", "metadata")) or {}).get("labels") or None
        yield invalid("spec.template.metadata.labels", labels, "`selector` does not match template `labels`")
    elif isinstance(selector, dict) and not selector.get("matchLabels") and not selector.get("matchExpressions"):
        word = _EMPTY_SELECTOR_WORD[kind]
        message = f"Invalid value: {_go_selector(selector)}: empty selector is invalid for {word}"
        yield {"reason": "FieldValueInvalid", "message": message, "field": "spec.selector"}


def _go_selector(selector: JsonDict) -> str:
    """An empty label selector as Go prints ``v1.LabelSelector`` in an ``Invalid value``."""
    labels = "map[string]string{}" if "matchLabels" in selector else "map[string]string(nil)"
    expressions = "[]v1.LabelSelectorRequirement" + ("{}" if "matchExpressions" in selector else "(nil)")
    return f"v1.LabelSelector{{MatchLabels:{labels}, MatchExpressions:{expressions}}}"


def _restart_policy_causes(key: tuple[str, str], pod_spec: JsonDict) -> Iterator[Cause]:
    """A Job's pods run to completion; the other workloads' pods restart ``Always``."""
    supported = _RUN_TO_COMPLETION if key == ("batch", "Job") else _ALWAYS_ONLY
    policy = pod_spec.get("restartPolicy")
    if isinstance(policy, str) and policy not in supported:
        yield not_supported("spec.template.spec.restartPolicy", policy, supported)


# --- pod specs: container ports' names, volumes and mounts -------------------------------------------------


def _pod_spec_causes(pod_spec: JsonDict, path: str) -> Iterator[Cause]:
    volumes: set[str] = set()
    for index, volume in enumerate(_maps(pod_spec.get("volumes"))):
        name = volume.get("name")
        if isinstance(name, str) and name:
            if name in volumes:
                yield _duplicate(f"{path}.volumes[{index}].name", go_value(name))
            volumes.add(name)
    for group in _CONTAINER_GROUPS:
        for index, container in enumerate(_maps(pod_spec.get(group))):
            where = f"{path}.{group}[{index}]"
            yield from _container_port_name_causes(container, where)
            for mount_index, mount in enumerate(_maps(container.get("volumeMounts"))):
                name = mount.get("name")
                if isinstance(name, str) and name and name not in volumes:
                    yield {
                        "reason": "FieldValueNotFound",
                        "message": f"Not found: {go_value(name)}",
                        "field": f"{where}.volumeMounts[{mount_index}].name",
                    }


def _container_port_name_causes(container: JsonDict, where: str) -> Iterator[Cause]:
    """A container's port names are IANA service names (at most 15 characters), unique in the container."""
    names: set[str] = set()
    for index, port in enumerate(_maps(container.get("ports"))):
        name = port.get("name")
        if not isinstance(name, str) or not name:
            continue
        field = f"{where}.ports[{index}].name"
        problems = port_name_problems(name)
        for problem in problems:
            yield invalid(field, name, problem)
        if not problems and name in names:
            yield _duplicate(field, go_value(name))
        names.add(name)


def port_name_problems(name: str) -> list[str]:
    """Why a name is not an IANA service name (RFC 6335), in the apiserver's words; empty when it is one."""
    problems = []
    if len(name) > 15:
        problems.append("must be no more than 15 characters")
    if not _PORT_NAME_CHARACTERS.fullmatch(name):
        problems.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if "--" in name:
        problems.append("must not contain consecutive hyphens")
    if not any("a" <= character <= "z" for character in name):
        problems.append("must contain at least one letter (a-z)")
    if name.startswith("-") or name.endswith("-"):
        problems.append("must not begin or end with a hyphen")
    return problems
