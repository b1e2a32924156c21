"""Services: Endpoints and EndpointSlices of the pods that the selector picks, ready or not.

For every Service with a selector, the endpoints controller keeps an Endpoints object of the same name
(ready pods in ``addresses``, others in ``notReadyAddresses``; terminating pods are left out) and the
EndpointSlice controller one EndpointSlice (``<service>-<5 chars>``, with each endpoint's ready,
serving and terminating conditions). Named target ports are resolved against the pods' container
ports. Services without a selector keep whatever Endpoints their users write. (ClusterIPs are
allocated by the apiserver on creation.)
"""

from __future__ import annotations

from collections.abc import Iterable

from kopf_sim.kube.objects import JsonDict, meta
from kopf_sim.kube.selectors import LabelSelector
from kopf_sim.store.watching import Change

from .podtemplates import ready_since
from .runtime import PODS, SERVICES, Controller, Key, key_of, new_owner_ref, owned_by

ENDPOINTS = ("", "endpoints")
SLICES = ("discovery.k8s.io", "endpointslices")
SERVICE_NAME = "kubernetes.io/service-name"
MANAGED_BY = "endpointslice.kubernetes.io/managed-by"
SLICE_CONTROLLER = "endpointslice-controller.k8s.io"
HEADLESS = "service.kubernetes.io/headless"


def _selector(service: JsonDict) -> LabelSelector | None:
    spec = service.get("spec") or {}
    selector = spec.get("selector")
    if not selector or spec.get("type") == "ExternalName":
        return None
    return LabelSelector.from_spec({"matchLabels": selector})


def _target_port(port: JsonDict, pod: JsonDict) -> int | None:
    target = port.get("targetPort", port.get("port"))
    if isinstance(target, int):
        return target
    if isinstance(target, str) and target.isdigit():
        return int(target)
    for container in (pod.get("spec") or {}).get("containers") or []:
        for container_port in container.get("ports") or []:
            if container_port.get("name") == target and container_port.get("protocol", "TCP") == port.get(
                "protocol", "TCP"
            ):
                return int(container_port.get("containerPort", 0))
    return None


def _ports(service: JsonDict, pod: JsonDict) -> list[JsonDict]:
    result = []
    for port in (service.get("spec") or {}).get("ports") or []:
        number = _target_port(port, pod)
        if number is None:
            continue
        entry: JsonDict = {"port": number, "protocol": port.get("protocol", "TCP")}
        if port.get("name"):
            entry["name"] = port["name"]
        if port.get("appProtocol"):
            entry["appProtocol"] = port["appProtocol"]
        result.append(entry)
    return result


def _target_ref(pod: JsonDict) -> JsonDict:
    metadata = meta(pod)
    return {"kind": "Pod", "name": metadata["name"], "namespace": metadata.get("namespace"), "uid": metadata["uid"]}


