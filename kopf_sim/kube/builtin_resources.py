"""The catalogue of built-in resources, with their real group/version/kind/plural/short names/scope."""

from __future__ import annotations

import functools

from kopf_sim.kube import printers as p
from kopf_sim.kube.resources import ALL_VERBS, PrinterColumn, ResourceType, ScalePaths

_STATUS = frozenset({"status"})
_SCALE = frozenset({"status", "scale"})
_POD_FIELDS = frozenset(
    {
        "spec.nodeName",
        "spec.restartPolicy",
        "spec.schedulerName",
        "spec.serviceAccountName",
        "spec.hostNetwork",
        "status.phase",
        "status.podIP",
        "status.nominatedNodeName",
    }
)
_EVENT_FIELDS = frozenset(
    {
        "involvedObject.kind",
        "involvedObject.namespace",
        "involvedObject.name",
        "involvedObject.uid",
        "involvedObject.apiVersion",
        "involvedObject.resourceVersion",
        "involvedObject.fieldPath",
        "reason",
        "reportingComponent",
        "source",
        "type",
    }
)
_EVENTS_V1_FIELDS = frozenset(
    {
        "regarding.kind",
        "regarding.namespace",
        "regarding.name",
        "regarding.uid",
        "regarding.apiVersion",
        "regarding.resourceVersion",
        "regarding.fieldPath",
        "reason",
        "reportingController",
        "type",
    }
)
#: The kinds whose storage in the apiserver has ``ReturnDeletedObject`` set: a DELETE that removes one answers
#: with the object as it was (the official client's ``delete_namespaced_service`` returns a ``V1Service``);
#: the others answer with a ``Status``. An object held by finalizers or a grace period is answered either way.
RETURNING_DELETED_OBJECTS = frozenset(
    {
        ("", "pods"),
        ("", "podtemplates"),
        ("", "resourcequotas"),
        ("", "services"),
        ("", "serviceaccounts"),
        ("", "persistentvolumes"),
        ("", "persistentvolumeclaims"),
        ("storage.k8s.io", "storageclasses"),
        ("storage.k8s.io", "csidrivers"),
        ("storage.k8s.io", "csinodes"),
        ("storage.k8s.io", "volumeattachments"),
        ("storage.k8s.io", "volumeattributesclasses"),
    }
)
_AGE = PrinterColumn("Age", "date", ".metadata.creationTimestamp")


def _c(name: str, render: p.Renderer, type_: str = "string", *, wide: bool = False) -> PrinterColumn:
    """A computed column (``wide``: shown by ``kubectl get -o wide`` only)."""
    return PrinterColumn(name, type_, "", priority=1 if wide else 0, render=render)


_WORKLOAD_WIDE = (
    _c("Containers", p.containers, wide=True),
    _c("Images", p.images, wide=True),
    _c("Selector", p.selector, wide=True),
)


def _t(
    group: str,
    version: str,
    kind: str,
    plural: str,
    *,
    namespaced: bool = True,
    short: tuple[str, ...] = (),
    categories: tuple[str, ...] = (),
    sub: frozenset[str] = frozenset(),
    generation: bool = False,
    fields: frozenset[str] = frozenset(),
    columns: tuple[PrinterColumn, ...] = (),
    wide: tuple[PrinterColumn, ...] = (),
    scale: ScalePaths | None = None,
    verbs: tuple[str, ...] = ALL_VERBS,
) -> ResourceType:
    """A built-in type; a DELETE of the kinds in :data:`RETURNING_DELETED_OBJECTS` answers with the object."""
    return ResourceType(
        group=group,
        version=version,
        kind=kind,
        plural=plural,
        singular=kind.lower(),
        namespaced=namespaced,
        short_names=short,
        categories=categories,
        subresources=sub,
        has_generation=generation,
        field_selectors=fields,
        printer_columns=(*columns, _AGE, *wide),
        scale=scale,
        storage_version=version,
        verbs=verbs,
        returns_deleted_object=(group, plural) in RETURNING_DELETED_OBJECTS,
    )


