"""The reviews: "may this user do that?", answered as the simulator's RBAC decides, and "who am I?".

``kubectl auth can-i`` (a SelfSubjectAccessReview, for the requester or whom it impersonates), ``kubectl auth
can-i --list`` (a SelfSubjectRulesReview), and SubjectAccessReviews about any user get the answer of
:mod:`kopf_sim.rbac`: "yes" to everything while RBAC is not enforced, as for a cluster-admin. The reviews are
created and returned, never stored, as by the apiserver. ``kubectl auth whoami`` (a SelfSubjectReview of
``authentication.k8s.io``) gets the requester's user name and groups.
"""

from __future__ import annotations

from typing import Any

from kopf_sim.kube import errors
from kopf_sim.kube.objects import JsonDict
from kopf_sim.kube.resources import ResourceType
from kopf_sim.rbac.access import Access, Identity
from kopf_sim.rbac.attributes import Attributes
from kopf_sim.rbac.users import ADMIN, User, user_named

__all__ = ["review"]

_EVERYTHING: JsonDict = {
    "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
    "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
    "incomplete": False,
}


def review(
    rtype: ResourceType, namespace: str | None, body: Any, access: Access | None = None, asker: Identity | None = None
) -> JsonDict:
    """The created review with its status: the decision about the asked request (or the rules, for a rules review)."""
    if not isinstance(body, dict):
        raise errors.bad_request(f"the object provided is unrecognized (must be of type {rtype.kind})")
    if rtype.kind == "SelfSubjectReview":
        return _self_subject_review(rtype, asker)
    spec = body.get("spec")
    spec = dict(spec) if isinstance(spec, dict) else {}
    causes = list(_causes(rtype, namespace, spec))
    if causes:
        raise errors.invalid(rtype.kind, rtype.group, "", causes)
    metadata: JsonDict = body["metadata"] if isinstance(body.get("metadata"), dict) else {}
    status = _status(rtype.kind, spec, access, asker)
    return {
        "kind": rtype.kind,
        "apiVersion": rtype.api_version,
        "metadata": dict(metadata),
        "spec": spec,
        "status": status,
    }


def _self_subject_review(rtype: ResourceType, asker: Identity | None) -> JsonDict:
    """``kubectl auth whoami``: the requester's user name and groups, as authenticated (or impersonated)."""
    user = asker.user if asker is not None else ADMIN
    return {
        "kind": rtype.kind,
        "apiVersion": rtype.api_version,
        "metadata": {"creationTimestamp": None},
        "status": {"userInfo": {"username": user.name, "groups": list(user.groups)}},
    }


def _causes(rtype: ResourceType, namespace: str | None, spec: JsonDict) -> list[dict[str, str]]:
    """The reviews' own validation: what to ask about, and whom (for the non-self ones)."""
    found: list[dict[str, str]] = []
    if (
        rtype.kind in ("SubjectAccessReview", "LocalSubjectAccessReview")
        and not spec.get("user")
        and not spec.get("groups")
    ):
        found.append(
            {
                "reason": "FieldValueInvalid",
                "message": 'Invalid value: "": at least one of user or group must be specified',
                "field": "spec.user",
            }
        )
    if rtype.kind != "SelfSubjectRulesReview":
        resource, non_resource = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
        if not resource and not non_resource:
            found.append(
                {
                    "reason": "FieldValueRequired",
                    "message": "Required value: exactly one of nonResourceAttributes or resourceAttributes "
                    "must be specified",
                    "field": "spec.resourceAttributes",
                }
            )
        elif (
            rtype.kind == "LocalSubjectAccessReview"
            and isinstance(resource, dict)
            and resource.get("namespace", "") != namespace
        ):
            found.append(
                {
                    "reason": "FieldValueInvalid",
                    "message": f'Invalid value: "{resource.get("namespace", "")}": must match metadata.namespace',
                    "field": "spec.resourceAttributes.namespace",
                }
            )
    return found


def _status(kind: str, spec: JsonDict, access: Access | None, asker: Identity | None) -> JsonDict:
    """The answer: allowed or not (with the apiserver's reason), or the rules of a rules review."""
    if access is None or not access.enforce:
        return dict(_EVERYTHING) if kind == "SelfSubjectRulesReview" else {"allowed": True}
    user = asker.user if asker is not None else None
    if kind in ("SubjectAccessReview", "LocalSubjectAccessReview") or user is None:
        groups = spec.get("groups")
        user = user_named(
            str(spec.get("user") or ""), tuple(str(g) for g in groups or ()) if isinstance(groups, list) else ()
        )
    if kind == "SelfSubjectRulesReview":
        return _rules_status(access, user, str(spec.get("namespace") or ""))
    resource = spec.get("resourceAttributes")
    if not isinstance(resource, dict):  # non-resource URLs: discovery and health, open to authenticated users
        return {"allowed": True} if "system:authenticated" in user.groups else {"allowed": False}
    attrs = Attributes(
        verb=str(resource.get("verb") or ""),
        group=str(resource.get("group") or ""),
        resource=str(resource.get("resource") or ""),
        subresource=str(resource.get("subresource") or ""),
        namespace=str(resource.get("namespace") or ""),
        name=str(resource.get("name") or ""),
    )
    decision = access.decide(user, attrs)
    return {"allowed": True, "reason": decision.reason} if decision.allowed else {"allowed": False}


def _rules_status(access: Access, user: User, namespace: str) -> JsonDict:
    rules = access.policy.rules_for(user, namespace)
    resource_rules = [
        {key: list(rule[key]) for key in ("verbs", "apiGroups", "resources", "resourceNames") if rule.get(key)}
        for rule in rules
        if rule.get("resources")
    ]
    non_resource = [
        {"verbs": list(rule.get("verbs") or ()), "nonResourceURLs": list(rule["nonResourceURLs"])}
        for rule in rules
        if rule.get("nonResourceURLs")
    ]
    return {"resourceRules": resource_rules, "nonResourceRules": non_resource, "incomplete": False}
