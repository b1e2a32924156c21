"""The Go types of the built-in kinds, as far as the apiserver's decoding of them matters to clients.

Each kind is a :class:`~kopf_sim.writes.gotypes.Struct` named as in Kubernetes (``v1.ConfigMap``,
``v1.PodSpec``...), with the fields that operators, controllers and kubectl read and write; fields
left out are taken as they come. Custom resources only have their ``metadata`` typed (as ObjectMeta).
"""

from __future__ import annotations

from kopf_sim.writes.gotypes import (
    BOOL,
    BYTES,
    FLOAT64,
    INT32,
    INT64,
    INT_OR_STRING,
    MICRO_TIME,
    QUANTITY,
    RAW,
    STRING,
    TIME,
    GoType,
    ListOf,
    MapOf,
    Recursive,
    Struct,
    named_string,
)

STRINGS = ListOf(STRING)
STRING_MAP = MapOf(STRING)
PROTOCOL = named_string("v1.Protocol")

# --- meta.k8s.io/v1 -------------------------------------------------------------------------------

OWNER_REFERENCE = Struct(
    "OwnerReference",
    "v1",
    {
        "apiVersion": STRING,
        "kind": STRING,
        "name": STRING,
        "uid": STRING,
        "controller": BOOL,
        "blockOwnerDeletion": BOOL,
    },
)
MANAGED_FIELDS_ENTRY = Struct(
    "ManagedFieldsEntry",
    "v1",
    {
        "manager": STRING,
        "operation": STRING,
        "apiVersion": STRING,
        "time": TIME,
        "fieldsType": STRING,
        "fieldsV1": RAW,
        "subresource": STRING,
    },
)
OBJECT_META = Struct(
    "ObjectMeta",
    "v1",
    {
        "name": STRING,
        "generateName": STRING,
        "namespace": STRING,
        "selfLink": STRING,
        "uid": STRING,
        "resourceVersion": STRING,
        "generation": INT64,
        "creationTimestamp": TIME,
        "deletionTimestamp": TIME,
        "deletionGracePeriodSeconds": INT64,
        "labels": STRING_MAP,
        "annotations": STRING_MAP,
        "ownerReferences": ListOf(OWNER_REFERENCE),
        "finalizers": STRINGS,
        "managedFields": ListOf(MANAGED_FIELDS_ENTRY),
    },
)
TYPE_META = {"apiVersion": STRING, "kind": STRING}
LABEL_SELECTOR = Struct(
    "LabelSelector",
    "v1",
    {
        "matchLabels": STRING_MAP,
        "matchExpressions": ListOf(
            Struct("LabelSelectorRequirement", "v1", {"key": STRING, "operator": STRING, "values": STRINGS})
        ),
    },
)
CONDITION = Struct(
    "Condition",
    "v1",
    {
        "type": STRING,
        "status": STRING,
        "observedGeneration": INT64,
        "lastTransitionTime": TIME,
        "reason": STRING,
        "message": STRING,
    },
)
PRECONDITIONS = Struct("Preconditions", "v1", {"uid": STRING, "resourceVersion": STRING})
DELETE_OPTIONS = Struct(
    "DeleteOptions",
    "v1",
    {
        **TYPE_META,
        "gracePeriodSeconds": INT64,
        "preconditions": PRECONDITIONS,
        "orphanDependents": BOOL,
        "propagationPolicy": STRING,
        "dryRun": STRINGS,
        "ignoreStoreReadErrorWithClusterBreakingPotential": BOOL,
    },
)


def _object(name: str, package: str, **fields: GoType) -> Struct:
    """A top-level kind: its TypeMeta and ObjectMeta, and its own fields."""
    return Struct(name, package, {**TYPE_META, "metadata": OBJECT_META, **fields})


# --- core/v1 ------------------------------------------------------------------------------------------

