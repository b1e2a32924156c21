"""
Strategic-merge metadata for the built-in kinds that the simulator serves.

Kubernetes declares it in Go struct tags (``patchStrategy``/``patchMergeKey``) and publishes it
in OpenAPI as ``x-kubernetes-patch-strategy``/``x-kubernetes-patch-merge-key``. We have no Go
types, so we keep the same facts as a plain table, keyed by ``group/version/Kind`` (the core group
has no group part: ``v1/Pod``) and by the path of map field names from the object root, with list
items transparent: ``("spec", "template", "spec", "containers", "ports")``.

The table is used by the strategic merge patch, by server-side apply (lists with a merge key are
associative, primitive lists with the ``merge`` strategy are sets), and by the OpenAPI annotator.
Server-side apply keys some lists by more fields than the strategic merge does (``x-kubernetes-list-map-keys``:
ports by number and protocol, so that DNS can serve port 53 over TCP and UDP); those are ``map_keys``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

Path = tuple[str, ...]


@dataclass(frozen=True)
class ListStrategy:
    """
    How a field merges: ``strategy`` is "merge", "retainKeys", "merge,retainKeys" or "replace".

    ``merge_key`` is set for lists of maps merged by key; it is None for primitive lists merged
    as sets (e.g. finalizers) and for maps with the ``retainKeys`` strategy (e.g. a Deployment's
    ``spec.strategy``), which are not lists at all but share the same annotation in the real API.
    """

    merge_key: str | None
    strategy: str
    map_keys: tuple[str, ...] = ()  # server-side apply's list-map keys, where they are not just the merge key

    @property
    def merges(self) -> bool:
        return "merge" in self.strategy.split(",")

    @property
    def list_map_keys(self) -> tuple[str, ...]:
        """The keys that server-side apply (and ``managedFields``) tell the items of a list apart by."""
        return self.map_keys or ((self.merge_key,) if self.merge_key else ())


# The defaults of list-map keys, as the apiserver's schemas declare them: an item that omits such a key
# is keyed with the default (a port without a protocol is the TCP one). Only ports' protocols have one.
KEY_DEFAULTS: Mapping[str, str] = MappingProxyType({"protocol": "TCP"})


def _merge(key: str | None = None, *map_keys: str) -> ListStrategy:
    return ListStrategy(merge_key=key, strategy="merge", map_keys=map_keys)


def _prefixed(prefix: Path, table: Mapping[Path, ListStrategy]) -> dict[Path, ListStrategy]:
    return {prefix + path: strategy for path, strategy in table.items()}


_METADATA: dict[Path, ListStrategy] = {
    ("metadata", "ownerReferences"): _merge("uid"),
    ("metadata", "finalizers"): _merge(),
}

_CONTAINER: dict[Path, ListStrategy] = {
    ("ports",): _merge("containerPort", "containerPort", "protocol"),
    ("env",): _merge("name"),
    ("volumeMounts",): _merge("mountPath"),
    ("volumeDevices",): _merge("devicePath"),
}

_POD_SPEC: dict[Path, ListStrategy] = {
    ("containers",): _merge("name"),
    ("initContainers",): _merge("name"),
    ("ephemeralContainers",): _merge("name"),
    **_prefixed(("containers",), _CONTAINER),
    **_prefixed(("initContainers",), _CONTAINER),
    **_prefixed(("ephemeralContainers",), _CONTAINER),
    ("volumes",): ListStrategy(merge_key="name", strategy="merge,retainKeys"),
    ("imagePullSecrets",): _merge("name"),
    ("hostAliases",): _merge("ip"),
    ("topologySpreadConstraints",): _merge("topologyKey", "topologyKey", "whenUnsatisfiable"),
    ("resourceClaims",): ListStrategy(merge_key="name", strategy="merge,retainKeys"),
    ("schedulingGates",): _merge("name"),
    # tolerations, readinessGates, envFrom: no patch strategy in the real API, i.e. atomic.
}

_POD_STATUS: dict[Path, ListStrategy] = {
    ("conditions",): _merge("type"),
    ("podIPs",): _merge("ip"),
    ("hostIPs",): _merge("ip"),
    ("resourceClaimStatuses",): ListStrategy(merge_key="name", strategy="merge,retainKeys"),
}

_CONDITIONS: dict[Path, ListStrategy] = {("status", "conditions"): _merge("type")}

_POD_TEMPLATE_SPEC: dict[Path, ListStrategy] = {
    **_METADATA,
    **_prefixed(("spec",), _POD_SPEC),
}


def _templated(*prefix: str) -> dict[Path, ListStrategy]:
    """A workload whose pod template lives at ``prefix`` (e.g. ``spec.template``)."""
    return {**_METADATA, **_CONDITIONS, **_prefixed(prefix, _POD_TEMPLATE_SPEC)}


_KINDS: dict[str, dict[Path, ListStrategy]] = {
    "v1/Pod": {
        **_METADATA,
        **_prefixed(("spec",), _POD_SPEC),
        **_prefixed(("status",), _POD_STATUS),
    },
    "v1/PodTemplate": {**_METADATA, **_prefixed(("template",), _POD_TEMPLATE_SPEC)},
    "v1/ReplicationController": _templated("spec", "template"),
    "v1/Service": {
        **_METADATA,
        **_CONDITIONS,
        ("spec", "ports"): _merge("port", "port", "protocol"),
    },
    "v1/ConfigMap": {**_METADATA},
    "v1/Secret": {**_METADATA},
    "v1/Namespace": {**_METADATA, **_CONDITIONS},
    "v1/ServiceAccount": {
        **_METADATA,
        ("secrets",): _merge("name"),
        # imagePullSecrets of a ServiceAccount is atomic (unlike the pod's).
    },
    "v1/PersistentVolumeClaim": {**_METADATA, **_CONDITIONS},
    "v1/PersistentVolume": {**_METADATA},
    "v1/Node": {
        **_METADATA,
        **_CONDITIONS,
        ("spec", "podCIDRs"): _merge(),
        ("status", "addresses"): _merge("type"),
    },
    "v1/Event": {**_METADATA},
    "v1/Endpoints": {**_METADATA},
    "apps/v1/Deployment": {
        **_templated("spec", "template"),
        ("spec", "strategy"): ListStrategy(merge_key=None, strategy="retainKeys"),
    },
    "apps/v1/ReplicaSet": _templated("spec", "template"),
    "apps/v1/StatefulSet": _templated("spec", "template"),
    "apps/v1/DaemonSet": _templated("spec", "template"),
    "apps/v1/ControllerRevision": {**_METADATA},
    "discovery.k8s.io/v1/EndpointSlice": {**_METADATA},  # endpoints and ports are atomic
    "storage.k8s.io/v1/StorageClass": {**_METADATA},
    "batch/v1/Job": _templated("spec", "template"),
    "batch/v1/CronJob": {
        **_METADATA,
        **_prefixed(("spec", "jobTemplate"), _METADATA),
        **_prefixed(("spec", "jobTemplate", "spec", "template"), _POD_TEMPLATE_SPEC),
    },
    "coordination.k8s.io/v1/Lease": {**_METADATA},
    "events.k8s.io/v1/Event": {**_METADATA},
    "networking.k8s.io/v1/Ingress": {**_METADATA},  # rules, paths and TLS are atomic
    "networking.k8s.io/v1/IngressClass": {**_METADATA},
    "networking.k8s.io/v1/NetworkPolicy": {**_METADATA},  # ingress/egress rules are atomic
    "policy/v1/PodDisruptionBudget": {**_METADATA, **_CONDITIONS},
    "autoscaling/v2/HorizontalPodAutoscaler": {**_METADATA, **_CONDITIONS},
    "apiextensions.k8s.io/v1/CustomResourceDefinition": {**_METADATA},
    "admissionregistration.k8s.io/v1/ValidatingWebhookConfiguration": {
        **_METADATA,
        ("webhooks",): _merge("name"),
    },
    "admissionregistration.k8s.io/v1/MutatingWebhookConfiguration": {
        **_METADATA,
        ("webhooks",): _merge("name"),
    },
    # Admission policies: their match conditions merge by name; validations and the rest are atomic.
    "admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy": {
        **_METADATA,
        ("spec", "matchConditions"): _merge("name"),
    },
    "admissionregistration.k8s.io/v1/ValidatingAdmissionPolicyBinding": {**_METADATA},
    # RBAC rules, subjects and roleRefs have no patch strategy: they are atomic.
    "rbac.authorization.k8s.io/v1/Role": {**_METADATA},
    "rbac.authorization.k8s.io/v1/RoleBinding": {**_METADATA},
    "rbac.authorization.k8s.io/v1/ClusterRole": {**_METADATA},
    "rbac.authorization.k8s.io/v1/ClusterRoleBinding": {**_METADATA},
    # Reviews are only created, never patched; their lists are atomic.
    "authorization.k8s.io/v1/LocalSubjectAccessReview": {**_METADATA},
    "authorization.k8s.io/v1/SelfSubjectAccessReview": {**_METADATA},
    "authorization.k8s.io/v1/SelfSubjectRulesReview": {**_METADATA},
    "authorization.k8s.io/v1/SubjectAccessReview": {**_METADATA},
    "authentication.k8s.io/v1/SelfSubjectReview": {**_METADATA},
}

_FROZEN: dict[str, Mapping[Path, ListStrategy]] = {
    kind_key: MappingProxyType(table) for kind_key, table in _KINDS.items()
}
_EMPTY: Mapping[Path, ListStrategy] = MappingProxyType({})


def known_kind_keys() -> frozenset[str]:
    """All kinds with known merge metadata, as ``group/version/Kind`` (``v1/Pod`` for core)."""
    return frozenset(_FROZEN)


def list_strategies(kind_key: str | None) -> Mapping[Path, ListStrategy]:
    """The whole read-only table of one kind; empty for unknown kinds (e.g. custom resources)."""
    if kind_key is None:
        return _EMPTY
    return _FROZEN.get(kind_key, _EMPTY)


def list_strategy(kind_key: str | None, path: Path) -> ListStrategy | None:
    """The strategy of a field at ``path`` (map field names, list items transparent), if any."""
    return list_strategies(kind_key).get(tuple(path))


def metadata_list_strategy(path: Path) -> ListStrategy | None:
    """
    The strategy of an ObjectMeta field at ``path`` (e.g. ``("metadata", "finalizers")``) of any kind.

    Custom resources share ObjectMeta with built-ins, so server-side apply treats their finalizers
    as a set and their owner references as a map even though strategic merge patch is not
    supported for them.
    """
    return _METADATA.get(tuple(path))
