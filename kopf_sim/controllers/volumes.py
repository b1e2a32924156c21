"""Storage: the default StorageClass, PersistentVolumeClaims bound to (provisioned) PersistentVolumes.

A claim is bound to an Available volume that fits it (class, access modes, size), or a new volume is
provisioned for it by its class (``standard``, the default class, provisions at once; a class with
``volumeBindingMode: WaitForFirstConsumer`` waits until a pod that uses the claim is scheduled). A
claim without a class gets the default one. Claims and volumes are protected by their finalizers
while in use: a deleted claim stays Terminating until no running pod uses it. A released volume is
deleted (reclaim policy Delete) or kept as Released (Retain). Growing a bound claim grows its volume
when the class allows expansion. No data is stored anywhere.
"""

from __future__ import annotations

from collections.abc import Iterable

from kopf_sim.kube.objects import JsonDict, meta
from kopf_sim.kube.quantities import parse_quantity
from kopf_sim.store.watching import Change

from .runtime import PODS, PVCS, PVS, Controller, Key, create_bootstrap, key_of

STORAGE_CLASSES = ("storage.k8s.io", "storageclasses")
DEFAULT_CLASS_ANNOTATION = "storageclass.kubernetes.io/is-default-class"
PROVISIONER = "kopf.dev/sim-hostpath"
PVC_PROTECTION = "kubernetes.io/pvc-protection"
PV_PROTECTION = "kubernetes.io/pv-protection"
SELECTED_NODE = "volume.kubernetes.io/selected-node"
BETA_CLASS = "volume.beta.kubernetes.io/storage-class"  # the class before spec.storageClassName; still honoured


def claimed_by(pod: JsonDict) -> list[str]:
    return [
        str(v["persistentVolumeClaim"]["claimName"])
        for v in (pod.get("spec") or {}).get("volumes") or []
        if isinstance(v.get("persistentVolumeClaim"), dict) and v["persistentVolumeClaim"].get("claimName")
    ]


def _request(claim: JsonDict) -> str:
    return str((((claim.get("spec") or {}).get("resources") or {}).get("requests") or {}).get("storage") or "0")


