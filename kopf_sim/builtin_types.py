"""The catalogue of built-in resources, with their real group/version/kind/plural/short names/scope."""
from __future__ import annotations

import functools

from .resources import ALL_VERBS, PrinterColumn, ResourceType, ScalePaths

_STATUS = frozenset({"status"})
_SCALE = frozenset({"status", "scale"})
_POD_FIELDS = frozenset({
    "spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
    "spec.hostNetwork", "status.phase", "status.podIP", "status.nominatedNodeName",
})
_EVENT_FIELDS = frozenset({
    "involvedObject.kind", "involvedObject.namespace", "involvedObject.name", "involvedObject.uid",
    "involvedObject.apiVersion", "involvedObject.resourceVersion", "involvedObject.fieldPath",
    "reason", "reportingComponent", "source", "type",
})
_EVENTS_V1_FIELDS = frozenset({
    "regarding.kind", "regarding.namespace", "regarding.name", "regarding.uid",
    "regarding.apiVersion", "regarding.resourceVersion", "regarding.fieldPath",
    "reason", "reportingController", "type",
})
_AGE = PrinterColumn("Age", "date", ".metadata.creationTimestamp")


def _t(group: str, version: str, kind: str, plural: str, *, namespaced: bool = True,
       short: tuple[str, ...] = (), categories: tuple[str, ...] = (), sub: frozenset[str] = frozenset(),
       generation: bool = False, fields: frozenset[str] = frozenset(),
       columns: tuple[PrinterColumn, ...] = (), scale: ScalePaths | None = None,
       verbs: tuple[str, ...] = ALL_VERBS) -> ResourceType:
    return ResourceType(
        group=group, version=version, kind=kind, plural=plural, singular=kind.lower(),
        namespaced=namespaced, short_names=short, categories=categories, subresources=sub,
        has_generation=generation, field_selectors=fields, printer_columns=(*columns, _AGE),
        scale=scale, storage_version=version, verbs=verbs,
    )


@functools.cache
def builtin_types() -> tuple[ResourceType, ...]:
    """Built once: the types are frozen, and each cluster indexes them in a catalogue of its own."""
    replicas = ScalePaths(".spec.replicas", ".status.replicas", ".spec.selector")
    return (
        _t("", "v1", "Namespace", "namespaces", namespaced=False, short=("ns",), sub=frozenset({"status"}),
           fields=frozenset({"status.phase"}),
           columns=(PrinterColumn("Status", "string", ".status.phase"),)),
        _t("", "v1", "Pod", "pods", short=("po",), categories=("all",), sub=_STATUS, fields=_POD_FIELDS,
           generation=True, columns=(PrinterColumn("Status", "string", ".status.phase"),)),
        _t("", "v1", "Service", "services", short=("svc",), categories=("all",), sub=_STATUS,
           columns=(PrinterColumn("Type", "string", ".spec.type"),
                    PrinterColumn("Cluster-IP", "string", ".spec.clusterIP"))),
        _t("", "v1", "ConfigMap", "configmaps", short=("cm",)),
        _t("", "v1", "Secret", "secrets", fields=frozenset({"type"}),
           columns=(PrinterColumn("Type", "string", ".type"),)),
        _t("", "v1", "ServiceAccount", "serviceaccounts", short=("sa",)),
        _t("", "v1", "Event", "events", short=("ev",), fields=_EVENT_FIELDS,
           columns=(PrinterColumn("Type", "string", ".type"), PrinterColumn("Reason", "string", ".reason"),
                    PrinterColumn("Message", "string", ".message"))),
        _t("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", short=("pvc",), sub=_STATUS,
           columns=(PrinterColumn("Status", "string", ".status.phase"),)),
        _t("", "v1", "PersistentVolume", "persistentvolumes", namespaced=False, short=("pv",), sub=_STATUS,
           columns=(PrinterColumn("Status", "string", ".status.phase"),)),
        _t("apps", "v1", "Deployment", "deployments", short=("deploy",), categories=("all",), sub=_SCALE,
           generation=True, scale=replicas,
           columns=(PrinterColumn("Ready", "string", ".status.readyReplicas", total_path=".spec.replicas"),
                    PrinterColumn("Up-to-date", "integer", ".status.updatedReplicas", default=0),
                    PrinterColumn("Available", "integer", ".status.availableReplicas", default=0))),
        _t("apps", "v1", "ReplicaSet", "replicasets", short=("rs",), categories=("all",), sub=_SCALE,
           generation=True, scale=replicas,
           columns=(PrinterColumn("Desired", "integer", ".spec.replicas", default=0),
                    PrinterColumn("Current", "integer", ".status.replicas", default=0),
                    PrinterColumn("Ready", "integer", ".status.readyReplicas", default=0))),
        _t("apps", "v1", "StatefulSet", "statefulsets", short=("sts",), categories=("all",), sub=_SCALE,
           generation=True, scale=replicas,
           columns=(PrinterColumn("Ready", "string", ".status.readyReplicas", total_path=".spec.replicas"),)),
        _t("apps", "v1", "DaemonSet", "daemonsets", short=("ds",), categories=("all",), sub=_STATUS,
           generation=True),
        _t("batch", "v1", "Job", "jobs", categories=("all",), sub=_STATUS, generation=True,
           fields=frozenset({"status.successful"})),
        _t("batch", "v1", "CronJob", "cronjobs", short=("cj",), categories=("all",), sub=_STATUS,
           generation=True, columns=(PrinterColumn("Schedule", "string", ".spec.schedule"),)),
        _t("events.k8s.io", "v1", "Event", "events", short=("ev",), fields=_EVENTS_V1_FIELDS),
        _t("coordination.k8s.io", "v1", "Lease", "leases",
           columns=(PrinterColumn("Holder", "string", ".spec.holderIdentity"),)),
        _t("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions",
           namespaced=False, short=("crd", "crds"), categories=("api-extensions",), sub=_STATUS,
           generation=True, columns=(PrinterColumn("Created At", "date", ".metadata.creationTimestamp"),)),
        _t("admissionregistration.k8s.io", "v1", "ValidatingWebhookConfiguration",
           "validatingwebhookconfigurations", namespaced=False, categories=("api-extensions",),
           generation=True),
        _t("admissionregistration.k8s.io", "v1", "MutatingWebhookConfiguration",
           "mutatingwebhookconfigurations", namespaced=False, categories=("api-extensions",),
           generation=True),
        _t("rbac.authorization.k8s.io", "v1", "Role", "roles"),
        _t("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings"),
        _t("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", namespaced=False),
        _t("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", namespaced=False),
    )


INITIAL_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
UNDELETABLE_NAMESPACES = frozenset({"default", "kube-system", "kube-public"})
