"""
Every verb of the built-in kinds that workloads touch, through the official ``kubernetes`` client's typed API.

The client deserialises each answer into its models and validates them (the fields its models require,
the types of the others), so a response shaped unlike the apiserver's fails here as it would fail in an
operator: e.g. a ``Status`` where ``delete_namespaced_service`` expects the deleted ``V1Service``, or a
StatefulSet without ``status.replicas``. The audit is synchronous (the client is); the tests run it
against a served simulator and in process (see ``tests/sim`` and ``tests/plugin``), with and without
the built-in controllers, and give the controllers time between the phases.

Each call that fails is recorded as a problem (kind, verb, error) instead of stopping the audit, so a
failed test lists every mismatch at once.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import kubernetes
import pykube

JsonDict = dict[str, Any]

MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"
APPLY = "application/apply-patch+yaml"
POLICIES = (None, "Background", "Foreground", "Orphan")


def _template(name: str, *, restart: str = "Always") -> JsonDict:
    return {
        "metadata": {"labels": {"app": name}},
        "spec": {
            "restartPolicy": restart,
            "containers": [
                {
                    "name": "main",
                    "image": "busybox",
                    "ports": [{"containerPort": 8080}],
                    "resources": {"limits": {"cpu": "100m", "memory": "64Mi"}},
                }
            ],
        },
    }


def _selected(name: str, **spec: Any) -> JsonDict:
    return {"selector": {"matchLabels": {"app": name}}, "template": _template(name), **spec}


def _claim_spec() -> JsonDict:
    return {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}


@dataclasses.dataclass(frozen=True)
class Kind:
    """A built-in kind as the official client names it: its API class, its methods' suffix, its model."""

    api: str  # "CoreV1Api", "AppsV1Api", ...
    method: str  # "stateful_set" as in create_namespaced_stateful_set
    model: str  # "V1StatefulSet"
    spec: Callable[[str], JsonDict]  # the rest of the body by the object's name
    namespaced: bool = True
    status: bool = True  # has a status subresource
    returns_deleted_object: bool = False  # the apiserver answers a DELETE with the object, not a Status


KINDS: dict[str, Kind] = {
    "namespaces": Kind("CoreV1Api", "namespace", "V1Namespace", lambda name: {}, namespaced=False),
    "configmaps": Kind("CoreV1Api", "config_map", "V1ConfigMap", lambda name: {"data": {"k": "v"}}, status=False),
    "secrets": Kind("CoreV1Api", "secret", "V1Secret", lambda name: {"data": {"k": "dg=="}}, status=False),
    "services": Kind(
        "CoreV1Api",
        "service",
        "V1Service",
        lambda name: {"spec": {"selector": {"app": name}, "ports": [{"port": 80, "targetPort": 8080}]}},
        returns_deleted_object=True,
    ),
    "persistentvolumeclaims": Kind(
        "CoreV1Api",
        "persistent_volume_claim",
        "V1PersistentVolumeClaim",
        lambda name: {"spec": _claim_spec()},
        returns_deleted_object=True,
    ),
    "pods": Kind(
        "CoreV1Api", "pod", "V1Pod", lambda name: {"spec": _template(name)["spec"]}, returns_deleted_object=True
    ),
    "deployments": Kind("AppsV1Api", "deployment", "V1Deployment", lambda name: {"spec": _selected(name, replicas=2)}),
    "replicasets": Kind("AppsV1Api", "replica_set", "V1ReplicaSet", lambda name: {"spec": _selected(name)}),
    "statefulsets": Kind(
        "AppsV1Api",
        "stateful_set",
        "V1StatefulSet",
        lambda name: {
            "spec": _selected(
                name,
                serviceName=name,
                volumeClaimTemplates=[{"metadata": {"name": "data"}, "spec": _claim_spec()}],
            )
        },
    ),
    "daemonsets": Kind("AppsV1Api", "daemon_set", "V1DaemonSet", lambda name: {"spec": _selected(name)}),
    "jobs": Kind(
        "BatchV1Api",
        "job",
        "V1Job",
        lambda name: {"spec": {"backoffLimit": 1, "template": _template(name, restart="Never")}},
    ),
    "cronjobs": Kind(
        "BatchV1Api",
        "cron_job",
        "V1CronJob",
        lambda name: {
            "spec": {
                "schedule": "* * * * *",
                "jobTemplate": {"spec": {"template": _template(name, restart="Never")}},
            }
        },
    ),
    # The kinds that operators make beside their workloads (served and stored; no controller acts on them).
    "ingresses": Kind(
        "NetworkingV1Api",
        "ingress",
        "V1Ingress",
        lambda name: {
            "spec": {
                "rules": [
                    {
                        "host": f"{name}.example",
                        "http": {
                            "paths": [
                                {
                                    "path": "/",
                                    "pathType": "Prefix",
                                    "backend": {"service": {"name": name, "port": {"number": 80}}},
                                }
                            ]
                        },
                    }
                ]
            }
        },
    ),
    "networkpolicies": Kind(
        "NetworkingV1Api",
        "network_policy",
        "V1NetworkPolicy",
        lambda name: {"spec": {"podSelector": {"matchLabels": {"app": name}}, "policyTypes": ["Ingress"]}},
        status=False,
    ),
    "poddisruptionbudgets": Kind(
        "PolicyV1Api",
        "pod_disruption_budget",
        "V1PodDisruptionBudget",
        lambda name: {"spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": name}}}},
    ),
    "horizontalpodautoscalers": Kind(
        "AutoscalingV2Api",
        "horizontal_pod_autoscaler",
        "V2HorizontalPodAutoscaler",
        lambda name: {
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
                "minReplicas": 1,
                "maxReplicas": 3,
            }
        },
    ),
}