class VolumeController(Controller):
    name = "volumes"
    primary = PVCS
    watches = (PVS, PODS, STORAGE_CLASSES)

    def bootstrap(self) -> None:
        if any(self._is_default(sc) for sc in self.cluster.objects(STORAGE_CLASSES)):
            return
        if self.cluster.peek(STORAGE_CLASSES, None, "standard") is not None:
            return
        body = {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": "standard", "annotations": {DEFAULT_CLASS_ANNOTATION: "true"}},
            "provisioner": PROVISIONER,
            "reclaimPolicy": "Delete",
            "volumeBindingMode": "Immediate",
            "allowVolumeExpansion": True,
        }
        create_bootstrap(self.cluster, self.rtype(STORAGE_CLASSES), None, "standard", lambda: body, manager="kopf-sim")

    def initial_keys(self) -> Iterable[Key]:
        return [*(key_of(c) for c in self.cluster.objects(PVCS)), *(key_of(v) for v in self.cluster.objects(PVS))]

    def keys_for(self, change: Change) -> Iterable[Key]:
        if change.key == PVCS:  # a deleted claim releases its volume
            volume = (change.obj.get("spec") or {}).get("volumeName")
            return [key_of(change.obj), *([("", volume)] if volume and change.type == "DELETED" else [])]
        return self.related_keys(change)

    def related_keys(self, change: Change) -> Iterable[Key]:
        """Volume keys are ("", name) (cluster-scoped); claim keys have their namespace."""
        metadata = meta(change.obj)
        if change.key == PVS:
            keys = [("", metadata["name"])]
            ref = (change.obj.get("spec") or {}).get("claimRef") or {}
            if ref.get("namespace") and ref.get("name"):
                keys.append((ref["namespace"], ref["name"]))
            return keys
        if change.key == PODS:
            claims = set(claimed_by(change.obj)) | set(claimed_by(change.old or {}))
            return [(metadata.get("namespace", ""), claim) for claim in sorted(claims)]
        return [key_of(c) for c in self.cluster.objects(PVCS) if (c.get("status") or {}).get("phase") != "Bound"]

    async def reconcile(self, key: Key) -> None:
        if key[0]:
            await self._claim(key)
        else:
            await self._volume(key)

    # -- Claims ------------------------------------------------------------------------------------------

    def _in_use(self, claim: JsonDict) -> bool:
        name = meta(claim)["name"]
        return any(
            name in claimed_by(pod) and (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
            for pod in self.cluster.objects(PODS, meta(claim).get("namespace"))
        )

    async def _claim(self, key: Key) -> None:
        claim = self.get(PVCS, key)
        if claim is None:
            return
        finalizers = list(meta(claim).get("finalizers") or [])
        if meta(claim).get("deletionTimestamp"):
            if PVC_PROTECTION in finalizers and not self._in_use(claim):
                await self._set_finalizers(claim, [f for f in finalizers if f != PVC_PROTECTION])
            return
        if PVC_PROTECTION not in finalizers:
            claim = await self._set_finalizers(claim, [*finalizers, PVC_PROTECTION])
            if claim is None:
                return
        spec = claim.get("spec") or {}
        if spec.get("volumeName"):
            await self._bound(claim)
            return
        if "storageClassName" not in spec and (meta(claim).get("annotations") or {}).get(BETA_CLASS):
            claim = await self.update(
                {**claim, "spec": {**spec, "storageClassName": claim["metadata"]["annotations"][BETA_CLASS]}}
            )
            return
        if "storageClassName" not in spec:
            default = next((sc for sc in self.cluster.objects(STORAGE_CLASSES) if self._is_default(sc)), None)
            if default is not None:
                claim = await self.update({**claim, "spec": {**spec, "storageClassName": meta(default)["name"]}})
                return  # the change brings it back
        volume = self._matching_volume(claim)
        if volume is None:
            volume = await self._provision(claim)
        if volume is None:
            await self.update_status(claim, {**(claim.get("status") or {}), "phase": "Pending"})
            return
        await self._bind(claim, volume)

    def _is_default(self, storage_class: JsonDict) -> bool:
        return (meta(storage_class).get("annotations") or {}).get(DEFAULT_CLASS_ANNOTATION) == "true"

    def _matching_volume(self, claim: JsonDict) -> JsonDict | None:
        """The smallest Available volume of the claim's class that is big enough and has its access modes."""
        spec = claim.get("spec") or {}
        wanted = parse_quantity(_request(claim)) or 0
        candidates = []
        for volume in self.cluster.objects(PVS):
            vspec = volume.get("spec") or {}
            ref = vspec.get("claimRef") or {}
            if ref and not (
                ref.get("name") == meta(claim)["name"]
                and ref.get("namespace") == meta(claim).get("namespace")
                and ref.get("uid") in (None, meta(claim)["uid"])
            ):
                continue
            if meta(volume).get("deletionTimestamp") or (volume.get("status") or {}).get("phase") not in (
                None,
                "Available",
                "Pending",
            ):
                continue
            if vspec.get("storageClassName", "") != spec.get("storageClassName", ""):
                continue
            if not set(spec.get("accessModes") or []) <= set(vspec.get("accessModes") or []):
                continue
            size = parse_quantity((vspec.get("capacity") or {}).get("storage")) or 0
            if size >= wanted:
                candidates.append((size, meta(volume)["name"], volume))
        return min(candidates, key=lambda c: (c[0], c[1]))[2] if candidates else None

    async def _provision(self, claim: JsonDict) -> JsonDict | None:
        spec = claim.get("spec") or {}
        class_name = spec.get("storageClassName")
        storage_class = self.cluster.peek(STORAGE_CLASSES, None, class_name) if class_name else None
        if storage_class is None:
            return None
        if storage_class.get("volumeBindingMode") == "WaitForFirstConsumer" and not self._scheduled_user(claim):
            return None
        name = f"pvc-{meta(claim)['uid']}"
        existing = self.cluster.peek(PVS, None, name)
        if existing is not None:
            return existing
        metadata = meta(claim)
        body: JsonDict = {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {
                "name": name,
                "annotations": {"pv.kubernetes.io/provisioned-by": storage_class.get("provisioner", PROVISIONER)},
                "finalizers": [PV_PROTECTION],
            },
            "spec": {
                "accessModes": list(spec.get("accessModes") or ["ReadWriteOnce"]),
                "capacity": {"storage": _request(claim)},
                "claimRef": {
                    "apiVersion": "v1",
                    "kind": "PersistentVolumeClaim",
                    "name": metadata["name"],
                    "namespace": metadata.get("namespace"),
                    "uid": metadata["uid"],
                    "resourceVersion": metadata.get("resourceVersion"),
                },
                "hostPath": {
                    "path": f"/var/lib/kopf-sim/volumes/{metadata.get('namespace')}/{metadata['name']}",
                    "type": "DirectoryOrCreate",
                },
                "persistentVolumeReclaimPolicy": storage_class.get("reclaimPolicy", "Delete"),
                "storageClassName": class_name,
                "volumeMode": spec.get("volumeMode", "Filesystem"),
            },
        }
        volume = await self.create(PVS, None, body, manager="kopf-sim-provisioner")
        if volume is not None:
            volume = await self.update_status(volume, {"phase": "Bound"}) or volume
        return volume

    def _scheduled_user(self, claim: JsonDict) -> bool:
        return any(
            meta(claim)["name"] in claimed_by(pod) and (pod.get("spec") or {}).get("nodeName")
            for pod in self.cluster.objects(PODS, meta(claim).get("namespace"))
        )

    async def _bind(self, claim: JsonDict, volume: JsonDict) -> None:
        metadata = meta(claim)
        vspec = volume.get("spec") or {}
        if not vspec.get("claimRef"):
            ref = {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "name": metadata["name"],
                "namespace": metadata.get("namespace"),
                "uid": metadata["uid"],
                "resourceVersion": metadata.get("resourceVersion"),
            }
            volume = await self.update({**volume, "spec": {**vspec, "claimRef": ref}}) or volume
        if (volume.get("status") or {}).get("phase") != "Bound":
            volume = await self.update_status(volume, {**(volume.get("status") or {}), "phase": "Bound"}) or volume
        provisioner = (meta(volume).get("annotations") or {}).get("pv.kubernetes.io/provisioned-by")
        annotations = {
            **(metadata.get("annotations") or {}),
            "pv.kubernetes.io/bind-completed": "yes",
            "pv.kubernetes.io/bound-by-controller": "yes",
        }
        if provisioner:
            annotations["volume.beta.kubernetes.io/storage-provisioner"] = provisioner
            annotations["volume.kubernetes.io/storage-provisioner"] = provisioner
        bound = await self.update(
            {
                **claim,
                "metadata": {**claim["metadata"], "annotations": annotations},
                "spec": {**(claim.get("spec") or {}), "volumeName": meta(volume)["name"]},
            }
        )
        if bound is not None:
            await self._bound(bound)

    async def _bound(self, claim: JsonDict) -> None:
        """A bound claim's status; a grown request grows an expandable volume."""
        volume = self.cluster.peek(PVS, None, str((claim.get("spec") or {}).get("volumeName")))
        if volume is None:
            await self.update_status(claim, {**(claim.get("status") or {}), "phase": "Lost"})
            return
        vspec = volume.get("spec") or {}
        capacity = (vspec.get("capacity") or {}).get("storage")
        wanted = _request(claim)
        class_name = vspec.get("storageClassName")
        storage_class = self.cluster.peek(STORAGE_CLASSES, None, class_name) if class_name else None
        if (
            (parse_quantity(wanted) or 0) > (parse_quantity(capacity) or 0)
            and storage_class is not None
            and storage_class.get("allowVolumeExpansion")
        ):
            await self.update(
                {**volume, "spec": {**vspec, "capacity": {**(vspec.get("capacity") or {}), "storage": wanted}}}
            )
            capacity = wanted
        status = {
            "phase": "Bound",
            "accessModes": list(vspec.get("accessModes") or []),
            "capacity": {"storage": capacity},
        }
        await self.update_status(claim, status)

    async def _set_finalizers(self, obj: JsonDict, finalizers: list[str]) -> JsonDict | None:
        metadata = {**obj["metadata"], "finalizers": finalizers}
        if not finalizers:
            del metadata["finalizers"]
        return await self.update({**obj, "metadata": metadata})

    # -- Volumes -----------------------------------------------------------------------------------------

    async def _volume(self, key: Key) -> None:
        volume = self.get(PVS, key)
        if volume is None:
            return
        spec = volume.get("spec") or {}
        ref = spec.get("claimRef") or {}
        claim = self.cluster.peek(PVCS, ref.get("namespace"), ref.get("name", "")) if ref.get("name") else None
        claim_alive = claim is not None and meta(claim).get("uid") == ref.get("uid", meta(claim).get("uid"))
        if meta(volume).get("deletionTimestamp"):
            finalizers = list(meta(volume).get("finalizers") or [])
            if PV_PROTECTION in finalizers and not claim_alive:
                await self._set_finalizers(volume, [f for f in finalizers if f != PV_PROTECTION])
            return
        if not ref:
            if (volume.get("status") or {}).get("phase") in (None, "", "Pending"):  # new (Pending by default)
                await self.update_status(volume, {"phase": "Available"})
            return
        if claim_alive:
            return
        if spec.get("persistentVolumeReclaimPolicy", "Retain") == "Delete":
            await self.delete(volume)
        elif (volume.get("status") or {}).get("phase") != "Released":
            await self.update_status(volume, {"phase": "Released"})
