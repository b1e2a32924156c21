"""Pods from templates, the template hashes that name ReplicaSets and revisions, and pods' readiness.

A template's hash is an FNV-32a of its canonical form (plus the collision count, if any), written in
decimal and encoded in the apiserver's name alphabet: the shape of the real ``pod-template-hash``
(``web-5d4b8f7c9``), computed over JSON rather than Go's struct printing, so the values differ from a
real cluster's but are stable for the same template.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Iterable, Mapping
from typing import Any

from kopf_sim.kube.objects import JsonDict, clone, meta

from .runtime import new_owner_ref, parse_time

#: The label of the pods of a StatefulSet or a DaemonSet: the hash of the ControllerRevision they were made from.
REVISION_LABEL = "controller-revision-hash"

__all__ = ["available", "pod_from_template", "ready_since", "template_hash"]

NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_FNV_OFFSET, _FNV_PRIME = 0x811C9DC5, 0x01000193


def fnv32a(data: bytes) -> int:
    value = _FNV_OFFSET
    for byte in data:
        value = ((value ^ byte) * _FNV_PRIME) & 0xFFFFFFFF
    return value


def safe_encode(text: str) -> str:
    """Each character mapped into the alphabet without vowels and look-alikes (as generated names are)."""
    return "".join(NAME_ALPHABET[ord(char) % len(NAME_ALPHABET)] for char in text)


def template_hash(template: Mapping[str, Any] | None, collision_count: int | None = None) -> str:
    data = json.dumps(template or {}, sort_keys=True, separators=(",", ":")).encode()
    if collision_count:
        data += int(collision_count).to_bytes(8, "little")
    return safe_encode(str(fnv32a(data)))


def without_label(template: Mapping[str, Any] | None, label: str) -> JsonDict:
    """The template without one label (e.g. the pod-template-hash that a ReplicaSet's template carries)."""
    result: JsonDict = clone(dict(template or {}))
    labels = (result.get("metadata") or {}).get("labels")
    if isinstance(labels, dict) and label in labels:
        del labels[label]
        if not labels:
            del result["metadata"]["labels"]
        if not result["metadata"]:
            del result["metadata"]
    return result


def _merged_metadata(
    template_meta: Mapping[str, Any],
    *,
    labels: Mapping[str, str] | None,
    annotations: Mapping[str, str] | None,
    finalizers: list[str] | None,
) -> JsonDict:
    """The template's labels, annotations and finalizers with the controller's own (the empty ones omitted)."""
    merged: JsonDict = {}
    pod_labels = {**(template_meta.get("labels") or {}), **(labels or {})}
    pod_annotations = {**(template_meta.get("annotations") or {}), **(annotations or {})}
    if pod_labels:
        merged["labels"] = pod_labels
    if pod_annotations:
        merged["annotations"] = pod_annotations
    if finalizers or template_meta.get("finalizers"):
        merged["finalizers"] = [*(template_meta.get("finalizers") or []), *(finalizers or [])]
    return merged


def pod_from_template(
    template: Mapping[str, Any] | None,
    owner: JsonDict,
    *,
    name: str | None = None,
    generate_name: str | None = None,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    finalizers: list[str] | None = None,
) -> JsonDict:
    """A pod as a controller creates it from a template: its labels, annotations, spec, and an owner reference."""
    template = template or {}
    template_meta = template.get("metadata") or {}
    metadata: JsonDict = {"namespace": meta(owner).get("namespace"), "ownerReferences": [new_owner_ref(owner)]}
    if name:
        metadata["name"] = name
    else:
        metadata["generateName"] = generate_name or f"{meta(owner)['name']}-"
    metadata.update(_merged_metadata(template_meta, labels=labels, annotations=annotations, finalizers=finalizers))
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": clone(template.get("spec") or {})}


def is_active(pod: JsonDict) -> bool:
    """Not being deleted and not finished: a pod that counts towards a controller's replicas."""
    return not meta(pod).get("deletionTimestamp") and (pod.get("status") or {}).get("phase") not in (
        "Succeeded",
        "Failed",
    )


def ready_since(pod: JsonDict) -> datetime.datetime | None:
    """When the pod became Ready, if it is."""
    for cond in (pod.get("status") or {}).get("conditions") or ():
        if cond.get("type") == "Ready":
            if cond.get("status") != "True":
                return None
            return parse_time(cond.get("lastTransitionTime")) or datetime.datetime.min.replace(tzinfo=datetime.UTC)
    return None


def available(pod: JsonDict, min_ready_seconds: int, now: datetime.datetime) -> tuple[bool, float | None]:
    """Whether the pod is available (ready for ``min_ready_seconds``); if not yet, in how many seconds."""
    since = ready_since(pod)
    if since is None:
        return False, None
    if min_ready_seconds <= 0:
        return True, None
    remaining = (since + datetime.timedelta(seconds=min_ready_seconds) - now).total_seconds()
    return (remaining <= 0), (remaining if remaining > 0 else None)


def count_available(
    pods: Iterable[JsonDict], min_ready_seconds: int, now: datetime.datetime
) -> tuple[int, float | None]:
    """How many of the pods are available, and in how many seconds the next one will be (None: none will be)."""
    count = 0
    soonest: float | None = None
    for pod in pods:
        ok, remaining = available(pod, min_ready_seconds, now)
        count += ok
        if remaining is not None:
            soonest = remaining if soonest is None else min(soonest, remaining)
    return count, soonest


def with_revision(pods: Iterable[JsonDict], revision: str) -> int:
    """How many of the pods are of this revision (by their revision label)."""
    return sum(1 for p in pods if (meta(p).get("labels") or {}).get(REVISION_LABEL) == revision)


def resolve_percent(value: int | str | None, total: int, *, round_up: bool, default: str) -> int:
    """An int-or-percent (``maxSurge: 25%``) against a total, rounded as the controllers round it."""
    if value is None:
        value = default
    if isinstance(value, int):
        return value
    text = str(value).strip()
    if text.endswith("%"):
        percent = int(text[:-1] or 0)
        scaled = percent * total
        return -(-scaled // 100) if round_up else scaled // 100
    return int(text)
