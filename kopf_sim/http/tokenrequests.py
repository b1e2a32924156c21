"""``serviceaccounts/NAME/token``: a TokenRequest issues a token that authenticates as the service account.

As the apiserver's token subresource (what ``kubectl create token NAME`` calls): the token acts as
``system:serviceaccount:NS:NAME`` with its groups, and RBAC applies to it; it expires after
``spec.expirationSeconds`` (3600 by default, at least 600) of the cluster's time; a token bound to an object
(``spec.boundObjectRef``: a Pod, Secret or Node) stops working when that object is deleted.
Tokens are opaque strings here, not signed JWTs: nothing in the simulator reads their claims.
"""

from __future__ import annotations

import datetime
from typing import Any

from kopf_sim.kube import errors
from kopf_sim.kube.objects import JsonDict
from kopf_sim.rbac.access import Access
from kopf_sim.rbac.users import SERVICE_ACCOUNT_PREFIX, user_named
from kopf_sim.store.cluster import Cluster
from kopf_sim.timing.clock import format_timestamp

__all__ = ["DEFAULT_AUDIENCES", "issue_token"]

GROUP = "authentication.k8s.io"
KIND = "TokenRequest"
DEFAULT_AUDIENCES = ("https://kubernetes.default.svc.cluster.local",)  # the apiserver's --api-audiences
DEFAULT_EXPIRATION = 3600
MIN_EXPIRATION = 600
MAX_EXPIRATION = 2**32
_BINDABLE = {"Pod": ("", "pods", True), "Secret": ("", "secrets", True), "Node": ("", "nodes", False)}


def issue_token(cluster: Cluster, access: Access, namespace: str, name: str, body: Any) -> JsonDict:
    """The created TokenRequest with its token in ``status`` (422, 404 or 409 as the apiserver's, if not)."""
    if not isinstance(body, dict):
        raise errors.bad_request(f"the object provided is unrecognized (must be of type {KIND})")
    spec = body.get("spec") if isinstance(body.get("spec"), dict) else {}
    assert isinstance(spec, dict)
    expiration, audiences, bound = _checked_spec(name, spec)
    account = cluster.peek(("", "serviceaccounts"), namespace, name)
    if account is None:
        raise errors.not_found("serviceaccounts", "", name)
    alive = _bound_object(cluster, namespace, bound) if bound else None
    now = cluster.clock()
    expires = now + datetime.timedelta(seconds=expiration)
    user = user_named(f"{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}")
    token = access.add_token(user, label=f"token of {user.name}", expires=expires, alive=alive)
    metadata = body.get("metadata") if isinstance(body.get("metadata"), dict) else {}
    return {
        "kind": KIND,
        "apiVersion": f"{GROUP}/v1",
        "metadata": {**(metadata or {}), "name": name, "namespace": namespace, "creationTimestamp": None},
        "spec": {"audiences": list(audiences), "expirationSeconds": expiration, "boundObjectRef": bound or None},
        "status": {"token": token, "expirationTimestamp": format_timestamp(expires)},
    }


def _checked_spec(name: str, spec: JsonDict) -> tuple[int, tuple[str, ...], JsonDict]:
    """The expiration, audiences and bound object of a request's spec, defaulted; a 422 if invalid."""
    causes: list[dict[str, str]] = []
    expiration = spec.get("expirationSeconds")
    if expiration is None:
        expiration = DEFAULT_EXPIRATION
    elif not isinstance(expiration, int) or isinstance(expiration, bool):
        raise errors.bad_request(
            f"the object provided is unrecognized (must be of type {KIND}): json: cannot unmarshal "
            f"{type(expiration).__name__} into Go struct field TokenRequestSpec.spec.expirationSeconds of type int64"
        )
    elif expiration < MIN_EXPIRATION:
        causes.append(_cause(expiration, "may not specify a duration less than 10 minutes"))
    elif expiration > MAX_EXPIRATION:
        causes.append(_cause(expiration, "may not specify a duration larger than 2^32 seconds"))
    audiences = spec.get("audiences") or list(DEFAULT_AUDIENCES)
    if not isinstance(audiences, list) or not all(isinstance(audience, str) for audience in audiences):
        raise errors.bad_request(f"the object provided is unrecognized (must be of type {KIND}): bad audiences")
    bound = spec.get("boundObjectRef") or {}
    if not isinstance(bound, dict):
        raise errors.bad_request(f"the object provided is unrecognized (must be of type {KIND}): bad boundObjectRef")
    causes += _bound_kind_causes(bound)
    if causes:
        raise errors.invalid(KIND, GROUP, name, causes)
    return expiration, tuple(audiences), dict(bound)


def _bound_kind_causes(bound: JsonDict) -> list[dict[str, str]]:
    if not bound or bound.get("kind") in _BINDABLE:
        return []
    kinds = ", ".join(f'"{kind}"' for kind in _BINDABLE)
    message = f'Unsupported value: "{bound.get("kind")}": supported values: {kinds}'
    return [{"reason": "FieldValueNotSupported", "message": message, "field": "spec.boundObjectRef.kind"}]


def _cause(expiration: int, message: str) -> dict[str, str]:
    return {
        "reason": "FieldValueInvalid",
        "message": f"Invalid value: {expiration}: {message}",
        "field": "spec.expirationSeconds",
    }


def _bound_object(cluster: Cluster, namespace: str, bound: JsonDict) -> Any:
    """A check that the bound object still exists (the token's life); 404 or 409 if it is not there now."""
    group, plural, namespaced = _BINDABLE[str(bound["kind"])]
    name = str(bound.get("name") or "")
    obj = cluster.peek((group, plural), namespace if namespaced else None, name)
    if obj is None:
        raise errors.not_found(plural, group, name)
    uid = str(obj.get("metadata", {}).get("uid", ""))
    if bound.get("uid") and bound["uid"] != uid:
        raise errors.ApiError(
            409,
            "Conflict",
            f"the UID in the bound object reference ({bound['uid']}) does not match the UID in record. "
            "The object might have been deleted and then recreated",
        )
    bound["uid"] = uid
    return lambda: cluster.by_uid(uid) is not None