@functools.cache
def builtin_resources() -> tuple[ResourceType, ...]:
    """Built once: the types are frozen, and each cluster indexes them in a catalogue of its own."""
    replicas = ScalePaths(".spec.replicas", ".status.replicas", ".spec.selector")
    return (
        _t(
            "",
            "v1",
            "Namespace",
            "namespaces",
            namespaced=False,
            short=("ns",),
            sub=frozenset({"status"}),
            fields=frozenset({"status.phase"}),
            columns=(PrinterColumn("Status", "string", ".status.phase"),),
        ),
        _t(
            "",
            "v1",
            "Pod",
            "pods",
            short=("po",),
            categories=("all",),
            sub=_STATUS,
            fields=_POD_FIELDS,
            generation=True,
            columns=(_c("Ready", p.pod_ready), _c("Status", p.pod_status), _c("Restarts", p.pod_restarts)),
            wide=(
                _c("IP", p.pod_ip, wide=True),
                _c("Node", p.pod_node, wide=True),
                _c("Nominated Node", p.pod_nominated, wide=True),
                _c("Readiness Gates", p.pod_gates, wide=True),
            ),
        ),
        _t(
            "",
            "v1",
            "Service",
            "services",
            short=("svc",),
            categories=("all",),
            sub=_STATUS,
            columns=(
                PrinterColumn("Type", "string", ".spec.type"),
                PrinterColumn("Cluster-IP", "string", ".spec.clusterIP"),
                _c("External-IP", p.service_external_ip),
                _c("Port(s)", p.service_ports),
            ),
            wide=(_c("Selector", p.selector, wide=True),),
        ),
        _t("", "v1", "Endpoints", "endpoints", short=("ep",), columns=(_c("Endpoints", p.endpoints_list),)),
        _t(
            "",
            "v1",
            "Node",
            "nodes",
            namespaced=False,
            short=("no",),
            sub=_STATUS,
            fields=frozenset({"spec.unschedulable"}),
            columns=(_c("Status", p.node_status), _c("Roles", p.node_roles)),
            wide=(
                _c("Version", p.node_version),
                _c("Internal-IP", p.node_internal_ip, wide=True),
                _c("External-IP", p.node_external_ip, wide=True),
            ),
        ),
        _t("", "v1", "ConfigMap", "configmaps", short=("cm",)),
        _t(
            "",
            "v1",
            "Secret",
            "secrets",
            fields=frozenset({"type"}),
            columns=(PrinterColumn("Type", "string", ".type"),),
        ),
        _t("", "v1", "ServiceAccount", "serviceaccounts", short=("sa",), sub=frozenset({"token"})),
        _t(
            "",
            "v1",
            "Event",
            "events",
            short=("ev",),
            fields=_EVENT_FIELDS,
            columns=(
                PrinterColumn("Type", "string", ".type"),
                PrinterColumn("Reason", "string", ".reason"),
                PrinterColumn("Message", "string", ".message"),
            ),
        ),
        _t(
            "",
            "v1",
            "PersistentVolumeClaim",
            "persistentvolumeclaims",
            short=("pvc",),
            sub=_STATUS,
            columns=(
                PrinterColumn("Status", "string", ".status.phase"),
                PrinterColumn("Volume", "string", ".spec.volumeName", default=""),
                _c("Capacity", p.claim_capacity),
                _c("Access Modes", p.claim_access_modes),
                _c("StorageClass", p.class_name),
            ),
            wide=(PrinterColumn("VolumeMode", "string", ".spec.volumeMode", priority=1),),
        ),
        _t(
            "",
            "v1",
            "PersistentVolume",
            "persistentvolumes",
            namespaced=False,
            short=("pv",),
            sub=_STATUS,
            columns=(
                _c("Capacity", p.volume_capacity),
                _c("Access Modes", p.volume_access_modes),
                PrinterColumn("Reclaim Policy", "string", ".spec.persistentVolumeReclaimPolicy"),
                PrinterColumn("Status", "string", ".status.phase"),
                _c("Claim", p.volume_claim),
                _c("StorageClass", p.class_name),
                PrinterColumn("Reason", "string", ".status.reason", default=""),
            ),
            wide=(PrinterColumn("VolumeMode", "string", ".spec.volumeMode", priority=1),),
        ),
        _t(
            "storage.k8s.io",
            "v1",
            "StorageClass",
            "storageclasses",
            namespaced=False,
            short=("sc",),
            columns=(
                PrinterColumn("Provisioner", "string", ".provisioner"),
                PrinterColumn("ReclaimPolicy", "string", ".reclaimPolicy"),
                PrinterColumn("VolumeBindingMode", "string", ".volumeBindingMode"),
                PrinterColumn("AllowVolumeExpansion", "boolean", ".allowVolumeExpansion"),
            ),
        ),
        _t(
            "apps",
            "v1",
            "Deployment",
            "deployments",
            short=("deploy",),
            categories=("all",),
            sub=_SCALE,
            generation=True,
            scale=replicas,
            columns=(
                PrinterColumn("Ready", "string", ".status.readyReplicas", total_path=".spec.replicas"),
                PrinterColumn("Up-to-date", "integer", ".status.updatedReplicas", default=0),
                PrinterColumn("Available", "integer", ".status.availableReplicas", default=0),
            ),
            wide=_WORKLOAD_WIDE,
        ),
        _t(
            "apps",
            "v1",
            "ReplicaSet",
            "replicasets",
            short=("rs",),
            categories=("all",),
            sub=_SCALE,
            generation=True,
            scale=replicas,
            columns=(
                PrinterColumn("Desired", "integer", ".spec.replicas", default=0),
                PrinterColumn("Current", "integer", ".status.replicas", default=0),
                PrinterColumn("Ready", "integer", ".status.readyReplicas", default=0),
            ),
            wide=_WORKLOAD_WIDE,
        ),
        _t(
            "apps",
            "v1",
            "StatefulSet",
            "statefulsets",
            short=("sts",),
            categories=("all",),
            sub=_SCALE,
            generation=True,
            scale=replicas,
            columns=(PrinterColumn("Ready", "string", ".status.readyReplicas", total_path=".spec.replicas"),),
            wide=_WORKLOAD_WIDE[:2],
        ),
        _t(
            "apps",
            "v1",
            "DaemonSet",
            "daemonsets",
            short=("ds",),
            categories=("all",),
            sub=_STATUS,
            generation=True,
            columns=(
                PrinterColumn("Desired", "integer", ".status.desiredNumberScheduled", default=0),
                PrinterColumn("Current", "integer", ".status.currentNumberScheduled", default=0),
                PrinterColumn("Ready", "integer", ".status.numberReady", default=0),
                PrinterColumn("Up-to-date", "integer", ".status.updatedNumberScheduled", default=0),
                PrinterColumn("Available", "integer", ".status.numberAvailable", default=0),
                _c("Node Selector", p.node_selector),
            ),
            wide=_WORKLOAD_WIDE,
        ),
        _t(
            "apps",
            "v1",
            "ControllerRevision",
            "controllerrevisions",
            columns=(_c("Controller", p.revision_controller), PrinterColumn("Revision", "integer", ".revision")),
        ),
        _t(
            "batch",
            "v1",
            "Job",
            "jobs",
            categories=("all",),
            sub=_STATUS,
            generation=True,
            fields=frozenset({"status.successful"}),
            columns=(_c("Status", p.job_status), _c("Completions", p.job_completions), _c("Duration", p.job_duration)),
            wide=_WORKLOAD_WIDE,
        ),
        _t(
            "batch",
            "v1",
            "CronJob",
            "cronjobs",
            short=("cj",),
            categories=("all",),
            sub=_STATUS,
            generation=True,
            columns=(
                PrinterColumn("Schedule", "string", ".spec.schedule"),
                _c("Timezone", p.cronjob_timezone),
                _c("Suspend", p.cronjob_suspend),
                _c("Active", p.cronjob_active, "integer"),
                _c("Last Schedule", p.cronjob_last_schedule),
            ),
            wide=_WORKLOAD_WIDE,
        ),
        _t(
            "discovery.k8s.io",
            "v1",
            "EndpointSlice",
            "endpointslices",
            columns=(
                PrinterColumn("AddressType", "string", ".addressType"),
                _c("Ports", p.slice_ports),
                _c("Endpoints", p.slice_endpoints),
            ),
        ),
        _t("events.k8s.io", "v1", "Event", "events", short=("ev",), fields=_EVENTS_V1_FIELDS),
        _t(
            "coordination.k8s.io",
            "v1",
            "Lease",
            "leases",
            columns=(PrinterColumn("Holder", "string", ".spec.holderIdentity"),),
        ),
        # The networking, disruption and autoscaling kinds that operators make for their workloads: stored and
        # served as the apiserver does (no controller acts on them: no ingress controller, no autoscaler).
        _t(
            "networking.k8s.io",
            "v1",
            "Ingress",
            "ingresses",
            short=("ing",),
            sub=_STATUS,
            generation=True,
            columns=(PrinterColumn("Class", "string", ".spec.ingressClassName", default="<none>"),),
        ),
        _t(
            "networking.k8s.io",
            "v1",
            "IngressClass",
            "ingressclasses",
            namespaced=False,
            generation=True,
            columns=(PrinterColumn("Controller", "string", ".spec.controller"),),
        ),
        _t("networking.k8s.io", "v1", "NetworkPolicy", "networkpolicies", short=("netpol",), generation=True),
        _t(
            "policy",
            "v1",
            "PodDisruptionBudget",
            "poddisruptionbudgets",
            short=("pdb",),
            sub=_STATUS,
            generation=True,
            columns=(
                PrinterColumn("Min Available", "string", ".spec.minAvailable", default="N/A"),
                PrinterColumn("Max Unavailable", "string", ".spec.maxUnavailable", default="N/A"),
                PrinterColumn("Allowed Disruptions", "integer", ".status.disruptionsAllowed", default=0),
            ),
        ),
        _t(
            "autoscaling",
            "v2",
            "HorizontalPodAutoscaler",
            "horizontalpodautoscalers",
            short=("hpa",),
            categories=("all",),
            sub=_STATUS,
            columns=(
                PrinterColumn("Minpods", "integer", ".spec.minReplicas", default=1),
                PrinterColumn("Maxpods", "integer", ".spec.maxReplicas"),
                PrinterColumn("Replicas", "integer", ".status.currentReplicas", default=0),
            ),
        ),
        _t(
            "apiextensions.k8s.io",
            "v1",
            "CustomResourceDefinition",
            "customresourcedefinitions",
            namespaced=False,
            short=("crd", "crds"),
            categories=("api-extensions",),
            sub=_STATUS,
            generation=True,
            columns=(PrinterColumn("Created At", "date", ".metadata.creationTimestamp"),),
        ),
        _t(
            "admissionregistration.k8s.io",
            "v1",
            "ValidatingWebhookConfiguration",
            "validatingwebhookconfigurations",
            namespaced=False,
            categories=("api-extensions",),
            generation=True,
        ),
        _t(
            "admissionregistration.k8s.io",
            "v1",
            "MutatingWebhookConfiguration",
            "mutatingwebhookconfigurations",
            namespaced=False,
            categories=("api-extensions",),
            generation=True,
        ),
        _t(
            "admissionregistration.k8s.io",
            "v1",
            "ValidatingAdmissionPolicy",
            "validatingadmissionpolicies",
            namespaced=False,
            categories=("api-extensions",),
            sub=_STATUS,
            generation=True,
        ),
        _t(
            "admissionregistration.k8s.io",
            "v1",
            "ValidatingAdmissionPolicyBinding",
            "validatingadmissionpolicybindings",
            namespaced=False,
            categories=("api-extensions",),
            generation=True,
        ),
        _t("rbac.authorization.k8s.io", "v1", "Role", "roles"),
        _t("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings"),
        _t("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", namespaced=False),
        _t("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", namespaced=False),
        # Reviews are create-only and never stored: they ask whether a request would be allowed.
        *(
            _t("authorization.k8s.io", "v1", kind, plural, namespaced=namespaced, verbs=("create",))
            for kind, plural, namespaced in REVIEWS
        ),
        *(
            _t("authentication.k8s.io", "v1", kind, plural, namespaced=False, verbs=("create",))
            for kind, plural in AUTHENTICATION_REVIEWS
        ),
    )


REVIEWS = (
    ("LocalSubjectAccessReview", "localsubjectaccessreviews", True),
    ("SelfSubjectAccessReview", "selfsubjectaccessreviews", False),
    ("SelfSubjectRulesReview", "selfsubjectrulesreviews", False),
    ("SubjectAccessReview", "subjectaccessreviews", False),
)


#: "Who am I?" (``kubectl auth whoami``): create-only, never stored.
AUTHENTICATION_REVIEWS = (("SelfSubjectReview", "selfsubjectreviews"),)


INITIAL_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
UNDELETABLE_NAMESPACES = frozenset({"default", "kube-system", "kube-public"})
