"""
Kopf: a framework for Kubernetes operators.

This module, together with ``kopf.on`` and ``kopf.testing``, is the public interface:
only the names exported here carry promises on their names and signatures.
Everything in the underscored sub-packages is an implementation detail.
"""

import importlib
from typing import TYPE_CHECKING, Any

from kopf import on
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.configs.diffbase import (
    AnnotationsDiffBaseStorage,
    DiffBaseStorage,
    MultiDiffBaseStorage,
    StatusDiffBaseStorage,
)
from kopf._cogs.configs.progress import (
    AnnotationsProgressStorage,
    MultiProgressStorage,
    ProgressRecord,
    ProgressStorage,
    SmartProgressStorage,
    StatusProgressStorage,
)
from kopf._cogs.helpers.loggers import LogFormat, configure
from kopf._cogs.structs.bodies import (
    Annotations,
    Body,
    BodyEssence,
    Labels,
    Meta,
    ObjectReference,
    OwnerReference,
    RawBody,
    RawEvent,
    RawEventType,
    Spec,
    Status,
    build_object_reference,
    build_owner_reference,
)
from kopf._cogs.structs.credentials import AiohttpSession, ConnectionInfo, LoginError
from kopf._cogs.structs.dicts import FieldPath, FieldSpec
from kopf._cogs.structs.diffs import Diff, DiffItem, DiffOperation
from kopf._cogs.structs.ephemera import Memo
from kopf._cogs.structs.ids import HandlerId
from kopf._cogs.structs.patches import Patch, PatchFn
from kopf._cogs.structs.references import EVERYTHING, Resource
from kopf._cogs.structs.reviews import (
    Headers,
    SSLPeer,
    UserInfo,
    WebhookClientConfig,
    WebhookClientConfigService,
    WebhookFn,
    WebhookServerProtocol,
)
from kopf._core.actions import lifecycles
from kopf._core.actions.errors import (
    ErrorsMode,
    HandlerRetriesError,
    HandlerTimeoutError,
    PermanentError,
    TemporaryError,
)
from kopf._core.actions.execution import execute
from kopf._core.actions.invocation import LoggerLike as Logger
from kopf._core.actions.lifecycles import get_default_lifecycle, set_default_lifecycle
from kopf._core.actions.loggers import LocalObjectLogger, ObjectLogger
from kopf._core.engines.admission_errors import AdmissionError
from kopf._core.engines.daemons import AsyncDaemonStopped as AsyncDaemonStopperChecker
from kopf._core.engines.daemons import DaemonStopped, DaemonStoppingReason
from kopf._core.engines.daemons import SyncDaemonStopped as SyncDaemonStopperChecker
from kopf._core.engines.indexing import Index, Store
from kopf._core.engines.posting import event, exception, info, warn
from kopf._core.intents.causes import Reason
from kopf._core.intents.filters import ABSENT, PRESENT, all_, any_, none_, not_
from kopf._core.intents.handlers import Operation
from kopf._core.intents.logins.kubeconfiglogin import login_with_kubeconfig
from kopf._core.intents.logins.officialclient import login_via_async_client, login_via_client
from kopf._core.intents.logins.pykubeclient import login_via_pykube
from kopf._core.intents.logins.serviceaccount import login_with_service_account
from kopf._core.intents.registries import OperatorRegistry, get_default_registry, set_default_registry
from kopf._core.reactor.running import operator, run, run_tasks, spawn_tasks
from kopf._kits.hierarchies import (
    adjust_namespace,
    adopt,
    append_owner_reference,
    harmonize_naming,
    label,
    remove_owner_reference,
)
from kopf.on import daemon, index, register, subhandler, timer

__all__ = [
    "ABSENT",
    "EVERYTHING",
    "PRESENT",
    "AdmissionError",
    "AiohttpSession",
    "Annotations",
    "AnnotationsDiffBaseStorage",
    "AnnotationsProgressStorage",
    "AsyncDaemonStopperChecker",
    "Body",
    "BodyEssence",
    "ConnectionInfo",
    "DaemonStopped",
    "DaemonStoppingReason",
    "Diff",
    "DiffBaseStorage",
    "DiffItem",
    "DiffOperation",
    "ErrorsMode",
    "FieldPath",
    "FieldSpec",
    "HandlerId",
    "HandlerRetriesError",
    "HandlerTimeoutError",
    "Headers",
    "Index",
    "Labels",
    "LocalObjectLogger",
    "LogFormat",
    "Logger",
    "LoginError",
    "Memo",
    "Meta",
    "MultiDiffBaseStorage",
    "MultiProgressStorage",
    "ObjectLogger",
    "ObjectReference",
    "Operation",
    "OperatorRegistry",
    "OperatorSettings",
    "OwnerReference",
    "Patch",
    "PatchFn",
    "PermanentError",
    "ProgressRecord",
    "ProgressStorage",
    "RawBody",
    "RawEvent",
    "RawEventType",
    "Reason",
    "Resource",
    "SSLPeer",
    "SmartProgressStorage",
    "Spec",
    "Status",
    "StatusDiffBaseStorage",
    "StatusProgressStorage",
    "Store",
    "SyncDaemonStopperChecker",
    "TemporaryError",
    "UserInfo",
    "WebhookAutoServer",
    "WebhookAutoTunnel",
    "WebhookClientConfig",
    "WebhookClientConfigService",
    "WebhookDockerDesktopServer",
    "WebhookFn",
    "WebhookK3dServer",
    "WebhookMinikubeServer",
    "WebhookNgrokTunnel",
    "WebhookServer",
    "WebhookServerProtocol",
    "adjust_namespace",
    "adopt",
    "all_",
    "any_",
    "append_owner_reference",
    "build_object_reference",
    "build_owner_reference",
    "configure",
    "daemon",
    "event",
    "exception",
    "execute",
    "get_default_lifecycle",
    "get_default_registry",
    "harmonize_naming",
    "index",
    "info",
    "label",
    "lifecycles",
    "login_via_async_client",
    "login_via_client",
    "login_via_pykube",
    "login_with_kubeconfig",
    "login_with_service_account",
    "none_",
    "not_",
    "on",
    "operator",
    "register",
    "remove_owner_reference",
    "run",
    "run_tasks",
    "set_default_lifecycle",
    "set_default_registry",
    "spawn_tasks",
    "subhandler",
    "timer",
    "warn",
]

if TYPE_CHECKING:
    from kopf._kits.webhooks import (
        WebhookAutoServer,
        WebhookAutoTunnel,
        WebhookDockerDesktopServer,
        WebhookK3dServer,
        WebhookMinikubeServer,
        WebhookNgrokTunnel,
        WebhookServer,
    )

#: The webhook servers & tunnels are imported on their first use: most operators have none (~5 ms at start-up).
_WEBHOOKS_MODULE = "kopf._kits.webhooks"
_WEBHOOKS_NAMES = frozenset(
    {
        "WebhookAutoServer",
        "WebhookAutoTunnel",
        "WebhookDockerDesktopServer",
        "WebhookK3dServer",
        "WebhookMinikubeServer",
        "WebhookNgrokTunnel",
        "WebhookServer",
    }
)


def __getattr__(name: str) -> Any:
    if name not in _WEBHOOKS_NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_WEBHOOKS_MODULE), name)
    globals()[name] = value  # once imported, a regular attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_WEBHOOKS_NAMES})