OBJECT_REFERENCE = Struct(
    "ObjectReference",
    "v1",
    {
        "kind": STRING,
        "namespace": STRING,
        "name": STRING,
        "uid": STRING,
        "apiVersion": STRING,
        "resourceVersion": STRING,
        "fieldPath": STRING,
    },
)
LOCAL_OBJECT_REFERENCE = Struct("LocalObjectReference", "v1", {"name": STRING})
RESOURCE_LIST = MapOf(QUANTITY, named="v1.ResourceList")
CONTAINER_PORT = Struct(
    "ContainerPort",
    "v1",
    {
        "name": STRING,
        "hostPort": INT32,
        "containerPort": INT32,
        "protocol": PROTOCOL,
        "hostIP": STRING,
    },
)
KEY_SELECTOR = Struct("ConfigMapKeySelector", "v1", {"name": STRING, "key": STRING, "optional": BOOL})
ENV_VAR = Struct(
    "EnvVar",
    "v1",
    {
        "name": STRING,
        "value": STRING,
        "valueFrom": Struct(
            "EnvVarSource",
            "v1",
            {
                "configMapKeyRef": KEY_SELECTOR,
                "secretKeyRef": KEY_SELECTOR.extend("SecretKeySelector"),
                "fieldRef": Struct("ObjectFieldSelector", "v1", {"apiVersion": STRING, "fieldPath": STRING}),
            },
        ),
    },
)
PROBE = Struct(
    "Probe",
    "v1",
    {
        "initialDelaySeconds": INT32,
        "timeoutSeconds": INT32,
        "periodSeconds": INT32,
        "successThreshold": INT32,
        "failureThreshold": INT32,
        "terminationGracePeriodSeconds": INT64,
        "exec": Struct("ExecAction", "v1", {"command": STRINGS}),
        "httpGet": Struct(
            "HTTPGetAction", "v1", {"path": STRING, "port": INT_OR_STRING, "host": STRING, "scheme": STRING}
        ),
        "tcpSocket": Struct("TCPSocketAction", "v1", {"port": INT_OR_STRING, "host": STRING}),
    },
)
CONTAINER = Struct(
    "Container",
    "v1",
    {
        "name": STRING,
        "image": STRING,
        "command": STRINGS,
        "args": STRINGS,
        "workingDir": STRING,
        "ports": ListOf(CONTAINER_PORT),
        "env": ListOf(ENV_VAR),
        "resources": Struct("ResourceRequirements", "v1", {"limits": RESOURCE_LIST, "requests": RESOURCE_LIST}),
        "volumeMounts": ListOf(
            Struct("VolumeMount", "v1", {"name": STRING, "readOnly": BOOL, "mountPath": STRING, "subPath": STRING})
        ),
        "livenessProbe": PROBE,
        "readinessProbe": PROBE,
        "startupProbe": PROBE,
        "terminationMessagePath": STRING,
        "terminationMessagePolicy": named_string("v1.TerminationMessagePolicy"),
        "imagePullPolicy": named_string("v1.PullPolicy"),
        "stdin": BOOL,
        "stdinOnce": BOOL,
        "tty": BOOL,
        "restartPolicy": named_string("v1.ContainerRestartPolicy"),
    },
)
TOLERATION = Struct(
    "Toleration",
    "v1",
    {
        "key": STRING,
        "operator": named_string("v1.TolerationOperator"),
        "value": STRING,
        "effect": named_string("v1.TaintEffect"),
        "tolerationSeconds": INT64,
    },
)
POD_SPEC = Struct(
    "PodSpec",
    "v1",
    {
        "volumes": ListOf(Struct("Volume", "v1", {"name": STRING})),
        "initContainers": ListOf(CONTAINER),
        "containers": ListOf(CONTAINER),
        "restartPolicy": named_string("v1.RestartPolicy"),
        "terminationGracePeriodSeconds": INT64,
        "activeDeadlineSeconds": INT64,
        "dnsPolicy": named_string("v1.DNSPolicy"),
        "nodeSelector": STRING_MAP,
        "serviceAccountName": STRING,
        "serviceAccount": STRING,
        "automountServiceAccountToken": BOOL,
        "nodeName": STRING,
        "hostNetwork": BOOL,
        "hostPID": BOOL,
        "hostIPC": BOOL,
        "shareProcessNamespace": BOOL,
        "imagePullSecrets": ListOf(LOCAL_OBJECT_REFERENCE),
        "hostname": STRING,
        "subdomain": STRING,
        "schedulerName": STRING,
        "tolerations": ListOf(TOLERATION),
        "priorityClassName": STRING,
        "priority": INT32,
        "runtimeClassName": STRING,
        "enableServiceLinks": BOOL,
        "preemptionPolicy": STRING,
    },
)
POD_TEMPLATE_SPEC = Struct("PodTemplateSpec", "v1", {"metadata": OBJECT_META, "spec": POD_SPEC})
POD_STATUS = Struct(
    "PodStatus",
    "v1",
    {
        "phase": named_string("v1.PodPhase"),
        "message": STRING,
        "reason": STRING,
        "hostIP": STRING,
        "podIP": STRING,
        "nominatedNodeName": STRING,
        "startTime": TIME,
        "qosClass": named_string("v1.PodQOSClass"),
        "conditions": ListOf(
            Struct(
                "PodCondition",
                "v1",
                {
                    "type": STRING,
                    "status": STRING,
                    "lastProbeTime": TIME,
                    "lastTransitionTime": TIME,
                    "reason": STRING,
                    "message": STRING,
                },
            )
        ),
        "containerStatuses": ListOf(
            Struct(
                "ContainerStatus",
                "v1",
                {
                    "name": STRING,
                    "ready": BOOL,
                    "restartCount": INT32,
                    "image": STRING,
                    "imageID": STRING,
                    "containerID": STRING,
                    "started": BOOL,
                },
            )
        ),
    },
)
SERVICE_PORT = Struct(
    "ServicePort",
    "v1",
    {
        "name": STRING,
        "protocol": PROTOCOL,
        "appProtocol": STRING,
        "port": INT32,
        "targetPort": INT_OR_STRING,
        "nodePort": INT32,
    },
)
SERVICE_SPEC = Struct(
    "ServiceSpec",
    "v1",
    {
        "ports": ListOf(SERVICE_PORT),
        "selector": STRING_MAP,
        "clusterIP": STRING,
        "clusterIPs": STRINGS,
        "type": named_string("v1.ServiceType"),
        "externalIPs": STRINGS,
        "sessionAffinity": named_string("v1.ServiceAffinity"),
        "loadBalancerIP": STRING,
        "loadBalancerSourceRanges": STRINGS,
        "externalName": STRING,
        "externalTrafficPolicy": named_string("v1.ServiceExternalTrafficPolicy"),
        "healthCheckNodePort": INT32,
        "publishNotReadyAddresses": BOOL,
        "ipFamilies": ListOf(named_string("v1.IPFamily")),
        "ipFamilyPolicy": named_string("v1.IPFamilyPolicy"),
        "allocateLoadBalancerNodePorts": BOOL,
        "loadBalancerClass": STRING,
        "internalTrafficPolicy": named_string("v1.ServiceInternalTrafficPolicy"),
    },
)
EVENT_SOURCE = Struct("EventSource", "v1", {"component": STRING, "host": STRING})
EVENT_SERIES = Struct("EventSeries", "v1", {"count": INT32, "lastObservedTime": MICRO_TIME})
PVC_SPEC = Struct(
    "PersistentVolumeClaimSpec",
    "v1",
    {
        "accessModes": ListOf(named_string("v1.PersistentVolumeAccessMode")),
        "selector": LABEL_SELECTOR,
        "resources": Struct("VolumeResourceRequirements", "v1", {"limits": RESOURCE_LIST, "requests": RESOURCE_LIST}),
        "volumeName": STRING,
        "storageClassName": STRING,
        "volumeMode": STRING,
    },
)

