"""Where a pod may run: the scheduler's filters (node selector, required node affinity, taints, readiness, room).

The choice among the nodes that fit is the least loaded one (by the number of running pods), then by
name, so that pods spread evenly and every run places them the same way. Resource requests are not
accounted (every node has room for ``max pods`` pods of any size).
"""

from __future__ import annotations

import collections
from collections.abc import Iterable, Mapping
from typing import Any

from kopf_sim.kube.objects import JsonDict, meta

from .nodes import is_ready

__all__ = ["affinity_fits", "choose_node", "tolerates", "unschedulable_message"]


def _expression_matches(expr: Mapping[str, Any], value: str | None) -> bool:
    operator, values = expr.get("operator"), [str(v) for v in expr.get("values") or ()]
    if operator == "In":
        return value is not None and value in values
    if operator == "NotIn":
        return value is None or value not in values
    if operator == "Exists":
        return value is not None
    if operator == "DoesNotExist":
        return value is None
    if operator in ("Gt", "Lt") and value is not None and values:
        try:
            number, bound = int(value), int(values[0])
        except ValueError:
            return False
        return number > bound if operator == "Gt" else number < bound
    return False


def _term_matches(term: Mapping[str, Any], node: JsonDict) -> bool:
    labels = meta(node).get("labels") or {}
    expressions = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not expressions and not fields:
        return False  # an empty term matches nothing
    return all(_expression_matches(e, labels.get(e.get("key", ""))) for e in expressions) and all(
        _expression_matches(f, meta(node).get("name") if f.get("key") == "metadata.name" else None) for f in fields
    )


def affinity_fits(pod: JsonDict, node: JsonDict) -> bool:
    spec = pod.get("spec") or {}
    labels = meta(node).get("labels") or {}
    for key, value in (spec.get("nodeSelector") or {}).items():
        if labels.get(key) != value:
            return False
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    terms = required.get("nodeSelectorTerms")
    return not terms or any(_term_matches(term, node) for term in terms)


def tolerates(tolerations: Iterable[Mapping[str, Any]], taint: Mapping[str, Any]) -> bool:
    for toleration in tolerations:
        effect = toleration.get("effect")
        if effect and effect != taint.get("effect"):
            continue
        if toleration.get("operator") == "Exists":
            if not toleration.get("key") or toleration.get("key") == taint.get("key"):
                return True
        elif toleration.get("key") == taint.get("key") and toleration.get("value", "") == taint.get("value", ""):
            return True
    return False


def _problem(pod: JsonDict, node: JsonDict, load: int) -> str | None:
    """Why the pod cannot run on the node (the scheduler's wording), or None if it can."""
    spec = pod.get("spec") or {}
    tolerations = spec.get("tolerations") or []
    if meta(node).get("deletionTimestamp") or not is_ready(node):
        return "node(s) had untolerated taint {node.kubernetes.io/not-ready: }"
    if (node.get("spec") or {}).get("unschedulable") and not tolerates(
        tolerations, {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
    ):
        return "node(s) were unschedulable"
    if not affinity_fits(pod, node):
        return "node(s) didn't match Pod's node affinity/selector"
    for taint in (node.get("spec") or {}).get("taints") or []:
        if taint.get("effect") in ("NoSchedule", "NoExecute") and not tolerates(tolerations, taint):
            return f"node(s) had untolerated taint {{{taint.get('key')}: {taint.get('value', '')}}}"
    allocatable = ((node.get("status") or {}).get("allocatable") or {}).get("pods", "110")
    try:
        capacity = int(allocatable)
    except ValueError:
        capacity = 110
    if load >= capacity:
        return "Too many pods"
    return None


def choose_node(pod: JsonDict, nodes: Iterable[JsonDict], loads: Mapping[str, int]) -> tuple[str | None, list[str]]:
    """The best node for the pod, or None and the reasons why none fits."""
    best: tuple[int, str] | None = None
    problems: list[str] = []
    for node in nodes:
        name = meta(node)["name"]
        problem = _problem(pod, node, loads.get(name, 0))
        if problem is not None:
            problems.append(problem)
        elif best is None or (loads.get(name, 0), name) < best:
            best = (loads.get(name, 0), name)
    return (best[1] if best is not None else None), problems


def unschedulable_message(total: int, problems: list[str]) -> str:
    counts = collections.Counter(problems)
    details = ", ".join(f"{count} {problem}" for problem, count in sorted(counts.items()))
    message = f"0/{total} nodes are available"
    message += f": {details}." if details else "."
    return message + f" preemption: 0/{total} nodes are available: {total} Preemption is not helpful for scheduling."
