"""The apiserver's validation of objects that decoded well: its 422 ``Invalid`` field causes, in its words.

Metadata is validated for every kind (labels, annotations, finalizers, owner references); built-in
kinds have their own rules on top (config keys, replicas, ports, containers, leases, events); what an
update may not change is in :mod:`kopf_sim.writes.immutability`. Custom resources are validated against
their CRD's schema elsewhere (:mod:`kopf_sim.writes.schemas`). Values are already of the right types
here (:mod:`kopf_sim.writes.typecheck`).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

from kopf_sim.kube import objects
from kopf_sim.kube.objects import JsonDict
from kopf_sim.kube.resources import ResourceType
from kopf_sim.kube.selectors import LabelSelector

Cause = dict[str, str]

ANNOTATIONS_SIZE_LIMIT = 262_144
STANDARD_FINALIZERS = frozenset({"kubernetes", "orphan", "foregroundDeletion"})
_CONFIG_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")
_CONFIG_KEY_MESSAGE = (
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.' "
    "(e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is "
    "'[-._a-zA-Z0-9]+')"
)
_IANA_SVC_NAME = re.compile(r"^[-a-z0-9]*[a-z][-a-z0-9]*$")
_PORT_RANGE = "must be between 1 and 65535, inclusive"
_PROTOCOLS = ("SCTP", "TCP", "UDP")
_WORKLOADS = frozenset({("apps", "Deployment"), ("apps", "ReplicaSet"), ("apps", "StatefulSet")})
_TEMPLATED = frozenset(
    {("apps", "Deployment"), ("apps", "ReplicaSet"), ("apps", "StatefulSet"), ("apps", "DaemonSet"), ("batch", "Job")}
)
# The groups whose kinds validate their metadata with the core rules (not apiextensions, webhooks, CRs).
_CORE_VALIDATED = frozenset({"", "apps", "batch", "coordination.k8s.io", "events.k8s.io", "rbac.authorization.k8s.io"})


@functools.lru_cache(maxsize=4096)
def qualified_name_problems(key: str) -> tuple[str, ...]:
    """:func:`kopf_sim.kube.objects.qualified_name_problems`, remembered: the same keys come again and again."""
    return tuple(objects.qualified_name_problems(key))


@functools.lru_cache(maxsize=4096)
def label_value_problems(value: str) -> tuple[str, ...]:
    return tuple(objects.label_value_problems(value))


def go_value(value: Any) -> str:
    """A value as the apiserver prints it in ``Invalid value: ...``: quoted strings, bare numbers."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, dict) and all(isinstance(v, str) for v in value.values()):
        inner = ", ".join(f"{json.dumps(k)}:{json.dumps(v)}" for k, v in sorted(value.items()))
        return f"map[string]string{{{inner}}}"
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def invalid(field: str, value: Any, detail: str) -> Cause:
    return {"reason": "FieldValueInvalid", "message": f"Invalid value: {go_value(value)}: {detail}", "field": field}


def required(field: str, detail: str = "") -> Cause:
    return {
        "reason": "FieldValueRequired",
        "message": f"Required value: {detail}" if detail else "Required value",
        "field": field,
    }


def forbidden(field: str, detail: str) -> Cause:
    return {"reason": "FieldValueForbidden", "message": f"Forbidden: {detail}", "field": field}


def not_supported(field: str, value: Any, supported: tuple[str, ...]) -> Cause:
    listed = ", ".join(json.dumps(s) for s in supported)
    return {
        "reason": "FieldValueNotSupported",
        "message": f"Unsupported value: {go_value(value)}: supported values: {listed}",
        "field": field,
    }


def causes(rtype: ResourceType, obj: JsonDict) -> list[Cause]:
    """All the reasons to refuse the object as it is (whatever it was before); empty if it is valid."""
    found = metadata_causes(rtype, obj.get("metadata") or {})
    if rtype.custom:
        return found
    key = (rtype.group, rtype.kind)
    config_fields = _CONFIGS.get(key)
    if config_fields is not None:
        found.extend(_config_key_causes(obj, config_fields))
    elif key in _RULED:
        found.extend(_kind_causes(rtype, obj))
    return found


# --- metadata --------------------------------------------------------------------------------------------