# --- apps/v1, batch/v1 --------------------------------------------------------------------------------

_WORKLOAD_STATUS = {
    "observedGeneration": INT64,
    "replicas": INT32,
    "readyReplicas": INT32,
    "availableReplicas": INT32,
    "collisionCount": INT32,
}
DEPLOYMENT_SPEC = Struct(
    "DeploymentSpec",
    "v1",
    {
        "replicas": INT32,
        "selector": LABEL_SELECTOR,
        "template": POD_TEMPLATE_SPEC,
        "strategy": Struct(
            "DeploymentStrategy",
            "v1",
            {
                "type": STRING,
                "rollingUpdate": Struct(
                    "RollingUpdateDeployment", "v1", {"maxUnavailable": INT_OR_STRING, "maxSurge": INT_OR_STRING}
                ),
            },
        ),
        "minReadySeconds": INT32,
        "revisionHistoryLimit": INT32,
        "paused": BOOL,
        "progressDeadlineSeconds": INT32,
    },
)
DEPLOYMENT_STATUS = Struct(
    "DeploymentStatus",
    "v1",
    {
        **_WORKLOAD_STATUS,
        "updatedReplicas": INT32,
        "unavailableReplicas": INT32,
        "conditions": ListOf(
            Struct(
                "DeploymentCondition",
                "v1",
                {
                    "type": STRING,
                    "status": STRING,
                    "lastUpdateTime": TIME,
                    "lastTransitionTime": TIME,
                    "reason": STRING,
                    "message": STRING,
                },
            )
        ),
    },
)
REPLICA_SET_SPEC = Struct(
    "ReplicaSetSpec",
    "v1",
    {
        "replicas": INT32,
        "minReadySeconds": INT32,
        "selector": LABEL_SELECTOR,
        "template": POD_TEMPLATE_SPEC,
    },
)
STATEFUL_SET_SPEC = Struct(
    "StatefulSetSpec",
    "v1",
    {
        "replicas": INT32,
        "selector": LABEL_SELECTOR,
        "template": POD_TEMPLATE_SPEC,
        "serviceName": STRING,
        "podManagementPolicy": STRING,
        "revisionHistoryLimit": INT32,
        "minReadySeconds": INT32,
    },
)
DAEMON_SET_SPEC = Struct(
    "DaemonSetSpec",
    "v1",
    {
        "selector": LABEL_SELECTOR,
        "template": POD_TEMPLATE_SPEC,
        "minReadySeconds": INT32,
        "revisionHistoryLimit": INT32,
    },
)
JOB_SPEC = Struct(
    "JobSpec",
    "v1",
    {
        "parallelism": INT32,
        "completions": INT32,
        "activeDeadlineSeconds": INT64,
        "backoffLimit": INT32,
        "selector": LABEL_SELECTOR,
        "manualSelector": BOOL,
        "template": POD_TEMPLATE_SPEC,
        "ttlSecondsAfterFinished": INT32,
        "completionMode": STRING,
        "suspend": BOOL,
    },
)
JOB_STATUS = Struct(
    "JobStatus",
    "v1",
    {
        "startTime": TIME,
        "completionTime": TIME,
        "active": INT32,
        "succeeded": INT32,
        "failed": INT32,
        "ready": INT32,
        "conditions": ListOf(
            Struct(
                "JobCondition",
                "v1",
                {
                    "type": STRING,
                    "status": STRING,
                    "lastProbeTime": TIME,
                    "lastTransitionTime": TIME,
                    "reason": STRING,
                    "message": STRING,
                },
            )
        ),
    },
)
CRON_JOB_SPEC = Struct(
    "CronJobSpec",
    "v1",
    {
        "schedule": STRING,
        "timeZone": STRING,
        "startingDeadlineSeconds": INT64,
        "concurrencyPolicy": STRING,
        "suspend": BOOL,
        "successfulJobsHistoryLimit": INT32,
        "failedJobsHistoryLimit": INT32,
        "jobTemplate": Struct("JobTemplateSpec", "v1", {"metadata": OBJECT_META, "spec": JOB_SPEC}),
    },
)