class ServiceController(Controller):
    name = "services"
    primary = SERVICES
    watches = (PODS, ENDPOINTS, SLICES)

    def related_keys(self, change: Change) -> Iterable[Key]:
        metadata = meta(change.obj)
        namespace = metadata.get("namespace", "")
        if change.key == ENDPOINTS:
            return ((namespace, metadata["name"]),) if change.type == "DELETED" else ()
        if change.key == SLICES:
            name = (metadata.get("labels") or {}).get(SERVICE_NAME)
            return ((namespace, name),) if name and change.type == "DELETED" else ()
        labels = [metadata.get("labels") or {}]
        if change.old is not None:
            labels.append(meta(change.old).get("labels") or {})
        keys = []
        for service in self.cluster.objects(SERVICES, namespace):
            selector = _selector(service)
            if selector is not None and any(selector.matches(pod_labels) for pod_labels in labels):
                keys.append(key_of(service))
        return keys

    async def reconcile(self, key: Key) -> None:
        service = self.get(SERVICES, key)
        if service is None or meta(service).get("deletionTimestamp"):
            endpoints = self.cluster.peek(ENDPOINTS, key[0], key[1])
            if endpoints is not None and service is None:
                await self.delete(endpoints)
            return
        selector = _selector(service)
        if selector is None:
            return
        pods = [
            p
            for p in self.cluster.objects(PODS, key[0])
            if selector.matches(meta(p).get("labels"))
            and (p.get("status") or {}).get("podIP")
            and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
        ]
        await self._endpoints(service, pods)
        await self._slice(service, pods)

    async def _endpoints(self, service: JsonDict, pods: list[JsonDict]) -> None:
        publish = bool((service.get("spec") or {}).get("publishNotReadyAddresses"))
        subsets: dict[str, JsonDict] = {}
        for pod in pods:
            if meta(pod).get("deletionTimestamp"):
                continue
            ports = _ports(service, pod)
            group = subsets.setdefault(repr(ports), {"ports": ports} if ports else {})
            address: JsonDict = {"ip": pod["status"]["podIP"], "targetRef": _target_ref(pod)}
            spec = pod.get("spec") or {}
            if spec.get("hostname") and spec.get("subdomain"):
                address["hostname"] = spec["hostname"]
            if spec.get("nodeName"):
                address["nodeName"] = spec["nodeName"]
            field = "addresses" if publish or ready_since(pod) is not None else "notReadyAddresses"
            group.setdefault(field, []).append(address)
        labels = dict(meta(service).get("labels") or {})
        if (service.get("spec") or {}).get("clusterIP") == "None":
            labels[HEADLESS] = ""
        body: JsonDict = {
            "apiVersion": "v1",
            "kind": "Endpoints",
            "metadata": {"name": meta(service)["name"], "namespace": meta(service).get("namespace")},
        }
        if labels:
            body["metadata"]["labels"] = labels
        if subsets:
            body["subsets"] = [_sorted_subset(s) for _, s in sorted(subsets.items())]
        existing = self.cluster.peek(ENDPOINTS, meta(service).get("namespace"), meta(service)["name"])
        if existing is None:
            await self.create(ENDPOINTS, meta(service).get("namespace"), body)
        elif existing.get("subsets") != body.get("subsets") or meta(existing).get("labels") != body["metadata"].get(
            "labels"
        ):
            metadata = {**existing["metadata"]}
            if labels:
                metadata["labels"] = labels
            else:
                metadata.pop("labels", None)
            new = {**existing, "metadata": metadata}
            new.pop("subsets", None)
            if subsets:
                new["subsets"] = body["subsets"]
            await self.update(new)

    async def _slice(self, service: JsonDict, pods: list[JsonDict]) -> None:
        endpoints: list[JsonDict] = []
        ports: list[JsonDict] = []
        for pod in sorted(pods, key=lambda p: meta(p)["name"]):
            terminating = bool(meta(pod).get("deletionTimestamp"))
            ready = ready_since(pod) is not None
            endpoint: JsonDict = {
                "addresses": [pod["status"]["podIP"]],
                "conditions": {"ready": ready and not terminating, "serving": ready, "terminating": terminating},
                "targetRef": _target_ref(pod),
            }
            if (pod.get("spec") or {}).get("nodeName"):
                endpoint["nodeName"] = pod["spec"]["nodeName"]
            endpoints.append(endpoint)
            ports = ports or _ports(service, pod)
        labels = {
            **(meta(service).get("labels") or {}),
            SERVICE_NAME: meta(service)["name"],
            MANAGED_BY: SLICE_CONTROLLER,
        }
        existing = next(
            (s for s in self.cluster.objects(SLICES, meta(service).get("namespace")) if owned_by(s, service)), None
        )
        if existing is None:
            body = {
                "apiVersion": "discovery.k8s.io/v1",
                "kind": "EndpointSlice",
                "addressType": "IPv4",
                "metadata": {
                    "generateName": f"{meta(service)['name']}-",
                    "namespace": meta(service).get("namespace"),
                    "labels": labels,
                    "ownerReferences": [new_owner_ref(service)],
                },
                "endpoints": endpoints,
                "ports": ports,
            }
            await self.create(SLICES, meta(service).get("namespace"), body)
        elif (
            existing.get("endpoints") != endpoints
            or existing.get("ports") != ports
            or meta(existing).get("labels") != labels
        ):
            await self.update(
                {
                    **existing,
                    "metadata": {**existing["metadata"], "labels": labels},
                    "endpoints": endpoints,
                    "ports": ports,
                }
            )


def _sorted_subset(subset: JsonDict) -> JsonDict:
    for field in ("addresses", "notReadyAddresses"):
        if field in subset:
            subset[field] = sorted(subset[field], key=lambda a: a["ip"])
    return subset
