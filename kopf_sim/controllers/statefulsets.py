"""StatefulSets: ordered pods ``<name>-0 … <name>-N-1`` with stable identities and their own volume claims.

With ``podManagementPolicy: OrderedReady`` (the default), pod N+1 is created only when pod N is
Running and Ready, and scaling down removes the highest ordinal first, one at a time; ``Parallel``
does all at once. Every pod gets the PersistentVolumeClaims of ``volumeClaimTemplates``
(``<template>-<name>-<ordinal>``). The claims' owners follow ``persistentVolumeClaimRetentionPolicy``, as in
Kubernetes: the StatefulSet controls them with ``whenDeleted: Delete`` (they go with it), the pod of a claim beyond
the replicas owns it with ``whenScaled: Delete`` (it goes with the pod that the scale-down deletes), nothing with
``Retain`` (the default: the claims stay, their data kept for the next pod of that ordinal).
A RollingUpdate replaces the pods from the highest ordinal down to the ``partition``, one by one,
each only when the others are ready; OnDelete waits for the pods to be deleted. Revisions are
ControllerRevisions; the status reports the current and the update revisions.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from kopf_sim.kube.objects import JsonDict, clone, meta
from kopf_sim.store.watching import Change

from .podtemplates import REVISION_LABEL, count_available, is_active, pod_from_template, ready_since, with_revision
from .replicasets import owned_pods
from .revisions import ensure_revision, prune_revisions
from .runtime import PODS, PVCS, STATEFULSETS, Controller, Key, new_owner_ref, owner_key

POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"


def _ordinal(sts: JsonDict, pod: JsonDict) -> int | None:
    prefix = f"{meta(sts)['name']}-"
    name = meta(pod)["name"]
    if not name.startswith(prefix) or not name[len(prefix) :].isdigit():
        return None
    return int(name[len(prefix) :])


@dataclasses.dataclass(frozen=True)
class _Plan:
    """How a StatefulSet's pods are managed: in order or in parallel, rolled or not (from where), which revisions."""

    ordered: bool
    rolling: bool
    partition: int
    update_revision: str
    current_revision: str

    @classmethod
    def of(cls, spec: JsonDict, *, update_revision: str, current_revision: str) -> _Plan:
        strategy = spec.get("updateStrategy") or {}
        return cls(
            ordered=spec.get("podManagementPolicy", "OrderedReady") != "Parallel",
            rolling=strategy.get("type", "RollingUpdate") == "RollingUpdate",
            partition=int((strategy.get("rollingUpdate") or {}).get("partition", 0)),
            update_revision=update_revision,
            current_revision=current_revision,
        )


def _retention(sts: JsonDict) -> tuple[str, str]:
    """The StatefulSet's claim retention policy: ``whenDeleted`` and ``whenScaled`` (each Retain by default)."""
    policy = (sts.get("spec") or {}).get("persistentVolumeClaimRetentionPolicy") or {}
    return str(policy.get("whenDeleted") or "Retain"), str(policy.get("whenScaled") or "Retain")


def _healthy(pod: JsonDict) -> bool:
    return is_active(pod) and (pod.get("status") or {}).get("phase") == "Running" and ready_since(pod) is not None