# --- apiextensions.k8s.io/v1 --------------------------------------------------------------------------

JSON_SCHEMA_PROPS = Recursive("JSONSchemaProps", "v1")
JSON_SCHEMA_PROPS.define(
    id=STRING,
    schema=STRING,
    ref=STRING,
    description=STRING,
    type=STRING,
    format=STRING,
    title=STRING,
    default=RAW,
    maximum=FLOAT64,
    exclusiveMaximum=BOOL,
    minimum=FLOAT64,
    exclusiveMinimum=BOOL,
    maxLength=INT64,
    minLength=INT64,
    pattern=STRING,
    maxItems=INT64,
    minItems=INT64,
    uniqueItems=BOOL,
    multipleOf=FLOAT64,
    enum=ListOf(RAW),
    maxProperties=INT64,
    minProperties=INT64,
    required=STRINGS,
    allOf=ListOf(JSON_SCHEMA_PROPS),
    oneOf=ListOf(JSON_SCHEMA_PROPS),
    anyOf=ListOf(JSON_SCHEMA_PROPS),
    properties=MapOf(JSON_SCHEMA_PROPS),
    patternProperties=MapOf(JSON_SCHEMA_PROPS),
    definitions=MapOf(JSON_SCHEMA_PROPS),
    nullable=BOOL,
    example=RAW,
    **{
        "not": JSON_SCHEMA_PROPS,
        "$schema": STRING,
        "$ref": STRING,
        "x-kubernetes-preserve-unknown-fields": BOOL,
        "x-kubernetes-embedded-resource": BOOL,
        "x-kubernetes-int-or-string": BOOL,
        "x-kubernetes-list-map-keys": STRINGS,
        "x-kubernetes-list-type": STRING,
        "x-kubernetes-map-type": STRING,
    },
)
CRD_VERSION = Struct(
    "CustomResourceDefinitionVersion",
    "v1",
    {
        "name": STRING,
        "served": BOOL,
        "storage": BOOL,
        "deprecated": BOOL,
        "deprecationWarning": STRING,
        "schema": Struct("CustomResourceValidation", "v1", {"openAPIV3Schema": JSON_SCHEMA_PROPS}),
        "subresources": Struct(
            "CustomResourceSubresources",
            "v1",
            {
                "status": RAW,
                "scale": Struct(
                    "CustomResourceSubresourceScale",
                    "v1",
                    {"specReplicasPath": STRING, "statusReplicasPath": STRING, "labelSelectorPath": STRING},
                ),
            },
        ),
        "additionalPrinterColumns": ListOf(
            Struct(
                "CustomResourceColumnDefinition",
                "v1",
                {
                    "name": STRING,
                    "type": STRING,
                    "format": STRING,
                    "description": STRING,
                    "priority": INT32,
                    "jsonPath": STRING,
                },
            )
        ),
        "selectableFields": ListOf(Struct("SelectableField", "v1", {"jsonPath": STRING})),
    },
)
CRD_NAMES = Struct(
    "CustomResourceDefinitionNames",
    "v1",
    {
        "plural": STRING,
        "singular": STRING,
        "shortNames": STRINGS,
        "kind": STRING,
        "listKind": STRING,
        "categories": STRINGS,
    },
)
CRD_SPEC = Struct(
    "CustomResourceDefinitionSpec",
    "v1",
    {
        "group": STRING,
        "names": CRD_NAMES,
        "scope": STRING,
        "versions": ListOf(CRD_VERSION),
        "preserveUnknownFields": BOOL,
        "conversion": Struct("CustomResourceConversion", "v1", {"strategy": STRING}),
    },
)