#: What the built-in controllers make, read back by the audit with the typed lists (kind: list method).
CHILDREN = {
    "pods": ("CoreV1Api", "list_pod_for_all_namespaces", "V1PodList"),
    "replicasets": ("AppsV1Api", "list_replica_set_for_all_namespaces", "V1ReplicaSetList"),
    "controllerrevisions": ("AppsV1Api", "list_controller_revision_for_all_namespaces", "V1ControllerRevisionList"),
    "jobs": ("BatchV1Api", "list_job_for_all_namespaces", "V1JobList"),
    "persistentvolumeclaims": (
        "CoreV1Api",
        "list_persistent_volume_claim_for_all_namespaces",
        "V1PersistentVolumeClaimList",
    ),
    "persistentvolumes": ("CoreV1Api", "list_persistent_volume", "V1PersistentVolumeList"),
    "endpoints": ("CoreV1Api", "list_endpoints_for_all_namespaces", "V1EndpointsList"),
    "endpointslices": ("DiscoveryV1Api", "list_endpoint_slice_for_all_namespaces", "V1EndpointSliceList"),
    "nodes": ("CoreV1Api", "list_node", "V1NodeList"),
    "events": ("CoreV1Api", "list_event_for_all_namespaces", "CoreV1EventList"),
    "serviceaccounts": ("CoreV1Api", "list_service_account_for_all_namespaces", "V1ServiceAccountList"),
    "storageclasses": ("StorageV1Api", "list_storage_class", "V1StorageClassList"),
}


def _model(name: str) -> type:
    model: type = getattr(kubernetes.client, name)
    return model


