"""ReplicaSets: keep ``spec.replicas`` pods of the template alive; report how many are ready and available.

Missing pods are created (``<replicaset>-<5 chars>``); surplus ones deleted, the least valuable first
(unscheduled, then pending, not ready, ready for the shortest time, most restarted, newest), as the
real controller ranks them.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable

from kopf_sim.kube import errors
from kopf_sim.kube.objects import JsonDict, meta
from kopf_sim.kube.selectors import LabelSelector
from kopf_sim.store.watching import Change

from .podtemplates import available, is_active, pod_from_template, ready_since
from .runtime import PODS, REPLICASETS, Controller, Key, owned_by, owner_key, set_condition

_PHASE_RANK = {"Pending": 0, "Unknown": 1, "Running": 2}
_EPOCH = datetime.datetime.min.replace(tzinfo=datetime.UTC)


def owned_pods(controller: Controller, owner: JsonDict) -> list[JsonDict]:
    """The pods that an object controls (by its uid), in name order."""
    return [
        obj
        for obj in controller.cluster.dependents_of(meta(owner)["uid"])
        if obj.get("kind") == "Pod" and owned_by(obj, owner)
    ]


def deletion_rank(pod: JsonDict) -> tuple[object, ...]:
    """The sort key of the pods to delete first (the smallest first)."""
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    since = ready_since(pod)
    restarts = sum(int(c.get("restartCount") or 0) for c in status.get("containerStatuses") or [])
    created = meta(pod).get("creationTimestamp") or ""
    return (
        1 if spec.get("nodeName") else 0,
        _PHASE_RANK.get(status.get("phase", "Pending"), 0),
        1 if since is not None else 0,
        -(since or _EPOCH).timestamp() if since is not None else 0,
        -restarts,
        _negate(created),
        meta(pod).get("name", ""),
    )


def _negate(text: str) -> tuple[int, ...]:
    return tuple(-ord(c) for c in text)


def count_replicas(
    controller: Controller, pods: list[JsonDict], template_labels: dict[str, str], min_ready_seconds: int, key: Key
) -> JsonDict:
    """The counts of a pod-owning workload's status; a timer for a pod that will become available."""
    now = controller.wall()
    labels = LabelSelector.from_spec({"matchLabels": template_labels})
    counts = {"replicas": 0, "fullyLabeledReplicas": 0, "readyReplicas": 0, "availableReplicas": 0}
    soonest: float | None = None
    for pod in pods:
        counts["replicas"] += 1
        if labels.matches(meta(pod).get("labels")):
            counts["fullyLabeledReplicas"] += 1
        if ready_since(pod) is not None:
            counts["readyReplicas"] += 1
        is_available, remaining = available(pod, min_ready_seconds, now)
        if is_available:
            counts["availableReplicas"] += 1
        elif remaining is not None:
            soonest = remaining if soonest is None else min(soonest, remaining)
    if soonest is not None:
        controller.later(soonest, key)
    return counts


class ReplicaSetController(Controller):
    name = "replicasets"
    primary = REPLICASETS
    watches = (PODS,)

    def related_keys(self, change: Change) -> Iterable[Key]:
        keys = {owner_key(change.obj, "ReplicaSet")}
        if change.old is not None:
            keys.add(owner_key(change.old, "ReplicaSet"))
        return sorted(k for k in keys if k is not None)

    async def reconcile(self, key: Key) -> None:
        rs = self.get(REPLICASETS, key)
        if rs is None or meta(rs).get("deletionTimestamp"):
            return
        spec = rs.get("spec") or {}
        desired = int(spec.get("replicas", 1))
        active = [p for p in owned_pods(self, rs) if is_active(p)]
        failure = await self._scale(rs, key, active, desired)
        rs = self.get(REPLICASETS, key)
        if rs is None:
            return
        await self.update_status(rs, self._status(rs, spec, key, failure))
        if failure is not None:
            raise failure  # retried with a back-off

    async def _scale(self, rs: JsonDict, key: Key, active: list[JsonDict], desired: int) -> errors.ApiError | None:
        """Create or delete pods to have the desired number; the error that stopped the creation, if any."""
        template = (rs.get("spec") or {}).get("template")
        if len(active) < desired:
            for _ in range(desired - len(active)):
                try:
                    await self.create(PODS, key[0], pod_from_template(template, rs))
                except errors.ApiError as exc:  # e.g. denied by an admission webhook, or a quota
                    return exc
        elif len(active) > desired:
            for pod in sorted(active, key=deletion_rank)[: len(active) - desired]:
                await self.delete(pod)
        return None

    def _status(self, rs: JsonDict, spec: JsonDict, key: Key, failure: errors.ApiError | None) -> JsonDict:
        """The ReplicaSet's status: the counts of its pods (zeros omitted), and the failure to create them, if any.

        ``spec``: the one that the pods were scaled to (the ReplicaSet may have changed since then).
        """
        active = [p for p in owned_pods(self, rs) if is_active(p)]
        template_labels = dict(((spec.get("template") or {}).get("metadata") or {}).get("labels") or {})
        counts = count_replicas(self, active, template_labels, int(spec.get("minReadySeconds") or 0), key)
        status: JsonDict = {"replicas": counts["replicas"]}
        for field in ("fullyLabeledReplicas", "readyReplicas", "availableReplicas"):
            if counts[field]:
                status[field] = counts[field]
        status["observedGeneration"] = meta(rs).get("generation", 1)
        conditions = self._conditions(rs, failure)
        if conditions:
            status["conditions"] = conditions
        return status

    def _conditions(self, rs: JsonDict, failure: errors.ApiError | None) -> list[JsonDict]:
        """The ReplicaSet's conditions: ``ReplicaFailure`` while its pods cannot be created, none after."""
        conditions = [dict(c) for c in (rs.get("status") or {}).get("conditions") or []]
        if failure is not None:
            return set_condition(conditions, "ReplicaFailure", "True", "FailedCreate", failure.message, self.now())
        return [c for c in conditions if c.get("type") != "ReplicaFailure"]