class StatefulSetController(Controller):
    name = "statefulsets"
    primary = STATEFULSETS
    watches = (PODS,)

    def related_keys(self, change: Change) -> Iterable[Key]:
        key = owner_key(change.obj, "StatefulSet")
        return (key,) if key is not None else ()

    async def reconcile(self, key: Key) -> None:
        sts = self.get(STATEFULSETS, key)
        if sts is None or meta(sts).get("deletionTimestamp"):
            return
        spec = sts.get("spec") or {}
        update_revision, _ = await ensure_revision(self, sts)
        current_revision = (sts.get("status") or {}).get("currentRevision") or update_revision
        replicas = int(spec.get("replicas", 1))
        start = int((spec.get("ordinals") or {}).get("start", 0))
        pods = {o: p for p in owned_pods(self, sts) if (o := _ordinal(sts, p)) is not None}
        wanted = range(start, start + replicas)
        plan = _Plan.of(spec, update_revision=update_revision, current_revision=current_revision)
        await self._claims_owned_by_policy(sts, pods, wanted)  # before a scale-down deletes a pod
        blocked = await self._scale_up(sts, pods, wanted, plan) or await self._scale_down(pods, wanted, plan)
        if not blocked and plan.rolling and all(o in pods and _healthy(pods[o]) for o in wanted):
            await self._roll(pods, wanted, plan)
        await self._sync_status(sts, key, update_revision, current_revision)
        await prune_revisions(self, sts, {update_revision, current_revision})

    async def _scale_up(self, sts: JsonDict, pods: dict[int, JsonDict], wanted: range, plan: _Plan) -> bool:
        """Create the missing pods, replace the finished ones (in order, one at a time if ordered); whether blocked."""
        for ordinal in wanted:
            pod = pods.get(ordinal)
            if pod is None:
                use_update = ordinal >= plan.partition or not plan.rolling
                revision = plan.update_revision if use_update else plan.current_revision
                await self._create_pod(sts, ordinal, revision, plan.update_revision)
            elif (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed") and not meta(pod).get(
                "deletionTimestamp"
            ):
                await self.delete(pod)  # recreated with the same identity on the next pass
            elif not plan.ordered or _healthy(pod):
                continue
            if plan.ordered:
                return True
        return False

    async def _scale_down(self, pods: dict[int, JsonDict], wanted: range, plan: _Plan) -> bool:
        """Delete the pods beyond the wanted ordinals, the highest first (one at a time if ordered); whether blocked."""
        for ordinal in sorted((o for o in pods if o not in wanted), reverse=True):
            pod = pods[ordinal]
            if not meta(pod).get("deletionTimestamp"):
                await self.delete(pod)
            if plan.ordered:
                return True
        return False

    async def _roll(self, pods: dict[int, JsonDict], wanted: range, plan: _Plan) -> None:
        """The rolling update: the highest pod at or above the partition not of the update revision goes."""
        for ordinal in sorted(wanted, reverse=True):
            if ordinal < plan.partition:
                break
            pod = pods[ordinal]
            if (meta(pod).get("labels") or {}).get(REVISION_LABEL) != plan.update_revision:
                await self.delete(pod)
                break

    async def _create_pod(self, sts: JsonDict, ordinal: int, revision: str, update_revision: str) -> None:
        spec = sts.get("spec") or {}
        name = f"{meta(sts)['name']}-{ordinal}"
        template = spec.get("template") if revision == update_revision else self._template_of(sts, revision)
        claims = await self._claims(sts, ordinal)
        labels = {REVISION_LABEL: revision, POD_NAME_LABEL: name, POD_INDEX_LABEL: str(ordinal)}
        pod = pod_from_template(template, sts, name=name, labels=labels)
        pod["spec"].setdefault("hostname", name)
        if spec.get("serviceName"):
            pod["spec"].setdefault("subdomain", spec["serviceName"])
        volumes = [v for v in pod["spec"].get("volumes") or [] if v.get("name") not in claims]
        volumes += [{"name": t, "persistentVolumeClaim": {"claimName": c}} for t, c in claims.items()]
        if volumes:
            pod["spec"]["volumes"] = volumes
        await self.create(PODS, meta(sts).get("namespace"), pod)

    def _template_of(self, sts: JsonDict, revision: str) -> JsonDict:
        from .revisions import owned_revisions

        for rev in owned_revisions(self, sts):
            if meta(rev)["name"] == revision:
                template = dict(((rev.get("data") or {}).get("spec") or {}).get("template") or {})
                template.pop("$patch", None)
                return template
        return dict((sts.get("spec") or {}).get("template") or {})

    async def _claims(self, sts: JsonDict, ordinal: int) -> dict[str, str]:
        """Create the pod's volume claims that do not exist yet; their names by template name."""
        spec = sts.get("spec") or {}
        selector = (spec.get("selector") or {}).get("matchLabels") or {}
        claims: dict[str, str] = {}
        for template in spec.get("volumeClaimTemplates") or []:
            template_meta = template.get("metadata") or {}
            claim_name = f"{template_meta.get('name')}-{meta(sts)['name']}-{ordinal}"
            claims[str(template_meta.get("name"))] = claim_name
            if self.cluster.peek(PVCS, meta(sts).get("namespace"), claim_name) is not None:
                continue
            metadata: JsonDict = {
                "name": claim_name,
                "namespace": meta(sts).get("namespace"),
                "labels": {**(template_meta.get("labels") or {}), **selector},
            }
            if template_meta.get("annotations"):
                metadata["annotations"] = dict(template_meta["annotations"])
            if _retention(sts)[0] == "Delete":
                metadata["ownerReferences"] = [new_owner_ref(sts)]
            body = {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": metadata,
                "spec": clone(template.get("spec") or {}),
            }
            await self.create(PVCS, meta(sts).get("namespace"), body)
        return claims

    async def _claims_owned_by_policy(self, sts: JsonDict, pods: dict[int, JsonDict], wanted: range) -> None:
        """Give the pods' claims the owners that the retention policy asks for, on every pass (a changed policy
        applies to the claims made before, as in Kubernetes): the StatefulSet as their controller (``whenDeleted:
        Delete``), or, for the claims of a pod beyond the replicas (``whenScaled: Delete``), that pod instead; the
        references of a ``Retain`` are removed. A claim that another object controls is left alone."""
        when_deleted, when_scaled = _retention(sts)
        templates = [
            str((t.get("metadata") or {}).get("name"))
            for t in (sts.get("spec") or {}).get("volumeClaimTemplates") or ()
        ]
        namespace, sts_uid = meta(sts).get("namespace"), meta(sts)["uid"]
        for ordinal, pod in pods.items():
            condemned = ordinal not in wanted
            if when_scaled == "Delete" and condemned:
                owners = [
                    {k: v for k, v in new_owner_ref(pod).items() if k not in ("controller", "blockOwnerDeletion")}
                ]
            else:
                owners = [new_owner_ref(sts)] if when_deleted == "Delete" else []
            ours = {sts_uid, meta(pod)["uid"]}
            for template in templates:
                claim = self.cluster.peek(PVCS, namespace, f"{template}-{meta(sts)['name']}-{ordinal}")
                if claim is None or meta(claim).get("deletionTimestamp"):
                    continue
                refs = list(meta(claim).get("ownerReferences") or ())
                if any(ref.get("controller") and ref.get("uid") not in ours for ref in refs):
                    continue  # another controller's: not the StatefulSet's to delete
                kept = [ref for ref in refs if ref.get("uid") not in ours or ref in owners]
                wanted_refs = kept + [owner for owner in owners if owner not in kept]
                if wanted_refs != refs:
                    metadata = {k: v for k, v in meta(claim).items() if k != "ownerReferences"}
                    await self.update(
                        {**claim, "metadata": {**metadata, **({"ownerReferences": wanted_refs} if wanted_refs else {})}}
                    )

    async def _sync_status(self, sts: JsonDict, key: Key, update_revision: str, current_revision: str) -> None:
        sts = self.get(STATEFULSETS, key) or sts
        spec = sts.get("spec") or {}
        pods = [p for p in owned_pods(self, sts) if _ordinal(sts, p) is not None]
        active = [p for p in pods if is_active(p)]
        now = self.wall()
        min_ready = int(spec.get("minReadySeconds") or 0)
        updated = with_revision(active, update_revision)
        replicas = int(spec.get("replicas", 1))
        if updated == replicas and len(active) == replicas:
            current_revision = update_revision
        current = with_revision(active, current_revision)
        ready = sum(1 for p in active if ready_since(p) is not None)
        available_count, soonest = count_available(active, min_ready, now)
        if soonest is not None:
            self.later(soonest, key)
        status: JsonDict = {"observedGeneration": meta(sts).get("generation", 1), "replicas": len(active)}
        for field, value in (("readyReplicas", ready), ("currentReplicas", current), ("updatedReplicas", updated)):
            if value:
                status[field] = value
        status.update(
            currentRevision=current_revision,
            updateRevision=update_revision,
            collisionCount=0,
            availableReplicas=available_count,
        )
        await self.update_status(sts, status)
