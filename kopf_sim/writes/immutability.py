"""The apiserver's update rules of built-in kinds: the fields that may not change once an object exists.

A real apiserver refuses such an update with ``422 Invalid`` and field causes; so must the simulator, or
an operator that "fixes" a Pod's spec or a Deployment's selector in place passes its tests here and
fails in a cluster. The rules compare the new object with the old one after both are defaulted, as the
apiserver's validation of updates does. The messages are the apiserver's; where it prints a Go value
(``%#v``) of a large struct, the value is shown as JSON instead.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from kopf_sim.kube.objects import JsonDict
from kopf_sim.kube.resources import ResourceType
from kopf_sim.writes.validation import Cause, forbidden, invalid

__all__ = ["update_causes"]

_IMMUTABLE = "field is immutable"
_IMMUTABLE_WHEN_SET = "field is immutable when `immutable` is set"
_POD_UPDATABLE = ",".join(
    (
        "`spec.containers[*].image`",
        "`spec.initContainers[*].image`",
        "`spec.activeDeadlineSeconds`",
        "`spec.tolerations` (only additions to existing tolerations)",
        "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
    )
)
_STATEFULSET_UPDATABLE = (
    "replicas",
    "ordinals",
    "template",
    "updateStrategy",
    "persistentVolumeClaimRetentionPolicy",
    "minReadySeconds",
)
_STATEFULSET_FORBIDDEN = (
    "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', "
    "'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"
)
_PVC_FORBIDDEN = (
    "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims"
)
_SELECTOR_IMMUTABLE = frozenset(
    {("apps", "Deployment"), ("apps", "ReplicaSet"), ("apps", "DaemonSet"), ("batch", "Job")}
)
# What a suspended Job that never started may still change in its template (mutable scheduling directives).
_JOB_SCHEDULING = ("nodeSelector", "affinity", "tolerations", "schedulingGates")


def update_causes(rtype: ResourceType, new: JsonDict, old: JsonDict) -> Iterator[Cause]:
    """The reasons to refuse an update of a built-in object because it changes what may not change."""
    if rtype.custom:
        return
    key = (rtype.group, rtype.kind)
    spec: JsonDict = new.get("spec") or {}
    old_spec: JsonDict = old.get("spec") or {}
    if key == ("", "ConfigMap"):
        yield from _immutable_data(new, old, ("data", "binaryData"))
    elif key == ("", "Secret"):
        if new.get("type", "Opaque") != old.get("type", "Opaque"):
            yield invalid("type", new.get("type", ""), _IMMUTABLE)
        yield from _immutable_data(new, old, ("data",))
    elif key == ("", "Pod"):
        yield from _pod(spec, old_spec)
    elif key == ("", "Service"):
        yield from _service(spec, old_spec)
    elif key == ("", "PersistentVolumeClaim"):
        yield from _claim(new, old)
    if key in _SELECTOR_IMMUTABLE and spec.get("selector") != old_spec.get("selector"):
        yield invalid_go("spec.selector", go_selector(spec.get("selector")), _IMMUTABLE)
    if key == ("apps", "StatefulSet"):
        changed = {k for k in set(spec) | set(old_spec) if spec.get(k) != old_spec.get(k)}
        if changed - set(_STATEFULSET_UPDATABLE):
            yield forbidden("spec", _STATEFULSET_FORBIDDEN)
    elif key == ("batch", "Job"):
        yield from _job(spec, old_spec, old.get("status") or {})


def invalid_go(field: str, rendered: str, detail: str) -> Cause:
    """An ``Invalid value`` cause whose value is already printed as Go prints it."""
    return {"reason": "FieldValueInvalid", "message": f"Invalid value: {rendered}: {detail}", "field": field}


def go_strings(values: Any) -> str:
    if values is None:
        return "[]string(nil)"
    return "[]string{" + ", ".join(json.dumps(str(v)) for v in values) + "}"


def go_selector(selector: Any) -> str:
    """A label selector as the apiserver prints it in ``field is immutable`` (Go's ``%#v`` of the struct)."""
    if not isinstance(selector, dict):
        return "null"
    labels = selector.get("matchLabels")
    if labels is None:
        matched = "map[string]string(nil)"
    else:
        matched = (
            "map[string]string{"
            + ", ".join(f"{json.dumps(k)}:{json.dumps(v)}" for k, v in sorted(labels.items()))
            + "}"
        )
    expressions = selector.get("matchExpressions")
    if expressions is None:
        required = "[]v1.LabelSelectorRequirement(nil)"
    else:
        items = [
            f"v1.LabelSelectorRequirement{{Key:{json.dumps(e.get('key', ''))}, "
            f"Operator:{json.dumps(e.get('operator', ''))}, Values:{go_strings(e.get('values'))}}}"
            for e in expressions
        ]
        required = "[]v1.LabelSelectorRequirement{" + ", ".join(items) + "}"
    return f"v1.LabelSelector{{MatchLabels:{matched}, MatchExpressions:{required}}}"


def _immutable_data(new: JsonDict, old: JsonDict, fields: tuple[str, ...]) -> Iterator[Cause]:
    if not old.get("immutable"):
        return
    if not new.get("immutable"):
        yield forbidden("immutable", _IMMUTABLE_WHEN_SET)
    for field in fields:
        if (new.get(field) or {}) != (old.get(field) or {}):
            yield forbidden(field, _IMMUTABLE_WHEN_SET)


# --- Pods -------------------------------------------------------------------------------------------------


def _pod(spec: JsonDict, old: JsonDict) -> Iterator[Cause]:
    if spec == old:
        return
    for group in ("containers", "initContainers"):
        if len(spec.get(group) or ()) != len(old.get(group) or ()):
            yield forbidden(f"spec.{group}", "pod updates may not add or remove containers")
            return
    yield from _deadline(spec.get("activeDeadlineSeconds"), old.get("activeDeadlineSeconds"))
    yield from _tolerations(spec.get("tolerations") or [], old.get("tolerations") or [])
    yield from _gates(spec.get("schedulingGates") or [], old.get("schedulingGates") or [])
    munged = dict(spec)
    for group in ("containers", "initContainers"):
        if group in spec:
            munged[group] = [
                {**c, "image": o.get("image")} if "image" in o else {k: v for k, v in c.items() if k != "image"}
                for c, o in zip(spec[group] or (), old.get(group) or (), strict=True)
            ]
    for field in ("activeDeadlineSeconds", "tolerations", "schedulingGates"):
        munged.pop(field, None)
        if field in old:
            munged[field] = old[field]
    grace, old_grace = spec.get("terminationGracePeriodSeconds"), old.get("terminationGracePeriodSeconds")
    if isinstance(old_grace, int) and old_grace < 0 and grace == 1:
        munged["terminationGracePeriodSeconds"] = old_grace
    if munged != old:
        message = f"pod updates may not change fields other than {_POD_UPDATABLE}\n{_spec_diff(old, munged)}"
        yield forbidden("spec", message)


def _deadline(new: Any, old: Any) -> Iterator[Cause]:
    if new is None:
        if old is not None:
            yield invalid("spec.activeDeadlineSeconds", None, "must not update from a positive integer to nil value")
    elif isinstance(new, int) and isinstance(old, int) and new > old:
        yield invalid("spec.activeDeadlineSeconds", new, "must be less than or equal to previous value")


def _tolerations(new: list[Any], old: list[Any]) -> Iterator[Cause]:
    """Existing tolerations stay (only their ``tolerationSeconds`` may change); new ones may be added."""

    def sans_seconds(toleration: Any) -> Any:
        if not isinstance(toleration, dict):
            return toleration
        return {k: v for k, v in toleration.items() if k != "tolerationSeconds"}

    remaining = [sans_seconds(t) for t in new]
    for toleration in old:
        if sans_seconds(toleration) in remaining:
            remaining.remove(sans_seconds(toleration))
        else:
            yield forbidden("spec.tolerations", "existing toleration can not be modified except its tolerationSeconds")
            return


def _gates(new: list[Any], old: list[Any]) -> Iterator[Cause]:
    for gate in new:
        if gate not in old:
            name = gate.get("name", "") if isinstance(gate, dict) else gate
            yield forbidden("spec.schedulingGates", f"only deletion is allowed, but found new scheduling gate '{name}'")
            return


def _go_field(name: str) -> str:
    return name[:1].upper() + name[1:]


def _spec_diff(old: JsonDict, new: JsonDict) -> str:
    """A short diff of two pod specs in the shape of the apiserver's (changed top-level fields only)."""
    lines = ["  core.PodSpec{"]
    identical = 0
    for key in sorted(set(old) | set(new)):
        if old.get(key) == new.get(key):
            identical += 1
            continue
        if identical:
            lines.append(f"  \t... // {identical} identical fields")
            identical = 0
        if key in old:
            lines.append(f"- \t{_go_field(key)}: {json.dumps(old[key], separators=(',', ':'))},")
        if key in new:
            lines.append(f"+ \t{_go_field(key)}: {json.dumps(new[key], separators=(',', ':'))},")
    if identical:
        lines.append(f"  \t... // {identical} identical fields")
    lines.append("  }")
    return "\n".join(lines) + "\n"


# --- Services, claims, jobs --------------------------------------------------------------------------------


def _service(spec: JsonDict, old: JsonDict) -> Iterator[Cause]:
    """Cluster IPs may not change once set, unless the service becomes or stops being an ExternalName."""
    if "ExternalName" in (spec.get("type"), old.get("type")):
        return
    ips, old_ips = spec.get("clusterIPs") or [], old.get("clusterIPs") or []
    if ips and old_ips and ips[0] != old_ips[0]:
        yield invalid_go("spec.clusterIPs[0]", go_strings(ips), "may not change once set")
    elif len(ips) > 1 and len(old_ips) > 1 and ips[1] != old_ips[1]:
        yield invalid_go("spec.clusterIPs[1]", go_strings(ips), "may not change once set")


def _claim(new: JsonDict, old: JsonDict) -> Iterator[Cause]:
    spec, old_spec = dict(new.get("spec") or {}), dict(old.get("spec") or {})
    if not old_spec.get("volumeName"):  # the volume controller binds a claim once
        old_spec.pop("volumeName", None)
        spec.pop("volumeName", None)
    if old_spec.get("storageClassName") is None and not old_spec.get("volumeName"):  # a default class, retroactively
        spec.pop("storageClassName", None)
        old_spec.pop("storageClassName", None)
    if (new.get("status") or {}).get("phase") == "Bound":
        for field in ("resources", "volumeAttributesClassName"):
            spec.pop(field, None)
            old_spec.pop(field, None)
    if spec != old_spec:
        yield forbidden("spec", _PVC_FORBIDDEN)


def _job(spec: JsonDict, old: JsonDict, old_status: JsonDict) -> Iterator[Cause]:
    template, old_template = spec.get("template") or {}, old.get("template") or {}
    if old.get("suspend") and not old_status.get("startTime"):
        template, old_template = _sans_scheduling(template), _sans_scheduling(old_template)
    if template != old_template:
        yield invalid("spec.template", spec.get("template"), _IMMUTABLE)
    elastic = spec.get("completionMode") == "Indexed" and spec.get("completions") == spec.get("parallelism")
    if spec.get("completions") != old.get("completions") and not elastic:
        yield invalid("spec.completions", spec.get("completions"), _IMMUTABLE)
    if spec.get("completionMode") != old.get("completionMode"):
        yield invalid("spec.completionMode", spec.get("completionMode"), _IMMUTABLE)


def _sans_scheduling(template: JsonDict) -> JsonDict:
    """A job's template without what a suspended, never started job may change (labels, annotations, placement)."""
    metadata = {k: v for k, v in (template.get("metadata") or {}).items() if k not in ("labels", "annotations")}
    spec = {k: v for k, v in (template.get("spec") or {}).items() if k not in _JOB_SCHEDULING}
    return {**template, "metadata": metadata, "spec": spec}