def metadata_causes(rtype: ResourceType, metadata: JsonDict) -> list[Cause]:
    labels = metadata.get("labels")
    found: list[Cause] = label_causes(labels, "metadata.labels") if labels else []
    annotations = metadata.get("annotations")
    if annotations:
        found.extend(_annotation_causes(annotations))
    finalizers = metadata.get("finalizers")
    if finalizers:
        found.extend(_finalizer_causes(rtype, finalizers))
    references = metadata.get("ownerReferences")
    if references:
        found.extend(_owner_causes(references))
    return found


def _annotation_causes(annotations: Mapping[str, Any]) -> list[Cause]:
    found: list[Cause] = []
    for key, value in annotations.items():
        for problem in qualified_name_problems(key.lower()):
            found.append(invalid("metadata.annotations", key, problem))
        if not isinstance(value, str):
            found.append(invalid(f"metadata.annotations.{key}", value, "must be a string"))
    size = sum(len(k) + len(v) for k, v in annotations.items() if isinstance(v, str))
    if size > ANNOTATIONS_SIZE_LIMIT:
        found.append(
            {
                "reason": "FieldValueTooLong",
                "field": "metadata.annotations",
                "message": f"Too long: may not be more than {ANNOTATIONS_SIZE_LIMIT} bytes",
            }
        )
    return found


def _finalizer_causes(rtype: ResourceType, finalizers: list[str]) -> list[Cause]:
    found: list[Cause] = []
    for finalizer in finalizers:
        for problem in qualified_name_problems(str(finalizer)):
            found.append(invalid("metadata.finalizers", finalizer, problem))
    if rtype.group in _CORE_VALIDATED:  # the in-tree kinds' own rule: a finalizer is standard or has a domain
        for index, finalizer in enumerate(finalizers):
            if "/" not in finalizer and finalizer not in STANDARD_FINALIZERS:
                found.append(
                    invalid(
                        f"metadata.finalizers[{index}]",
                        finalizer,
                        "name is neither a standard finalizer name nor is it fully qualified",
                    )
                )
    return found


def label_causes(labels: Mapping[str, Any], field: str) -> list[Cause]:
    found: list[Cause] = []
    for key, value in labels.items():
        if type(value) is str and value in _VALID_LABEL_VALUES and key in _VALID_LABEL_KEYS:
            continue  # the usual labels: seen and found valid before
        for problem in qualified_name_problems(key):
            found.append(invalid(field, key, problem))
        if not isinstance(value, str):
            found.append(invalid(f"{field}.{key}", value, "must be a string"))
        else:
            for problem in label_value_problems(value):
                found.append(invalid(field, value, problem))
        if not found:
            _remember_valid(key, value)
    return found


#: Label keys and values found valid (a bounded memory: checking them again would tell the same).
_VALID_LABEL_KEYS: set[str] = set()
_VALID_LABEL_VALUES: set[str] = set()
_REMEMBERED = 4096


def _remember_valid(key: str, value: str) -> None:
    for known, item in ((_VALID_LABEL_KEYS, key), (_VALID_LABEL_VALUES, value)):
        if len(known) >= _REMEMBERED:
            known.clear()
        known.add(item)


def _owner_causes(references: Any) -> list[Cause]:
    found: list[Cause] = []
    controllers: list[str] = []
    for ref in references:
        api_version = ref.get("apiVersion") or ""
        version = api_version.rpartition("/")[2]
        if api_version.count("/") > 1 or not version:
            found.append(invalid("metadata.ownerReferences.apiVersion", api_version, "version must not be empty"))
        for field, what in (("kind", "kind"), ("name", "name"), ("uid", "uid")):
            if not ref.get(field):
                found.append(
                    invalid(f"metadata.ownerReferences.{field}", ref.get(field) or "", f"{what} must not be empty")
                )
        if ref.get("controller"):
            controllers.append(f"{ref.get('kind', '')}/{ref.get('name', '')}")
    if len(controllers) > 1:
        found.append(
            invalid(
                "metadata.ownerReferences",
                references,
                'Only one reference can have Controller set to true. Found "true" in references '
                f"for {' and '.join(controllers)}",
            )
        )
    return found


# --- the built-in kinds -----------------------------------------------------------------------------------


#: The kinds of config data: the fields of their keys.
_CONFIGS = {("", "ConfigMap"): ("data", "binaryData"), ("", "Secret"): ("data",)}
#: The other kinds with rules of their own (in :func:`_kind_causes`).
_RULED = frozenset(
    {("", "Pod"), ("", "Service"), ("coordination.k8s.io", "Lease"), ("", "Event"), ("batch", "Job")}
    | _WORKLOADS
    | _TEMPLATED
)


