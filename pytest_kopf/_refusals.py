"""Whether an object's status reports an error: how operators commonly refuse a spec without failing a handler.

A spec that the operator refuses is not a final state to compare: it may keep the last good state it has seen
(as a Deployment with a bad template keeps its old pods running), and which one depends on what it has seen.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["may_report_error", "reports_error"]

#: The status fields that report an error when set, the phases that do, and the conditions (type, status) that do.
_ERROR_FIELDS = frozenset({"error", "errors", "errormessage", "lasterror", "failure", "failuremessage"})
_ERROR_PHASES = frozenset({"error", "errored", "failed", "failure", "invalid", "degraded"})
_ERROR_CONDITIONS = frozenset({("failed", "true"), ("error", "true"), ("degraded", "true"), ("invalid", "true")})
_ERROR_REASON = re.compile(r"invalid|error|fail", re.IGNORECASE)
#: The names of the status fields that may tell how the object is doing (an error, a phase, conditions, a message):
#: its state, whoever writes them, never a mere record of what happened to it.
_HEALTH_WORDS = re.compile(r"error|fail|invalid|valid|phase|state|condition|message|reason|ready|health", re.I)


def reports_error(obj: Mapping[str, Any]) -> bool:
    """Whether the object's status reports an error, as operators commonly do for a spec they refuse: a field such
    as ``error`` or ``errorMessage`` set, a ``phase``/``state`` such as ``Failed`` or ``Invalid``, a condition
    ``Failed``/``Degraded`` true, or ``Ready`` false for a reason such as ``InvalidSpec`` or ``ReconcileError``."""
    status = obj.get("status")
    if not isinstance(status, Mapping):
        return False
    for key, value in status.items():
        if key.lower() in _ERROR_FIELDS and value not in (None, "", [], {}):
            return True
        if key.lower() in ("phase", "state") and isinstance(value, str) and value.lower() in _ERROR_PHASES:
            return True
    conditions = status.get("conditions")
    for condition in conditions if isinstance(conditions, list) else ():
        if not isinstance(condition, Mapping):
            continue
        kind, state = str(condition.get("type", "")).lower(), str(condition.get("status", "")).lower()
        if (kind, state) in _ERROR_CONDITIONS:
            return True
        if kind == "ready" and state == "false" and _ERROR_REASON.search(str(condition.get("reason", ""))):
            return True
    return False


def may_report_error(key: str) -> bool:
    """Whether a status field, by its name, may tell how the object is doing (``error``, ``phase``, ``conditions``,
    ``message``, ``ready``...): an error it reports must clear when the spec is fixed, so it is state to compare."""
    return bool(_HEALTH_WORDS.search(key))
