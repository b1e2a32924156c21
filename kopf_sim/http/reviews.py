"""The ``authorization.k8s.io`` reviews: "may this user do that?", answered "yes", as the simulator allows all.

``kubectl auth can-i`` (a SelfSubjectAccessReview), ``kubectl auth can-i --list`` (a SelfSubjectRulesReview)
and controllers that check their permissions before acting get the answer a real cluster-admin gets, instead
of a 404. The reviews are created and returned, never stored, as by the apiserver.
"""

from __future__ import annotations

from typing import Any

from kopf_sim.kube import errors
from kopf_sim.kube.objects import JsonDict
from kopf_sim.kube.resources import ResourceType

__all__ = ["review"]

_EVERYTHING: JsonDict = {
    "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
    "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
    "incomplete": False,
}


def review(rtype: ResourceType, namespace: str | None, body: Any) -> JsonDict:
    """The created review with its status: allowed (or all rules, for a rules review)."""
    if not isinstance(body, dict):
        raise errors.bad_request(f"the object provided is unrecognized (must be of type {rtype.kind})")
    spec = body.get("spec")
    spec = dict(spec) if isinstance(spec, dict) else {}
    causes = list(_causes(rtype, namespace, spec))
    if causes:
        raise errors.invalid(rtype.kind, rtype.group, "", causes)
    metadata: JsonDict = body["metadata"] if isinstance(body.get("metadata"), dict) else {}
    status: JsonDict = dict(_EVERYTHING) if rtype.kind == "SelfSubjectRulesReview" else {"allowed": True}
    return {
        "kind": rtype.kind,
        "apiVersion": rtype.api_version,
        "metadata": dict(metadata),
        "spec": spec,
        "status": status,
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