class ShapeAudit:
    """Drives the verbs of :data:`KINDS` through the typed client; collects what does not deserialise."""

    def __init__(self, client: kubernetes.client.ApiClient, *, namespace: str = "default") -> None:
        self.client = client
        self.namespace = namespace
        self.problems: list[str] = []
        self.calls = 0
        self.created: dict[str, list[str]] = {}  # plural -> names

    # -- plumbing ---------------------------------------------------------------------------------

    def _api(self, name: str) -> Any:
        return getattr(kubernetes.client, name)(self.client)

    def _method(self, plural: str, verb: str, suffix: str = "") -> Callable[..., Any]:
        """``create_namespaced_pod``, ``list_pod_for_all_namespaces``, ``read_namespace_status``, ..."""
        kind = KINDS[plural]
        if verb == "list_all":
            name = f"list_{kind.method}_for_all_namespaces" if kind.namespaced else f"list_{kind.method}"
        elif kind.namespaced:
            name = f"{verb}_namespaced_{kind.method}{suffix}"
        else:
            name = f"{verb}_{kind.method}{suffix}"
        method: Callable[..., Any] = getattr(self._api(kind.api), name)
        return method

    def _call(self, what: str, expected: type | None, method: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Call the client; a failure to deserialise (or a wrong model) is a problem, not an exception."""
        self.calls += 1
        try:
            result = method(*args, **kwargs)
        except Exception as exc:  # the client's validation errors, ApiExceptions, ...
            self.problems.append(f"{what}: {type(exc).__name__}: {str(exc).strip()[:600]}")
            return None
        if expected is not None and not isinstance(result, expected):
            self.problems.append(f"{what}: expected {expected.__name__}, got {type(result).__name__}: {result!r:.300}")
            return None
        return result

    def _verb(
        self, what: str, plural: str, verb: str, *args: Any, name: str | None = None, suffix: str = "", **kwargs: Any
    ) -> Any:
        """A verb of the kind's typed API, with the object's name and namespace in the client's order."""
        kind = KINDS[plural]
        expected = _model(f"{kind.model}List") if verb.startswith("list") else _model(kind.model)
        scope = (self.namespace,) if kind.namespaced and verb != "list_all" else ()
        named = (name,) if name is not None else ()
        method = self._method(plural, verb, suffix)
        return self._call(f"{what} {plural}", expected, method, *named, *scope, *args, **kwargs)

    def body(self, plural: str, name: str) -> JsonDict:
        metadata: JsonDict = {"name": name, "labels": {"audit": "shapes"}}
        return {"metadata": metadata, **KINDS[plural].spec(name)}

    # -- the phases -------------------------------------------------------------------------------

    def create_all(self, suffix: str) -> None:
        """One object of each kind (named ``<kind>-<suffix>``), and one more per propagation policy to delete."""
        for plural, kind in KINDS.items():
            for name in [f"{kind.method.replace('_', '')}-{suffix}", *self._victims(plural, suffix)]:
                if self._verb("create", plural, "create", self.body(plural, name)) is not None:
                    self.created.setdefault(plural, []).append(name)

    def _victims(self, plural: str, suffix: str) -> list[str]:
        method = KINDS[plural].method.replace("_", "")
        return [f"{method}-{suffix}-del-{(policy or 'default').lower()}" for policy in POLICIES]

    def read_all(self) -> None:
        """Read, list (in the namespace and across the cluster) and read the status of every object."""
        for plural, names in self.created.items():
            kind = KINDS[plural]
            self._verb("list", plural, "list")
            if kind.namespaced:
                self._verb("list in all namespaces", plural, "list_all")
            for name in names:
                self._verb("read", plural, "read", name=name)
                if kind.status:
                    self._verb("read the status of", plural, "read", name=name, suffix="_status")

    def read_children(self) -> dict[str, int]:
        """List what the controllers have made, typed; how many of each there are."""
        counts: dict[str, int] = {}
        for plural, (api, method, list_model) in CHILDREN.items():
            listed = self._call(f"list {plural} (children)", _model(list_model), getattr(self._api(api), method))
            counts[plural] = len(listed.items) if listed is not None else -1
        return counts

    def write_all(self) -> None:
        """Replace, patch (merge, strategic, JSON, apply) and write the status of the first object of each kind."""
        for plural, names in self.created.items():
            kind = KINDS[plural]
            name = names[0]
            read = self._verb("read", plural, "read", name=name)
            if read is not None:
                read.metadata.labels = {**(read.metadata.labels or {}), "verb": "replace"}
                self._verb("replace", plural, "replace", read, name=name)
            patches: list[tuple[str, Any]] = [
                (MERGE, {"metadata": {"labels": {"verb": "merge"}}}),
                (STRATEGIC, {"metadata": {"labels": {"verb": "strategic"}}}),
                (JSON_PATCH, [{"op": "replace", "path": "/metadata/labels/verb", "value": "json"}]),
            ]
            for content_type, patch in patches:
                self._verb(f"patch ({content_type})", plural, "patch", patch, name=name, _content_type=content_type)
            applied = {"apiVersion": self._api_version(kind), "kind": kind.model[2:], **self.body(plural, name)}
            apply = {"_content_type": APPLY, "field_manager": "audit", "force": True}
            self._verb("server-side apply", plural, "patch", applied, name=name, **apply)
            if kind.status:
                self._verb("patch the status of", plural, "patch", {}, name=name, suffix="_status", _content_type=MERGE)
                current = self._verb("read", plural, "read", name=name)
                if current is not None:
                    self._verb("replace the status of", plural, "replace", current, name=name, suffix="_status")

    @staticmethod
    def _api_version(kind: Kind) -> str:
        versions = {"CoreV1Api": "v1", "AppsV1Api": "apps/v1", "BatchV1Api": "batch/v1"}
        versions |= {"NetworkingV1Api": "networking.k8s.io/v1", "PolicyV1Api": "policy/v1"}
        return {**versions, "AutoscalingV2Api": "autoscaling/v2"}[kind.api]

    def delete_all(self, suffix: str) -> list[JsonDict]:
        """Delete one object per propagation policy, and see that the answer is the apiserver's.

        Returns the answers of the deletions that the client gives as plain dicts (its ``object`` type),
        checked here to be either a ``Status`` or the object being deleted.
        """
        answers: list[JsonDict] = []
        for plural, kind in KINDS.items():
            if plural not in self.created:
                continue
            for policy, name in zip(POLICIES, self._victims(plural, suffix), strict=True):
                method = self._method(plural, "delete")
                scope = (self.namespace,) if kind.namespaced else ()
                answer = self._call(
                    f"delete {plural} ({policy or 'no policy'})",
                    _model(kind.model) if kind.returns_deleted_object else dict,
                    method,
                    name,
                    *scope,
                    body={"propagationPolicy": policy} if policy else None,
                )
                if isinstance(answer, dict):
                    answers.append(answer)
                    self._check_untyped_deletion(plural, name, answer)
        return answers

    def _check_untyped_deletion(self, plural: str, name: str, answer: JsonDict) -> None:
        kind = KINDS[plural]
        if answer.get("kind") == "Status":
            if answer.get("status") != "Success" or (answer.get("details") or {}).get("name") != name:
                self.problems.append(f"delete {plural}: a Status that is not the success of {name}: {answer}")
        elif answer.get("kind") == kind.model[2:]:
            if not (answer.get("metadata") or {}).get("deletionTimestamp"):
                self.problems.append(f"delete {plural}: the object answered is not being deleted: {answer}")
            _model(kind.model).from_dict(answer)  # it would deserialise into the model, too
        else:
            self.problems.append(f"delete {plural}: neither a Status nor the object: {answer}")

    def begin(self, suffix: str, kubeconfig: str) -> None:
        """The first phase: create (before the controllers act); the nulls of a template with pykube."""
        self.create_all(suffix)
        write_with_nulls(kubeconfig, self.namespace, f"nulls-{suffix}")

    def finish(self, suffix: str) -> dict[str, int]:
        """The second phase (after the controllers have acted): all the other verbs; the children's counts."""
        self.read_all()
        counts = self.read_children()
        self.write_all()
        self.delete_all(suffix)
        self.delete_collections()
        return counts

    def delete_collections(self) -> None:
        """Delete what is left of each namespaced kind by its label, as a collection."""
        for plural, kind in KINDS.items():
            if kind.namespaced:
                method = self._method(plural, "delete_collection")
                status = _model("V1Status")  # as the client declares it (the apiserver answers with the list)
                self._call(
                    f"delete collection of {plural}", status, method, self.namespace, label_selector="audit=shapes"
                )


def write_with_nulls(kubeconfig: str, namespace: str, name: str) -> None:
    """Create a DaemonSet as a rendered template would: the empty quantities are nulls (pykube sends them as is)."""
    api = pykube.HTTPClient(pykube.KubeConfig.from_file(kubeconfig))
    body = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": namespace, "labels": None, "annotations": {"a": "1"}},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "containers": [
                        {
                            "name": "agent",
                            "image": "agent:1",
                            "env": None,
                            "resources": {"limits": {"cpu": None, "memory": "128Mi"}, "requests": {"memory": None}},
                        }
                    ],
                },
            },
        },
    }
    pykube.DaemonSet(api, body).create()
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"containers": [{"name": "agent", "image": "agent:1", "resources": {"limits": {"cpu": None}}}]},
    }
    pykube.Pod(api, pod).create()
