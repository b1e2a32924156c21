"""Hypothesis strategies for testing operators: objects from CRD schemas, actions and their sequences, and
mutations of recorded watch-event logs."""

from __future__ import annotations

from .logs import MUTATIONS, coalesce_event, delay_event, drop_event, duplicate_event, mutated_logs
from .schemas import CustomResource, from_schema, objects, resources_in
from .steps import (
    PERTURBATIONS,
    Action,
    Advance,
    ApiErrors,
    CrashAfterWrites,
    CrashRestart,
    Create,
    Delete,
    Driver,
    PatchMeta,
    PatchSpec,
    Redeliver,
    ReplayLog,
    Settle,
    StaleReads,
    WithheldEvents,
    action_sequences,
    actions,
    perturbations,
    spec_patches,
    user_actions,
)

__all__ = [
    "MUTATIONS",
    "PERTURBATIONS",
    "Action",
    "Advance",
    "ApiErrors",
    "CrashAfterWrites",
    "CrashRestart",
    "Create",
    "CustomResource",
    "Delete",
    "Driver",
    "PatchMeta",
    "PatchSpec",
    "Redeliver",
    "ReplayLog",
    "Settle",
    "StaleReads",
    "WithheldEvents",
    "action_sequences",
    "actions",
    "coalesce_event",
    "delay_event",
    "drop_event",
    "duplicate_event",
    "from_schema",
    "mutated_logs",
    "objects",
    "perturbations",
    "resources_in",
    "spec_patches",
    "user_actions",
]
