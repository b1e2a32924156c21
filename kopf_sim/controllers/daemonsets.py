"""DaemonSets: one pod on every node that fits (node selector, affinity, taints), as nodes come and go.

Each pod is pinned to its node by a required node affinity on ``metadata.name`` (then bound by the
scheduler, as in a real cluster) and tolerates the node-condition taints. A RollingUpdate replaces
the pods of an old template within ``maxUnavailable`` (1 by default); OnDelete waits for deletions.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable

from kopf_sim.kube.objects import JsonDict, meta
from kopf_sim.store.watching import Change

from .podtemplates import (
    REVISION_LABEL,
    available,
    count_available,
    is_active,
    pod_from_template,
    ready_since,
    resolve_percent,
    with_revision,
)
from .replicasets import owned_pods
from .revisions import ensure_revision, prune_revisions
from .runtime import DAEMONSETS, NODES, PODS, Controller, Key, key_of, owner_key
from .scheduling import affinity_fits, tolerates

GENERATION_LABEL = "pod-template-generation"
DEFAULT_TOLERATIONS = [
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
]


def target_node(pod: JsonDict) -> str | None:
    """The node a daemon pod is for: bound already, or named by its node affinity."""
    spec = pod.get("spec") or {}
    if spec.get("nodeName"):
        return str(spec["nodeName"])
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    for term in required.get("nodeSelectorTerms") or []:
        for field in term.get("matchFields") or []:
            if field.get("key") == "metadata.name" and field.get("operator") == "In" and field.get("values"):
                return str(field["values"][0])
    return None


def _fits(ds: JsonDict, node: JsonDict) -> bool:
    template = (ds.get("spec") or {}).get("template") or {}
    pod = {"spec": template.get("spec") or {}}
    if meta(node).get("deletionTimestamp") or not affinity_fits(pod, node):
        return False
    tolerations = [*(pod["spec"].get("tolerations") or []), *DEFAULT_TOLERATIONS]
    return all(
        tolerates(tolerations, taint)
        for taint in (node.get("spec") or {}).get("taints") or []
        if taint.get("effect") in ("NoSchedule", "NoExecute")
    )


def _outdated(
    eligible: list[str], by_node: dict[str, list[JsonDict]], hash_: str, min_ready: int, now: datetime.datetime
) -> tuple[list[JsonDict], int]:
    """The pods of other revisions on the eligible nodes, and how many of these nodes have no available pod."""
    old: list[JsonDict] = []
    unavailable = 0
    for node in eligible:
        current = [p for p in by_node.get(node, []) if not meta(p).get("deletionTimestamp")]
        if not current or not available(current[0], min_ready, now)[0]:
            unavailable += 1
        old += [p for p in current if (meta(p).get("labels") or {}).get(REVISION_LABEL) != hash_]
    return old, unavailable


class DaemonSetController(Controller):
    name = "daemonsets"
    primary = DAEMONSETS
    watches = (PODS, NODES)

    def related_keys(self, change: Change) -> Iterable[Key]:
        if change.key == NODES:
            return [key_of(ds) for ds in self.cluster.objects(DAEMONSETS)]
        key = owner_key(change.obj, "DaemonSet")
        return (key,) if key is not None else ()

    async def reconcile(self, key: Key) -> None:
        ds = self.get(DAEMONSETS, key)
        if ds is None or meta(ds).get("deletionTimestamp"):
            return
        spec = ds.get("spec") or {}
        revision_name, hash_ = await ensure_revision(self, ds)
        nodes = {meta(n)["name"]: n for n in self.cluster.objects(NODES)}
        eligible = sorted(name for name, node in nodes.items() if _fits(ds, node))
        by_node, stopping = await self._pods_by_node(ds)
        await self._place(ds, eligible, by_node, stopping, hash_)
        strategy = spec.get("updateStrategy") or {}
        if strategy.get("type", "RollingUpdate") == "RollingUpdate":
            await self._roll(ds, eligible, by_node, hash_, strategy.get("rollingUpdate") or {})
        await self._sync_status(ds, key, eligible, hash_)
        await prune_revisions(self, ds, {revision_name})

    async def _pods_by_node(self, ds: JsonDict) -> tuple[dict[str, list[JsonDict]], set[str]]:
        """The active pods by node, and the nodes with pods stopping; the pods that exited are deleted (replaced)."""
        by_node: dict[str, list[JsonDict]] = {}
        stopping: set[str] = set()
        for pod in owned_pods(self, ds):
            if meta(pod).get("deletionTimestamp"):
                stopping.add(target_node(pod) or "")
            elif is_active(pod):
                by_node.setdefault(target_node(pod) or "", []).append(pod)
            elif (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                await self.delete(pod)  # a daemon pod that exited is replaced
        return by_node, stopping

    async def _place(
        self, ds: JsonDict, eligible: list[str], by_node: dict[str, list[JsonDict]], stopping: set[str], hash_: str
    ) -> None:
        """One pod on every eligible node (the oldest stays), none on the others."""
        for node in eligible:
            pods = sorted(by_node.get(node, []), key=lambda p: meta(p).get("creationTimestamp", ""))
            if not pods and node not in stopping:  # a replaced pod is gone before its successor starts
                await self.create(PODS, meta(ds).get("namespace"), self._pod(ds, node, hash_))
            for extra in pods[1:]:
                await self.delete(extra)
        for node, pods in by_node.items():
            if node not in eligible:
                for pod in pods:
                    await self.delete(pod)

    def _pod(self, ds: JsonDict, node: str, hash_: str) -> JsonDict:
        labels = {REVISION_LABEL: hash_, GENERATION_LABEL: str(meta(ds).get("generation", 1))}
        pod = pod_from_template((ds.get("spec") or {}).get("template"), ds, labels=labels)
        spec = pod["spec"]
        affinity = dict(spec.get("affinity") or {})
        affinity["nodeAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]
            }
        }
        spec["affinity"] = affinity
        tolerations = list(spec.get("tolerations") or [])
        for toleration in DEFAULT_TOLERATIONS:
            if not any(
                t.get("key") == toleration["key"] and t.get("effect") == toleration["effect"] for t in tolerations
            ):
                tolerations.append(dict(toleration))
        spec["tolerations"] = tolerations
        return pod

    async def _roll(
        self, ds: JsonDict, eligible: list[str], by_node: dict[str, list[JsonDict]], hash_: str, rolling: JsonDict
    ) -> None:
        now = self.wall()
        min_ready = int((ds.get("spec") or {}).get("minReadySeconds") or 0)
        budget = resolve_percent(rolling.get("maxUnavailable"), len(eligible), round_up=False, default="1") or 1
        old, unavailable = _outdated(eligible, by_node, hash_, min_ready, now)
        old.sort(key=lambda p: (available(p, min_ready, now)[0], meta(p)["name"]))  # unavailable ones first
        for pod in old:
            is_available = available(pod, min_ready, now)[0]
            if is_available and unavailable >= budget:
                break
            await self.delete(pod)
            if is_available:
                unavailable += 1

    async def _sync_status(self, ds: JsonDict, key: Key, eligible: list[str], hash_: str) -> None:
        ds = self.get(DAEMONSETS, key) or ds
        now = self.wall()
        min_ready = int((ds.get("spec") or {}).get("minReadySeconds") or 0)
        misscheduled = 0
        scheduled: list[JsonDict] = []
        for pod in owned_pods(self, ds):
            if not is_active(pod):
                continue
            if target_node(pod) in eligible:
                scheduled.append(pod)
            else:
                misscheduled += 1
        ready = sum(1 for p in scheduled if ready_since(p) is not None)
        updated = with_revision(scheduled, hash_)
        available_count, soonest = count_available(scheduled, min_ready, now)
        if soonest is not None:
            self.later(soonest, key)
        status: JsonDict = {
            "currentNumberScheduled": len(scheduled),
            "numberMisscheduled": misscheduled,
            "desiredNumberScheduled": len(eligible),
            "numberReady": ready,
            "observedGeneration": meta(ds).get("generation", 1),
        }
        if updated:
            status["updatedNumberScheduled"] = updated
        if available_count:
            status["numberAvailable"] = available_count
        if len(eligible) - available_count > 0:
            status["numberUnavailable"] = len(eligible) - available_count
        await self.update_status(ds, status)