def _kind_causes(rtype: ResourceType, obj: JsonDict) -> Iterator[Cause]:
    key = (rtype.group, rtype.kind)
    spec = obj.get("spec") or {}
    if key == ("", "Pod"):
        yield from pod_spec_causes(spec, "spec")
    elif key == ("", "Service"):
        yield from _service_causes(spec)
    elif key == ("coordination.k8s.io", "Lease"):
        yield from _lease_causes(spec)
    elif key == ("", "Event"):
        yield from _event_causes(obj)
    if key in _WORKLOADS:
        yield from replicas_causes(spec.get("replicas"), "spec.replicas")
    if key in _TEMPLATED:
        template = spec.get("template")
        if template:
            yield from label_causes(
                (template.get("metadata") or {}).get("labels") or {}, "spec.template.metadata.labels"
            )
            yield from pod_spec_causes(template.get("spec") or {}, "spec.template.spec")
            yield from _selector_causes(spec.get("selector"), template)
    if key == ("batch", "Job"):
        for field in ("parallelism", "completions", "backoffLimit"):
            if isinstance(spec.get(field), int) and spec[field] < 0:
                yield invalid(f"spec.{field}", spec[field], "must be greater than or equal to 0")


def replicas_causes(replicas: Any, field: str) -> list[Cause]:
    if isinstance(replicas, int) and replicas < 0:
        return [invalid(field, replicas, "must be greater than or equal to 0")]
    return []


def _config_key_causes(obj: JsonDict, fields: tuple[str, ...]) -> list[Cause]:
    present = None
    for field in fields:  # (a loop, not a comprehension: no frame of its own for each object)
        data = obj.get(field)
        if data:
            if present is not None:  # keys in two fields: each is looked at (one may repeat the other's)
                return list(_config_key_problems(obj, fields))
            present = data
    if present is None or _VALID_CONFIG_KEYS.issuperset(present):
        return []  # no keys, or the usual keys found valid before (nothing to say, and no path to spell out)
    return list(_config_key_problems(obj, fields))


#: Config keys found valid (a bounded memory, as for labels).
_VALID_CONFIG_KEYS: set[str] = set()


def _config_key_problems(obj: JsonDict, fields: tuple[str, ...]) -> Iterator[Cause]:
    seen: set[str] = set()
    for field in fields:
        for key in obj.get(field) or {}:
            if len(key) <= 253 and _CONFIG_KEY.fullmatch(key) and not key.startswith(".") and key not in seen:
                seen.add(key)  # the usual key: nothing to say (and no path to spell out)
                if len(_VALID_CONFIG_KEYS) >= _REMEMBERED:
                    _VALID_CONFIG_KEYS.clear()
                _VALID_CONFIG_KEYS.add(key)
                continue
            path = f"{field}[{key}]"
            if len(key) > 253:
                yield invalid(path, key, "must be no more than 253 characters")
            if not _CONFIG_KEY.fullmatch(key):
                yield invalid(path, key, _CONFIG_KEY_MESSAGE)
            if key in (".", ".."):
                yield invalid(path, key, f"must not be '{key}'")
            elif key.startswith(".."):
                yield invalid(path, key, "must not start with '..'")
            if key in seen:
                yield invalid(path, key, "duplicate of key present in data")
            seen.add(key)


def pod_spec_causes(spec: JsonDict, path: str) -> Iterator[Cause]:
    containers = spec.get("containers")
    if not containers:
        yield required(f"{path}.containers")
    names: set[str] = set()
    for group in ("initContainers", "containers"):
        for index, container in enumerate(spec.get(group) or ()):
            where = f"{path}.{group}[{index}]"
            name = container.get("name")
            if not name:
                yield required(f"{where}.name")
            elif name in names:
                yield {
                    "reason": "FieldValueDuplicate",
                    "message": f"Duplicate value: {go_value(name)}",
                    "field": f"{where}.name",
                }
            names.add(name or "")
            if not container.get("image"):
                yield required(f"{where}.image")
            for port_index, port in enumerate(container.get("ports") or ()):
                yield from _port_causes(port, f"{where}.ports[{port_index}]", "containerPort")
    policy = spec.get("restartPolicy")
    if policy is not None and policy not in ("Always", "OnFailure", "Never"):
        yield not_supported(f"{path}.restartPolicy", policy, ("Always", "OnFailure", "Never"))


