"""The simulated node pool: a few Ready nodes, as their kubelets register them.

Nodes are plain ``v1 Node`` objects: a test may add more (a node created without a status gets one,
as if its kubelet registered it), cordon them (``spec.unschedulable``), mark them NotReady (a status
patch) or delete them; the scheduler and the DaemonSets follow. There are no heartbeats: an idle
cluster writes nothing.
"""

from __future__ import annotations

import hashlib
import uuid

from kopf_sim.kube.objects import JsonDict, meta

from .runtime import NODES, Controller, Key, create_bootstrap

KUBELET = "kubelet"


def node_index(name: str, existing: list[str]) -> int:
    return existing.index(name) + 1 if name in existing else len(existing) + 1


def node_status(name: str, index: int, *, now: str, kubelet_version: str, max_pods: int) -> JsonDict:
    """A Ready node's status (fixed machine facts, derived from the name: the same in every run)."""
    digest = hashlib.sha256(name.encode()).hexdigest()
    resources = {
        "cpu": "8",
        "ephemeral-storage": "100Gi",
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "0",
        "memory": "16Gi",
        "pods": str(max_pods),
    }

    def condition(type_: str, status: str, reason: str, message: str) -> JsonDict:
        return {
            "type": type_,
            "status": status,
            "lastHeartbeatTime": now,
            "lastTransitionTime": now,
            "reason": reason,
            "message": message,
        }

    return {
        "addresses": [
            {"type": "InternalIP", "address": f"172.18.0.{index + 1}"},
            {"type": "Hostname", "address": name},
        ],
        "allocatable": dict(resources),
        "capacity": dict(resources),
        "conditions": [
            condition(
                "MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"
            ),
            condition("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
            condition("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
            condition("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
        ],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        "nodeInfo": {
            "architecture": "amd64",
            "bootID": str(uuid.UUID(digest[:32])),
            "containerRuntimeVersion": "kopf-sim://1",
            "kernelVersion": "6.1.0-sim",
            "kubeProxyVersion": kubelet_version,
            "kubeletVersion": kubelet_version,
            "machineID": digest[32:64],
            "operatingSystem": "linux",
            "osImage": "Simulated Linux",
            "systemUUID": str(uuid.UUID(digest[:32][::-1])),
        },
    }


def node_body(name: str, index: int) -> JsonDict:
    cidr = f"10.244.{index}.0/24"
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "beta.kubernetes.io/arch": "amd64",
                "beta.kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
            },
            "annotations": {
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            },
        },
        "spec": {"podCIDR": cidr, "podCIDRs": [cidr]},
    }


def is_ready(node: JsonDict) -> bool:
    for cond in (node.get("status") or {}).get("conditions") or ():
        if cond.get("type") == "Ready":
            return bool(cond.get("status") == "True")
    return False


class NodeController(Controller):
    name = "nodes"
    primary = NODES
    field_manager = KUBELET

    def bootstrap(self) -> None:
        rtype = self.rtype(NODES)
        names = [meta(n)["name"] for n in self.cluster.objects(NODES)]
        for index in range(1, self.manager.settings.nodes + 1):
            name = f"node-{index}"
            if name in names:
                continue

            def body(name: str = name, index: int = index) -> JsonDict:
                return {**node_body(name, index), "status": self._status(name, index)}

            identity = f"{name}/{index}/{self.manager.settings.max_pods_per_node}"
            create_bootstrap(self.cluster, rtype, None, identity, body, manager=KUBELET)
            names.append(name)

    def initial_keys(self) -> list[Key]:
        return [
            (("", meta(n)["name"]))
            for n in self.cluster.objects(NODES)
            if not (n.get("status") or {}).get("conditions")
        ]  # the bootstrap's own ones are complete

    def _status(self, name: str, index: int) -> JsonDict:
        return node_status(
            name,
            index,
            now=self.now(),
            kubelet_version=self.cluster.version,
            max_pods=self.manager.settings.max_pods_per_node,
        )

    async def reconcile(self, key: Key) -> None:
        """A node registered without a status (e.g. by a test) gets a Ready one from its "kubelet"."""
        node = self.get(NODES, key)
        if node is None or meta(node).get("deletionTimestamp") or (node.get("status") or {}).get("conditions"):
            return
        names = sorted(meta(n)["name"] for n in self.cluster.objects(NODES))
        index = node_index(key[1], names)
        status = {**self._status(key[1], index), **(node.get("status") or {})}
        await self.update_status(node, status)