# --- the kinds ----------------------------------------------------------------------------------------

# --- admissionregistration.k8s.io/v1 ---------------------------------------------------------------

_WEBHOOK_FIELDS: dict[str, GoType] = {
    "name": STRING,
    "clientConfig": Struct(
        "WebhookClientConfig",
        "v1",
        {
            "url": STRING,
            "caBundle": BYTES,
            "service": Struct(
                "ServiceReference", "v1", {"namespace": STRING, "name": STRING, "path": STRING, "port": INT32}
            ),
        },
    ),
    "rules": ListOf(
        Struct(
            "RuleWithOperations",
            "v1",
            {
                "operations": ListOf(named_string("v1.OperationType")),
                "apiGroups": STRINGS,
                "apiVersions": STRINGS,
                "resources": STRINGS,
                "scope": named_string("v1.ScopeType"),
            },
        )
    ),
    "failurePolicy": named_string("v1.FailurePolicyType"),
    "matchPolicy": named_string("v1.MatchPolicyType"),
    "namespaceSelector": LABEL_SELECTOR,
    "objectSelector": LABEL_SELECTOR,
    "sideEffects": named_string("v1.SideEffectClass"),
    "timeoutSeconds": INT32,
    "admissionReviewVersions": STRINGS,
}
VALIDATING_WEBHOOK = Struct("ValidatingWebhook", "v1", _WEBHOOK_FIELDS)
MUTATING_WEBHOOK = Struct(
    "MutatingWebhook", "v1", {**_WEBHOOK_FIELDS, "reinvocationPolicy": named_string("v1.ReinvocationPolicyType")}
)