def _port_causes(port: JsonDict, where: str, number_field: str) -> Iterator[Cause]:
    """A port's number (1..65535) and protocol, of a container or of a service."""
    number = port.get(number_field)
    if not isinstance(number, int) or not 1 <= number <= 65535:
        yield invalid(f"{where}.{number_field}", number or 0, _PORT_RANGE)
    protocol = port.get("protocol")
    if protocol is not None and protocol not in _PROTOCOLS:
        yield not_supported(f"{where}.protocol", protocol, _PROTOCOLS)


def _service_causes(spec: JsonDict) -> Iterator[Cause]:
    kinds = ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort")
    service_type = spec.get("type")
    if service_type is not None and service_type not in kinds:
        yield not_supported("spec.type", service_type, kinds)
    for index, port in enumerate(spec.get("ports") or ()):
        where = f"spec.ports[{index}]"
        yield from _port_causes(port, where, "port")
        target = port.get("targetPort")
        if isinstance(target, int) and not 1 <= target <= 65535:
            yield invalid(f"{where}.targetPort", target, _PORT_RANGE)
        elif isinstance(target, str) and target and (len(target) > 15 or not _IANA_SVC_NAME.fullmatch(target)):
            yield invalid(
                f"{where}.targetPort",
                target,
                "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)"
                if len(target) <= 15
                else "must be no more than 15 characters",
            )
        node_port = port.get("nodePort")
        if isinstance(node_port, int) and node_port and not 1 <= node_port <= 65535:
            yield invalid(f"{where}.nodePort", node_port, _PORT_RANGE)


def _lease_causes(spec: JsonDict) -> Iterator[Cause]:
    duration = spec.get("leaseDurationSeconds")
    if isinstance(duration, int) and duration <= 0:
        yield invalid("spec.leaseDurationSeconds", duration, "must be greater than 0")
    transitions = spec.get("leaseTransitions")
    if isinstance(transitions, int) and transitions < 0:
        yield invalid("spec.leaseTransitions", transitions, "must be greater than or equal to 0")


def _event_causes(event: JsonDict) -> Iterator[Cause]:
    namespace = (event.get("metadata") or {}).get("namespace")
    involved = (event.get("involvedObject") or {}).get("namespace")
    if involved and namespace and involved != namespace:
        yield invalid("involvedObject.namespace", involved, "does not match event.namespace")


def _selector_causes(selector: Any, template: JsonDict) -> Iterator[Cause]:
    """A workload's selector must be valid and select its own template's labels (expressions included)."""
    if not isinstance(selector, dict):
        return
    problems = list(label_selector_causes(selector, "spec.selector"))
    yield from problems
    if problems:
        return  # an invalid selector selects nothing: the apiserver reports only its problems
    labels = (template.get("metadata") or {}).get("labels") or {}
    if not LabelSelector.from_spec(selector).matches({str(k): str(v) for k, v in labels.items()}):
        yield invalid("spec.template.metadata.labels", labels, "`selector` does not match template `labels`")


def label_selector_causes(selector: Mapping[str, Any], path: str) -> Iterator[Cause]:
    """The problems of a structured label selector: its labels, and each expression's operator, key and values."""
    yield from label_causes(selector.get("matchLabels") or {}, f"{path}.matchLabels")
    for index, requirement in enumerate(selector.get("matchExpressions") or ()):
        if not isinstance(requirement, dict):
            continue
        where = f"{path}.matchExpressions[{index}]"
        listed = requirement.get("values")
        operator = requirement.get("operator")
        values = [str(item) for item in listed] if isinstance(listed, list) else []
        if operator in ("In", "NotIn"):
            if not values:
                yield required(f"{where}.values", "must be specified when `operator` is 'In' or 'NotIn'")
        elif operator in ("Exists", "DoesNotExist"):
            if values:
                yield forbidden(f"{where}.values", "may not be specified when `operator` is 'Exists' or 'DoesNotExist'")
        else:
            yield invalid(f"{where}.operator", operator or "", "not a valid selector operator")
        for problem in qualified_name_problems(str(requirement.get("key") or "")):
            yield invalid(f"{where}.key", requirement.get("key") or "", problem)
        for value_index, value in enumerate(values):
            for problem in label_value_problems(value):
                yield invalid(f"{where}.values[{value_index}]", value, problem)
