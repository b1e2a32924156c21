"""Which built-in controllers run, and the timings of the simulated machines (virtual seconds under the plugin)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

__all__ = ["CONTROLLERS", "ControllerSettings", "parse_selection"]

#: Every switchable controller, in the order they start.
CONTROLLERS = (
    "nodes",  # the simulated node pool (and the status of nodes added later)
    "namespaces",  # every namespace's "default" ServiceAccount and "kube-root-ca.crt" ConfigMap
    "volumes",  # the default StorageClass; PersistentVolumeClaims bound to generated PersistentVolumes
    "pods",  # the scheduler and the kubelets: pods' phases, readiness, restarts, graceful deletion
    "replicasets",  # ReplicaSets -> Pods
    "deployments",  # Deployments -> ReplicaSets (rollouts, revisions, conditions)
    "statefulsets",  # StatefulSets -> ordered Pods and their PersistentVolumeClaims
    "daemonsets",  # DaemonSets -> a Pod per node
    "jobs",  # Jobs -> Pods to completion; finished Jobs deleted after their TTL
    "cronjobs",  # CronJobs -> Jobs on schedule
    "services",  # Services -> Endpoints and EndpointSlices of the ready pods
)

#: The CA bundle published in every namespace as ``kube-root-ca.crt`` (a fixed, self-signed one by default,
#: so that runs are reproducible; ``kopf-sim serve --tls`` publishes the CA it serves with).
DEFAULT_ROOT_CA = """\
-----BEGIN CERTIFICATE-----
MIIBUjCB+aADAgECAhR4a1654iyyk4KkLU1DewMmLZ33vTAKBggqhkjOPQQDAjAW
MRQwEgYDVQQDDAtrb3BmLXNpbS1jYTAgFw0yNTAxMDEwMDAwMDBaGA8yMTI1MDEw
MTAwMDAwMFowFjEUMBIGA1UEAwwLa29wZi1zaW0tY2EwWTATBgcqhkjOPQIBBggq
hkjOPQMBBwNCAAQDArnGjKpEbDZvPtm5/2m1OYuwk47sQuUGsTS6Tgd9GTIAZMKN
buRta7jIb06mIdbXPrddQRk15PSeIWxTekJIoyMwITAPBgNVHRMBAf8EBTADAQH/
MA4GA1UdDwEB/wQEAwIBhjAKBggqhkjOPQQDAgNIADBFAiEAz2BgCPh44IY55eOZ
poNlH3LiTIVjxHuM87PL1o3J3D4CIBQinvUiZtZoGMk+qk66wJhSvo/fJyLHtpt9
Rr9QIOV7
-----END CERTIFICATE-----
"""


@dataclasses.dataclass(frozen=True)
class ControllerSettings:
    """What runs and how fast the simulated machines are; all times are in (virtual) seconds.

    A pod is scheduled at once, its containers run ``pod_start_delay`` after that (image pull and
    start), and become ready ``pod_ready_delay`` later (or after the readiness probe's initial delay,
    if longer). Pods that run to completion (``restartPolicy`` Never or OnFailure) succeed
    ``pod_run_time`` after they start, unless a fate says otherwise. A deleted pod's containers take
    ``pod_stop_delay`` to stop, at most its grace period. Fates override all of these per pod.
    """

    enabled: frozenset[str] = frozenset(CONTROLLERS)
    nodes: int = 3
    max_pods_per_node: int = 110
    pod_start_delay: float = 1.0
    pod_ready_delay: float = 1.0
    pod_run_time: float = 1.0
    pod_stop_delay: float = 1.0
    root_ca: str = DEFAULT_ROOT_CA

    def __post_init__(self) -> None:
        unknown = set(self.enabled) - set(CONTROLLERS)
        if unknown:
            raise ValueError(
                f"Unknown controllers: {', '.join(sorted(unknown))}; known ones are: {', '.join(CONTROLLERS)}."
            )
        if self.nodes < 0 or self.max_pods_per_node < 0:
            raise ValueError("The numbers of nodes and of pods per node cannot be negative.")
        for name in ("pod_start_delay", "pod_ready_delay", "pod_run_time", "pod_stop_delay"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} cannot be negative, got {getattr(self, name)!r}.")

    def with_enabled(self, names: Iterable[str]) -> ControllerSettings:
        return dataclasses.replace(self, enabled=frozenset(names))


def parse_selection(spec: str | Iterable[str] | bool | None) -> frozenset[str]:
    """Which controllers a selection names: ``"all"``, ``"none"``, ``"pods,replicasets"``, ``"all,-cronjobs"``.

    Also ``True``/``False`` (all/none) and iterables of such words. Words are applied left to right:
    a name adds a controller, ``-name`` removes it; ``all`` and ``none`` reset the set.
    """
    if spec is None or spec is True:
        return frozenset(CONTROLLERS)
    if spec is False:
        return frozenset()
    words = [w.strip() for w in spec.split(",")] if isinstance(spec, str) else [str(w).strip() for w in spec]
    words = [w for w in words if w]
    selected: set[str] = set() if words and not words[0].startswith("-") else set(CONTROLLERS)
    for word in words:
        name = word.lstrip("-").lower()
        if name == "all":
            selected = set(CONTROLLERS) if not word.startswith("-") else set()
        elif name == "none":
            selected = set()
        elif name not in CONTROLLERS:
            raise ValueError(f"Unknown controller {name!r}; known ones are: all, none, {', '.join(CONTROLLERS)}.")
        elif word.startswith("-"):
            selected.discard(name)
        else:
            selected.add(name)
    return frozenset(selected)