KINDS: dict[tuple[str, str], Struct] = {
    ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"): _object(
        "ValidatingWebhookConfiguration", "v1", webhooks=ListOf(VALIDATING_WEBHOOK)
    ),
    ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"): _object(
        "MutatingWebhookConfiguration", "v1", webhooks=ListOf(MUTATING_WEBHOOK)
    ),
    ("", "ConfigMap"): _object("ConfigMap", "v1", data=STRING_MAP, binaryData=MapOf(BYTES), immutable=BOOL),
    ("", "Secret"): _object(
        "Secret", "v1", data=MapOf(BYTES), stringData=STRING_MAP, type=named_string("v1.SecretType"), immutable=BOOL
    ),
    ("", "Namespace"): _object(
        "Namespace",
        "v1",
        spec=Struct("NamespaceSpec", "v1", {"finalizers": ListOf(named_string("v1.FinalizerName"))}),
        status=Struct(
            "NamespaceStatus",
            "v1",
            {
                "phase": named_string("v1.NamespacePhase"),
                "conditions": ListOf(
                    Struct(
                        "NamespaceCondition",
                        "v1",
                        {
                            "type": STRING,
                            "status": STRING,
                            "lastTransitionTime": TIME,
                            "reason": STRING,
                            "message": STRING,
                        },
                    )
                ),
            },
        ),
    ),
    ("", "Pod"): _object("Pod", "v1", spec=POD_SPEC, status=POD_STATUS),
    ("", "Service"): _object(
        "Service", "v1", spec=SERVICE_SPEC, status=Struct("ServiceStatus", "v1", {"conditions": ListOf(CONDITION)})
    ),
    ("", "ServiceAccount"): _object(
        "ServiceAccount",
        "v1",
        secrets=ListOf(OBJECT_REFERENCE),
        imagePullSecrets=ListOf(LOCAL_OBJECT_REFERENCE),
        automountServiceAccountToken=BOOL,
    ),
    ("", "Event"): _object(
        "Event",
        "v1",
        involvedObject=OBJECT_REFERENCE,
        reason=STRING,
        message=STRING,
        source=EVENT_SOURCE,
        firstTimestamp=TIME,
        lastTimestamp=TIME,
        count=INT32,
        type=STRING,
        eventTime=MICRO_TIME,
        series=EVENT_SERIES,
        action=STRING,
        related=OBJECT_REFERENCE,
        reportingComponent=STRING,
        reportingInstance=STRING,
    ),
    ("", "PersistentVolumeClaim"): _object(
        "PersistentVolumeClaim",
        "v1",
        spec=PVC_SPEC,
        status=Struct(
            "PersistentVolumeClaimStatus", "v1", {"phase": STRING, "accessModes": STRINGS, "capacity": RESOURCE_LIST}
        ),
    ),
    ("", "PersistentVolume"): _object(
        "PersistentVolume",
        "v1",
        spec=Struct(
            "PersistentVolumeSpec",
            "v1",
            {
                "capacity": RESOURCE_LIST,
                "accessModes": STRINGS,
                "claimRef": OBJECT_REFERENCE,
                "persistentVolumeReclaimPolicy": STRING,
                "storageClassName": STRING,
                "volumeMode": STRING,
            },
        ),
        status=Struct("PersistentVolumeStatus", "v1", {"phase": STRING, "message": STRING, "reason": STRING}),
    ),
    ("apps", "Deployment"): _object("Deployment", "v1", spec=DEPLOYMENT_SPEC, status=DEPLOYMENT_STATUS),
    ("apps", "ReplicaSet"): _object(
        "ReplicaSet",
        "v1",
        spec=REPLICA_SET_SPEC,
        status=Struct("ReplicaSetStatus", "v1", {**_WORKLOAD_STATUS, "fullyLabeledReplicas": INT32}),
    ),
    ("apps", "StatefulSet"): _object(
        "StatefulSet",
        "v1",
        spec=STATEFUL_SET_SPEC,
        status=Struct(
            "StatefulSetStatus",
            "v1",
            {
                **_WORKLOAD_STATUS,
                "currentReplicas": INT32,
                "updatedReplicas": INT32,
                "currentRevision": STRING,
                "updateRevision": STRING,
            },
        ),
    ),
    ("apps", "DaemonSet"): _object(
        "DaemonSet",
        "v1",
        spec=DAEMON_SET_SPEC,
        status=Struct(
            "DaemonSetStatus",
            "v1",
            {
                "currentNumberScheduled": INT32,
                "numberMisscheduled": INT32,
                "desiredNumberScheduled": INT32,
                "numberReady": INT32,
                "observedGeneration": INT64,
                "updatedNumberScheduled": INT32,
                "numberAvailable": INT32,
                "numberUnavailable": INT32,
            },
        ),
    ),
    ("batch", "Job"): _object("Job", "v1", spec=JOB_SPEC, status=JOB_STATUS),
    ("batch", "CronJob"): _object(
        "CronJob",
        "v1",
        spec=CRON_JOB_SPEC,
        status=Struct(
            "CronJobStatus",
            "v1",
            {"active": ListOf(OBJECT_REFERENCE), "lastScheduleTime": TIME, "lastSuccessfulTime": TIME},
        ),
    ),
    ("events.k8s.io", "Event"): _object(
        "Event",
        "v1",
        eventTime=MICRO_TIME,
        series=EVENT_SERIES,
        reportingController=STRING,
        reportingInstance=STRING,
        action=STRING,
        reason=STRING,
        regarding=OBJECT_REFERENCE,
        related=OBJECT_REFERENCE,
        note=STRING,
        type=STRING,
        deprecatedSource=EVENT_SOURCE,
        deprecatedFirstTimestamp=TIME,
        deprecatedLastTimestamp=TIME,
        deprecatedCount=INT32,
    ),
    ("coordination.k8s.io", "Lease"): _object(
        "Lease",
        "v1",
        spec=Struct(
            "LeaseSpec",
            "v1",
            {
                "holderIdentity": STRING,
                "leaseDurationSeconds": INT32,
                "acquireTime": MICRO_TIME,
                "renewTime": MICRO_TIME,
                "leaseTransitions": INT32,
                "strategy": STRING,
                "preferredHolder": STRING,
            },
        ),
    ),
    ("apiextensions.k8s.io", "CustomResourceDefinition"): _object(
        "CustomResourceDefinition", "v1", spec=CRD_SPEC, status=RAW
    ),
}
SCALE = Struct(
    "Scale",
    "v1",
    {
        **TYPE_META,
        "metadata": OBJECT_META,
        "spec": Struct("ScaleSpec", "v1", {"replicas": INT32}),
        "status": Struct("ScaleStatus", "v1", {"replicas": INT32, "selector": STRING}),
    },
)
#: What every other object has typed: custom resources, RBAC.
GENERIC = Struct("Object", "v1", {**TYPE_META, "metadata": OBJECT_META})


def struct_of(group: str, kind: str, *, custom: bool) -> Struct:
    """The Go type of a kind's objects (only the type and object metadata for custom resources)."""
    if custom:
        return GENERIC
    return KINDS.get((group, kind), GENERIC)
