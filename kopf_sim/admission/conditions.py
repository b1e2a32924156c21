"""``matchConditions``: CEL conditions that narrow which requests a webhook or an admission policy sees.

As the apiserver's matcher: if any condition is ``false``, the webhook (or policy) is skipped, whatever the
others say; if all are ``true``, it applies; if some failed to evaluate and none is ``false``, the failure
policy decides: ``Ignore`` skips it, ``Fail`` fails the request (the errors aggregated as Go does).
A result other than a boolean is not ``false``: it does not skip (the apiserver's type check would have
refused such an expression when the configuration was written; a dynamic value can still get here).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from kopf_sim.admission.attributes import Attributes, GroupVersionKind
from kopf_sim.cel.authorizer import authorizer_value
from kopf_sim.cel.expressions import CompileError, EvaluationError, expression
from kopf_sim.kube.resources import ResourceType

__all__ = ["WEBHOOK_VARIABLES", "ConditionsResult", "admission_request", "authorizer_of", "evaluate_conditions"]

#: What a webhook's match conditions may read (a policy's have ``params``, ``namespaceObject``, ``variables`` too).
WEBHOOK_VARIABLES = frozenset({"object", "oldObject", "request", "authorizer"})


@dataclasses.dataclass(frozen=True)
class ConditionsResult:
    """Whether the conditions select the request, or why they could not tell (with ``failurePolicy: Fail``)."""

    matches: bool
    error: str | None = None


def evaluate_conditions(
    conditions: Iterable[Any], values: Mapping[str, Any], variables: frozenset[str], *, fail_closed: bool
) -> ConditionsResult:
    """The conditions' verdict on a request (see the module); ``values`` are the CEL variables by name."""
    failures: list[str] = []
    for condition in conditions:
        source = str(condition.get("expression") or "") if isinstance(condition, Mapping) else ""
        try:
            result = expression(source, variables).evaluate(values)
        except (CompileError, EvaluationError) as exc:
            failures.append(f"expression '{source}' resulted in error: {exc}")
            continue
        if result is False:
            return ConditionsResult(False)
    if failures:
        return ConditionsResult(False, _aggregated(failures) if fail_closed else None)
    return ConditionsResult(True)


def admission_request(attrs: Attributes, kind: GroupVersionKind, resource: ResourceType) -> dict[str, Any]:
    """CEL's ``request``: the admission request as of ``kind``/``resource`` (a webhook's version, or as asked)."""
    request_group, request_version, request_kind = attrs.gvk
    rtype = attrs.rtype
    return {
        "kind": {"group": kind[0], "version": kind[1], "kind": kind[2]},
        "resource": {"group": resource.group, "version": resource.version, "resource": resource.plural},
        "subResource": attrs.subresource or "",
        "requestKind": {"group": request_group, "version": request_version, "kind": request_kind},
        "requestResource": {"group": rtype.group, "version": rtype.version, "resource": rtype.plural},
        "requestSubResource": attrs.subresource or "",
        "name": attrs.name,
        "namespace": attrs.namespace or "",
        "operation": attrs.operation,
        "userInfo": dict(attrs.user_info),
        "dryRun": attrs.dry_run,
        "options": dict(attrs.options),
    }


def authorizer_of(attrs: Attributes) -> dict[str, str]:
    """CEL's ``authorizer`` for the request's user, with ``requestResource`` the request's own resource."""
    rtype = attrs.rtype
    request = (rtype.group, rtype.plural, attrs.subresource or "", attrs.namespace or "", attrs.name)
    return authorizer_value(attrs.user_info, request)


def _aggregated(messages: list[str]) -> str:
    """Several errors as Go's ``utilerrors.NewAggregate`` prints them: one as it is, more in brackets."""
    unique = list(dict.fromkeys(messages))
    return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"
