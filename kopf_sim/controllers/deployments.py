"""Deployments: rollouts through ReplicaSets named by the pod-template hash, revisions, status and conditions.

One step per reconciliation, as the real controller goes: create or scale up the new ReplicaSet within
``maxSurge``, scale the old ones down within ``maxUnavailable`` (the unhealthy ones first), or, for the
Recreate strategy, all old pods gone before the new ones start. Revisions are the ReplicaSets'
``deployment.kubernetes.io/revision`` annotations: a template that matches an old ReplicaSet (a
``kubectl rollout undo``) brings that one back with the next revision. The status counts the
ReplicaSets' replicas; the Available and Progressing conditions say what ``kubectl rollout status``
and ``kubectl wait --for=condition=Available`` wait for, including ``progressDeadlineSeconds``.
Proportional scaling of a rollout in flight is simplified: a scale applies to the new ReplicaSet.
"""

from __future__ import annotations

from collections.abc import Iterable

from kopf_sim.kube.objects import JsonDict, clone, meta
from kopf_sim.store.watching import Change

from .podtemplates import resolve_percent, template_hash, without_label
from .replicasets import owned_pods
from .runtime import (
    DEPLOYMENTS,
    PODS,
    REPLICASETS,
    Controller,
    Key,
    condition,
    new_owner_ref,
    owned_by,
    owner_key,
    parse_time,
    set_condition,
)

REVISION = "deployment.kubernetes.io/revision"
REVISION_HISTORY = "deployment.kubernetes.io/revision-history"
DESIRED = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"
HASH_LABEL = "pod-template-hash"
_NOT_COPIED = frozenset(
    {
        "kubectl.kubernetes.io/last-applied-configuration",
        REVISION,
        REVISION_HISTORY,
        DESIRED,
        MAX_REPLICAS,
        "deprecated.deployment.rollback.to",
    }
)


def revision_of(rs: JsonDict) -> int:
    try:
        return int((meta(rs).get("annotations") or {}).get(REVISION, "0"))
    except ValueError:
        return 0


def _by_age(rs: JsonDict) -> tuple[str, str]:
    return (meta(rs).get("creationTimestamp", ""), meta(rs)["name"])


def _spec_replicas(rs: JsonDict) -> int:
    return int((rs.get("spec") or {}).get("replicas", 1))


def _status_count(rs: JsonDict | None, field: str) -> int:
    return int(((rs or {}).get("status") or {}).get(field) or 0)


