"""CEL's ``authorizer`` in admission expressions: may the requesting user (or a service account) do that?

As the apiserver's authorizer library: ``authorizer.group('apps').resource('deployments').namespace('ns')
.name('web').check('update').allowed()``, ``authorizer.serviceAccount('ns', 'sa').resource(...)``,
``authorizer.path('/healthz').check('get')``, ``authorizer.requestResource.check('approve')`` (the request's own
resource), and a decision's ``allowed()``, ``reason()``, ``errored()``, ``error()``. The checks and decisions
travel through CEL as tagged strings (the bindings convert every value into a CEL one); the decisions are the
HTTP layer's (its RBAC, set in :data:`DECIDE` for each request): without one, everything is allowed, as for
the cluster admin that in-process writes are made by.
"""

from __future__ import annotations

import contextvars
import dataclasses
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kopf_sim.cel.library import LibraryError

__all__ = ["AUTHORIZER_FUNCTIONS", "DECIDE", "Check", "authorizer_value"]

_CHECK = "\U000f0000authorizer:"
_DECISION = "\U000f0000authorization:"
_REQUESTER = "kopfRequester"


@dataclasses.dataclass(frozen=True)
class Check:
    """What an expression asks about: a user (and groups), and a resource request or a non-resource path."""

    user: str
    groups: tuple[str, ...]
    verb: str = ""
    group: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    path: str = ""


#: The decision of a check (allowed, reason) by the cluster's authorization, for the request being handled.
DECIDE: contextvars.ContextVar[Callable[[Check], tuple[bool, str]] | None] = contextvars.ContextVar(
    "kopf_sim_cel_authorizer", default=None
)


def authorizer_value(user_info: Mapping[str, Any], request: Sequence[str]) -> dict[str, str]:
    """The ``authorizer`` variable for a request by this user; ``request``: its group, resource,
    subresource, namespace, name (for ``authorizer.requestResource``)."""
    groups = user_info.get("groups") or ()
    requester = Check(str(user_info.get("username", "")), tuple(str(g) for g in groups))
    group, resource, subresource, namespace, name = request
    request_check = dataclasses.replace(
        requester, group=group, resource=resource, subresource=subresource, namespace=namespace, name=name
    )
    return {_REQUESTER: _tagged(requester), "requestResource": _tagged(request_check)}


def _tagged(check: Check) -> str:
    return _CHECK + json.dumps(dataclasses.asdict(check))


def _check_of(target: Any) -> Check:
    if isinstance(target, Mapping) and isinstance(target.get(_REQUESTER), str):
        target = target[_REQUESTER]
    if not isinstance(target, str) or not target.startswith(_CHECK):
        raise LibraryError("no such overload: the receiver is not an authorizer")
    fields = json.loads(target[len(_CHECK) :])
    return Check(**{**fields, "groups": tuple(fields["groups"])})


def _with(field: str) -> Callable[[Any, str], str]:
    def set_field(target: Any, value: str) -> str:
        if not isinstance(value, str):
            raise LibraryError(f"no such overload: {field}() takes a string")
        fields = {**dataclasses.asdict(_check_of(target)), field: value}
        return _CHECK + json.dumps(fields)

    return set_field


def _service_account(target: Any, namespace: str, name: str) -> str:
    _check_of(target)
    account = f"system:serviceaccount:{namespace}:{name}"
    groups = ("system:serviceaccounts", f"system:serviceaccounts:{namespace}", "system:authenticated")
    return _tagged(Check(account, groups))


def _check(target: Any, verb: str) -> str:
    check = dataclasses.replace(_check_of(target), verb=str(verb))
    decide = DECIDE.get()
    allowed, reason = (True, "") if decide is None else decide(check)
    return _DECISION + json.dumps({"allowed": allowed, "reason": reason})


def _decision(value: Any) -> dict[str, Any]:
    if not isinstance(value, str) or not value.startswith(_DECISION):
        raise LibraryError("no such overload: the receiver is not an authorization decision")
    decision: dict[str, Any] = json.loads(value[len(_DECISION) :])
    return decision


AUTHORIZER_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "group": _with("group"),
    "resource": _with("resource"),
    "subresource": _with("subresource"),
    "namespace": _with("namespace"),
    "name": _with("name"),
    "path": _with("path"),
    "serviceAccount": _service_account,
    "check": _check,
    "allowed": lambda value: bool(_decision(value)["allowed"]),
    "reason": lambda value: str(_decision(value)["reason"]),
    "errored": lambda value: _decision(value) is None,  # decisions here never fail: always false
    "error": lambda value: str(_decision(value).get("error", "")),
}