class DeploymentController(Controller):
    name = "deployments"
    primary = DEPLOYMENTS
    watches = (REPLICASETS, PODS)

    def related_keys(self, change: Change) -> Iterable[Key]:
        if change.key == PODS:  # a pod gone for good: a Recreate rollout may go on
            rs_key = owner_key(change.obj, "ReplicaSet") if change.type == "DELETED" else None
            rs = self.get(REPLICASETS, rs_key) if rs_key is not None else None
            key = owner_key(rs, "Deployment") if rs is not None else None
            return (key,) if key is not None else ()
        keys = {owner_key(change.obj, "Deployment")}
        if change.old is not None:
            keys.add(owner_key(change.old, "Deployment"))
        return sorted(k for k in keys if k is not None)

    # -- The sync ---------------------------------------------------------------------------------------

    async def reconcile(self, key: Key) -> None:
        deployment = self.get(DEPLOYMENTS, key)
        if deployment is None or meta(deployment).get("deletionTimestamp"):
            return
        spec = deployment.get("spec") or {}
        replica_sets = self._replica_sets(deployment)
        new_rs = self._find_new(deployment, replica_sets)
        reason: str | None = None
        if spec.get("paused"):
            pass  # scaling only would go here; a paused Deployment keeps its ReplicaSets as they are
        elif (spec.get("strategy") or {}).get("type") == "Recreate":
            new_rs, reason = await self._recreate(deployment, replica_sets, new_rs)
        else:
            new_rs, reason = await self._roll(deployment, replica_sets, new_rs)
        deployment = self.get(DEPLOYMENTS, key)
        if deployment is None:
            return
        replica_sets = self._replica_sets(deployment)
        new_rs = self._find_new(deployment, replica_sets)
        if new_rs is not None:
            await self._note_revision(deployment, new_rs)
            deployment = self.get(DEPLOYMENTS, key) or deployment
        status = self._status(deployment, replica_sets, new_rs, reason)
        if self._complete(deployment, status):
            await self._clean_up(deployment, replica_sets, new_rs)
        await self.update_status(deployment, status)

    def _replica_sets(self, deployment: JsonDict) -> list[JsonDict]:
        found = [
            obj
            for obj in self.cluster.dependents_of(meta(deployment)["uid"])
            if obj.get("kind") == "ReplicaSet" and owned_by(obj, deployment)
        ]
        return sorted(found, key=_by_age)

    def _find_new(self, deployment: JsonDict, replica_sets: list[JsonDict]) -> JsonDict | None:
        template = (deployment.get("spec") or {}).get("template") or {}
        for rs in replica_sets:  # the oldest one with the same template
            if without_label((rs.get("spec") or {}).get("template"), HASH_LABEL) == template:
                return rs
        return None

    def _limits(self, deployment: JsonDict) -> tuple[int, int, int]:
        spec = deployment.get("spec") or {}
        replicas = int(spec.get("replicas", 1))
        if (spec.get("strategy") or {}).get("type") == "Recreate" or replicas == 0:
            return replicas, 0, 0  # (no surge; and Available means all of them)
        rolling = (spec.get("strategy") or {}).get("rollingUpdate") or {}
        surge = resolve_percent(rolling.get("maxSurge"), replicas, round_up=True, default="25%")
        unavailable = resolve_percent(rolling.get("maxUnavailable"), replicas, round_up=False, default="25%")
        if surge == 0 and unavailable == 0:
            unavailable = 1
        return replicas, surge, min(unavailable, replicas)

    async def _roll(
        self, deployment: JsonDict, replica_sets: list[JsonDict], new_rs: JsonDict | None
    ) -> tuple[JsonDict | None, str | None]:
        replicas, surge, max_unavailable = self._limits(deployment)
        old = [rs for rs in replica_sets if rs is not new_rs]
        current = sum(_spec_replicas(rs) for rs in replica_sets)
        if new_rs is None:
            wanted = max(0, min(replicas + surge - current, replicas))
            return await self._create_new(deployment, replica_sets, wanted), "NewReplicaSetCreated"
        # Scale the new ReplicaSet up (or down to the desired count).
        new_count = _spec_replicas(new_rs)
        if new_count > replicas:
            await self._scale(new_rs, replicas, deployment)
            return new_rs, None
        if new_count < replicas and current < replicas + surge:
            await self._scale(new_rs, new_count + min(replicas + surge - current, replicas - new_count), deployment)
            return new_rs, None
        # Scale the old ones down, keeping at least (replicas - maxUnavailable) available.
        old_total = sum(_spec_replicas(rs) for rs in old)
        if old_total == 0:
            return new_rs, None
        min_available = replicas - max_unavailable
        new_unavailable = _spec_replicas(new_rs) - _status_count(new_rs, "availableReplicas")
        max_down = current - min_available - new_unavailable
        if max_down <= 0:
            return new_rs, None
        scaled = 0
        for rs in old:  # the unhealthy pods of old ReplicaSets go first
            if scaled >= max_down:
                break
            unhealthy = _spec_replicas(rs) - _status_count(rs, "availableReplicas")
            if _spec_replicas(rs) == 0 or unhealthy <= 0:
                continue
            down = min(max_down - scaled, unhealthy)
            await self._scale(rs, _spec_replicas(rs) - down, deployment)
            scaled += down
        refreshed = [self.get(REPLICASETS, (meta(rs).get("namespace", ""), meta(rs)["name"])) for rs in replica_sets]
        available_now = sum(_status_count(rs, "availableReplicas") for rs in refreshed if rs is not None)
        budget = available_now - min_available
        done = 0
        for rs in [r for r in refreshed if r is not None and meta(r)["uid"] != meta(new_rs)["uid"]]:
            if done >= budget:
                break
            if _spec_replicas(rs) == 0:
                continue
            down = min(_spec_replicas(rs), budget - done)
            await self._scale(rs, _spec_replicas(rs) - down, deployment)
            done += down
        return new_rs, None

    async def _recreate(
        self, deployment: JsonDict, replica_sets: list[JsonDict], new_rs: JsonDict | None
    ) -> tuple[JsonDict | None, str | None]:
        replicas = int((deployment.get("spec") or {}).get("replicas", 1))
        old = [rs for rs in replica_sets if rs is not new_rs]
        scaled = False
        for rs in old:
            if _spec_replicas(rs) > 0:
                await self._scale(rs, 0, deployment)
                scaled = True
        if scaled:
            return new_rs, None
        if any(owned_pods(self, rs) for rs in old):
            return new_rs, None  # old pods must be gone (not only terminating) before new ones start
        if new_rs is None:
            return await self._create_new(deployment, replica_sets, replicas), "NewReplicaSetCreated"
        if _spec_replicas(new_rs) != replicas:
            await self._scale(new_rs, replicas, deployment)
        return new_rs, None

    # -- ReplicaSets ------------------------------------------------------------------------------------

    def _annotations(self, deployment: JsonDict, revision: int) -> dict[str, str]:
        replicas, surge, _ = self._limits(deployment)
        copied = {k: v for k, v in (meta(deployment).get("annotations") or {}).items() if k not in _NOT_COPIED}
        copied[DESIRED] = str(replicas)
        copied[MAX_REPLICAS] = str(replicas + surge)
        copied[REVISION] = str(revision)
        return copied

    async def _create_new(self, deployment: JsonDict, replica_sets: list[JsonDict], replicas: int) -> JsonDict | None:
        spec = deployment.get("spec") or {}
        revision = max((revision_of(rs) for rs in replica_sets), default=0) + 1
        collisions = int((deployment.get("status") or {}).get("collisionCount") or 0)
        for _ in range(10):
            hash_ = template_hash(spec.get("template"), collisions or None)
            template: JsonDict = clone(spec.get("template") or {})
            template.setdefault("metadata", {})
            template["metadata"]["labels"] = {**(template["metadata"].get("labels") or {}), HASH_LABEL: hash_}
            selector: JsonDict = clone(spec.get("selector") or {})
            selector["matchLabels"] = {**(selector.get("matchLabels") or {}), HASH_LABEL: hash_}
            name = f"{meta(deployment)['name']}-{hash_}"
            body: JsonDict = {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "metadata": {
                    "name": name,
                    "namespace": meta(deployment).get("namespace"),
                    "labels": dict(template["metadata"]["labels"]),
                    "annotations": self._annotations(deployment, revision),
                    "ownerReferences": [new_owner_ref(deployment)],
                },
                "spec": {
                    "replicas": replicas,
                    "minReadySeconds": int(spec.get("minReadySeconds") or 0),
                    "selector": selector,
                    "template": template,
                },
            }
            existing = self.get(REPLICASETS, (meta(deployment).get("namespace", ""), name))
            if existing is None:
                return await self.create(REPLICASETS, meta(deployment).get("namespace"), body)
            if owned_by(existing, deployment) and without_label(
                (existing.get("spec") or {}).get("template"), HASH_LABEL
            ) == spec.get("template"):
                return existing
            collisions += 1  # a ReplicaSet of that name but another template: hash again
            status = {**(deployment.get("status") or {}), "collisionCount": collisions}
            deployment = await self.update_status(deployment, status) or deployment
        return None

    async def _scale(self, rs: JsonDict, replicas: int, deployment: JsonDict) -> None:
        annotations = dict(meta(rs).get("annotations") or {})
        wanted, surge, _ = self._limits(deployment)
        annotations[DESIRED] = str(wanted)
        annotations[MAX_REPLICAS] = str(wanted + surge)
        spec = {**(rs.get("spec") or {}), "replicas": replicas}
        await self.update({**rs, "metadata": {**rs["metadata"], "annotations": annotations}, "spec": spec})

    async def _note_revision(self, deployment: JsonDict, new_rs: JsonDict) -> None:
        """The new ReplicaSet has the highest revision (an old one brought back gets the next one); the
        Deployment carries it as its own."""
        others = max(
            (revision_of(rs) for rs in self._replica_sets(deployment) if meta(rs)["uid"] != meta(new_rs)["uid"]),
            default=0,
        )
        revision = revision_of(new_rs)
        if revision <= others:
            old_revision, revision = revision, others + 1
            annotations = {**(meta(new_rs).get("annotations") or {}), **self._annotations(deployment, revision)}
            if old_revision:
                history = annotations.get(REVISION_HISTORY)
                annotations[REVISION_HISTORY] = f"{history},{old_revision}" if history else str(old_revision)
            await self.update({**new_rs, "metadata": {**new_rs["metadata"], "annotations": annotations}})
        annotations = dict(meta(deployment).get("annotations") or {})
        if annotations.get(REVISION) != str(revision):
            annotations[REVISION] = str(revision)
            await self.update({**deployment, "metadata": {**deployment["metadata"], "annotations": annotations}})

    async def _clean_up(self, deployment: JsonDict, replica_sets: list[JsonDict], new_rs: JsonDict | None) -> None:
        limit = int((deployment.get("spec") or {}).get("revisionHistoryLimit", 10))
        idle = [
            rs
            for rs in replica_sets
            if rs is not new_rs
            and _spec_replicas(rs) == 0
            and _status_count(rs, "replicas") == 0
            and not meta(rs).get("deletionTimestamp")
        ]
        excess = len(idle) - limit
        if excess <= 0:
            return
        for rs in sorted(idle, key=lambda r: (revision_of(r), _by_age(r)))[:excess]:
            await self.delete(rs)

    # -- Status -----------------------------------------------------------------------------------------

    def _status(
        self, deployment: JsonDict, replica_sets: list[JsonDict], new_rs: JsonDict | None, reason: str | None
    ) -> JsonDict:
        spec = deployment.get("spec") or {}
        old_status = deployment.get("status") or {}
        replicas, _, max_unavailable = self._limits(deployment)
        total = sum(_spec_replicas(rs) for rs in replica_sets)
        available = sum(_status_count(rs, "availableReplicas") for rs in replica_sets)
        counts = {
            "replicas": sum(_status_count(rs, "replicas") for rs in replica_sets),
            "updatedReplicas": _status_count(new_rs, "replicas"),
            "readyReplicas": sum(_status_count(rs, "readyReplicas") for rs in replica_sets),
            "availableReplicas": available,
            "unavailableReplicas": max(total - available, 0),
        }
        status: JsonDict = {"observedGeneration": meta(deployment).get("generation", 1)}
        status.update({k: v for k, v in counts.items() if v})
        now = self.now()
        conditions = [dict(c) for c in old_status.get("conditions") or []]
        if available >= replicas - max_unavailable:
            conditions = set_condition(
                conditions,
                "Available",
                "True",
                "MinimumReplicasAvailable",
                "Deployment has minimum availability.",
                now,
                update_time=True,
            )
        else:
            conditions = set_condition(
                conditions,
                "Available",
                "False",
                "MinimumReplicasUnavailable",
                "Deployment does not have minimum availability.",
                now,
                update_time=True,
            )
        conditions = self._progressing(deployment, conditions, status, new_rs, reason, now)
        failure = next(
            (
                c
                for rs in replica_sets
                for c in (rs.get("status") or {}).get("conditions") or []
                if c.get("type") == "ReplicaFailure" and c.get("status") == "True"
            ),
            None,
        )
        if failure is not None:  # a ReplicaSet cannot create its pods: the Deployment says so too
            conditions = set_condition(
                conditions,
                "ReplicaFailure",
                "True",
                failure.get("reason", ""),
                failure.get("message", ""),
                now,
                update_time=True,
            )
        else:
            conditions = [c for c in conditions if c.get("type") != "ReplicaFailure"]
        status["conditions"] = conditions
        if old_status.get("collisionCount"):
            status["collisionCount"] = old_status["collisionCount"]
        if not spec.get("paused"):
            self._watch_deadline(deployment, conditions, status)
        return status

    def _complete(self, deployment: JsonDict, status: JsonDict) -> bool:
        replicas = int((deployment.get("spec") or {}).get("replicas", 1))
        return bool(
            status.get("updatedReplicas", 0) == replicas
            and status.get("replicas", 0) == replicas
            and status.get("availableReplicas", 0) == replicas
            and status.get("observedGeneration", 0) >= meta(deployment).get("generation", 1)
        )

    def _progressing(
        self,
        deployment: JsonDict,
        conditions: list[JsonDict],
        status: JsonDict,
        new_rs: JsonDict | None,
        reason: str | None,
        now: str,
    ) -> list[JsonDict]:
        spec = deployment.get("spec") or {}
        current = condition(conditions, "Progressing")
        rs_name = meta(new_rs)["name"] if new_rs is not None else ""
        if spec.get("paused"):
            return set_condition(
                conditions, "Progressing", "Unknown", "DeploymentPaused", "Deployment is paused", now, update_time=True
            )
        if current is not None and current.get("reason") == "DeploymentPaused":
            conditions = set_condition(
                conditions,
                "Progressing",
                "Unknown",
                "DeploymentResumed",
                "Deployment is resumed",
                now,
                update_time=True,
            )
            current = condition(conditions, "Progressing")
        if reason == "NewReplicaSetCreated" and new_rs is not None:
            return _progress(conditions, "True", reason, f'Created new replica set "{rs_name}"', now)
        if self._complete(deployment, status):
            return _progress(
                conditions,
                "True",
                "NewReplicaSetAvailable",
                f'ReplicaSet "{rs_name}" has successfully progressed.',
                now,
                touch=current is None or current.get("reason") != "NewReplicaSetAvailable",
            )
        if current is None and new_rs is not None:
            return _progress(conditions, "True", "FoundNewReplicaSet", f'Found new replica set "{rs_name}"', now)
        old = deployment.get("status") or {}
        moved = any(
            status.get(f, 0) != old.get(f, 0) for f in ("updatedReplicas", "readyReplicas", "availableReplicas")
        ) or status.get("replicas", 0) < old.get("replicas", 0)
        if moved and new_rs is not None:
            return _progress(conditions, "True", "ReplicaSetUpdated", f'ReplicaSet "{rs_name}" is progressing.', now)
        if current is not None and current.get("status") == "True" and self._timed_out(deployment, current):
            return set_condition(
                conditions,
                "Progressing",
                "False",
                "ProgressDeadlineExceeded",
                f'ReplicaSet "{rs_name}" has timed out progressing.',
                now,
                update_time=True,
            )
        return conditions

    def _timed_out(self, deployment: JsonDict, progressing: JsonDict) -> bool:
        deadline = (deployment.get("spec") or {}).get("progressDeadlineSeconds", 600)
        updated = parse_time(progressing.get("lastUpdateTime"))
        if deadline is None or updated is None or progressing.get("reason") == "NewReplicaSetAvailable":
            return False
        return (self.wall() - updated).total_seconds() > int(deadline)

    def _watch_deadline(self, deployment: JsonDict, conditions: list[JsonDict], status: JsonDict) -> None:
        """A timer for the progress deadline of a rollout in flight (kubectl rollout status fails then)."""
        progressing = condition(conditions, "Progressing")
        deadline = (deployment.get("spec") or {}).get("progressDeadlineSeconds", 600)
        if (
            progressing is None
            or progressing.get("status") != "True"
            or deadline is None
            or progressing.get("reason") == "NewReplicaSetAvailable"
        ):
            return
        updated = parse_time(progressing.get("lastUpdateTime"))
        if updated is not None:
            remaining = (updated - self.wall()).total_seconds() + int(deadline) + 1
            self.later(max(remaining, 0.0), (meta(deployment).get("namespace", ""), meta(deployment)["name"]))


def _progress(
    conditions: list[JsonDict], status: str, reason: str, message: str, now: str, *, touch: bool = True
) -> list[JsonDict]:
    """The Progressing condition: its update time moves with every step of progress."""
    result = set_condition(conditions, "Progressing", status, reason, message, now, update_time=True)
    if touch:
        for cond in result:
            if cond.get("type") == "Progressing":
                cond["lastUpdateTime"] = now
    return result
