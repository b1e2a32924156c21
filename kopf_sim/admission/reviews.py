"""``AdmissionReview`` requests in the version a webhook accepts, and its responses checked as the apiserver does.

The version is the first of the webhook's ``admissionReviewVersions`` that the apiserver knows (v1, v1beta1).
A response must decode as an AdmissionReview (Go's typed decoding), and, in v1, have the review's
``apiVersion``/``kind`` and ``uid``; a patch comes with its ``patchType``, and only from mutating webhooks.
A response that fails these checks is a failure to call the webhook (its failure policy decides).
"""

from __future__ import annotations

import base64
import dataclasses
from collections.abc import Sequence
from typing import Any

from kopf_sim.admission.attributes import Attributes
from kopf_sim.admission.matching import Invocation
from kopf_sim.kube.objects import JsonDict
from kopf_sim.writes import gotypes
from kopf_sim.writes.gotypes import BOOL, BYTES, INT32, STRING, ListOf, MapOf, Struct

__all__ = ["KNOWN_VERSIONS", "CallFailure", "Response", "negotiated_version", "read_response", "review"]

KNOWN_VERSIONS = ("v1", "v1beta1")
_GROUP = "admission.k8s.io"


class CallFailure(Exception):
    """The webhook could not be called, or answered what is not a valid review: subject to its failure policy.

    The message is what the apiserver says after ``failed calling webhook "<name>":`` (and a space).
    """


@dataclasses.dataclass(frozen=True)
class Response:
    """A webhook's verified answer."""

    allowed: bool
    patch: bytes  # the decoded JSON patch (empty if none)
    patch_type: str
    status: JsonDict | None  # why not allowed (a ``Status``, maybe partial)
    warnings: list[str]


def negotiated_version(versions: Sequence[str]) -> str | None:
    """The first of a webhook's review versions that the apiserver knows, or None."""
    return next((version for version in versions if version in KNOWN_VERSIONS), None)


def review(
    version: str, uid: str, attrs: Attributes, call: Invocation, obj: JsonDict | None, old: JsonDict | None
) -> JsonDict:
    """The review sent to the webhook: the request as of the webhook's version, and as the client asked."""
    group, kind_version, kind = call.kind
    resource = call.resource
    request_group, request_version, request_kind = attrs.gvk
    request: JsonDict = {
        "uid": uid,
        "kind": {"group": group, "version": kind_version, "kind": kind},
        "resource": {"group": resource.group, "version": resource.version, "resource": resource.plural},
        "requestKind": {"group": request_group, "version": request_version, "kind": request_kind},
        "requestResource": {
            "group": attrs.rtype.group,
            "version": attrs.rtype.version,
            "resource": attrs.rtype.plural,
        },
        "name": attrs.name,
        "operation": attrs.operation,
        "userInfo": attrs.user_info,
        "object": call.converted(obj, attrs),
        "oldObject": call.converted(old, attrs),
        "dryRun": attrs.dry_run,
        "options": attrs.options,
    }
    if not request["name"]:
        del request["name"]  # Go omits an empty name
    if attrs.subresource:
        request["subResource"] = request["requestSubResource"] = attrs.subresource
    if attrs.namespace:
        request["namespace"] = attrs.namespace
    return {"apiVersion": f"{_GROUP}/{version}", "kind": "AdmissionReview", "request": request}


_STATUS = Struct(
    "Status",
    "v1",
    {"status": STRING, "message": STRING, "reason": STRING, "code": INT32, "details": Struct("StatusDetails", "v1")},
)
_REVIEW = Struct(
    "AdmissionReview",
    "v1",
    {
        "apiVersion": STRING,
        "kind": STRING,
        "response": Struct(
            "AdmissionResponse",
            "v1",
            {
                "uid": STRING,
                "allowed": BOOL,
                "status": _STATUS,
                "patch": BYTES,
                "patchType": STRING,
                "auditAnnotations": MapOf(STRING),
                "warnings": ListOf(STRING),
            },
        ),
    },
)
_KIND_STRUCT = 'struct { APIVersion string "json:\\"apiVersion,omitempty\\""; Kind string "json:\\"kind,omitempty\\"" }'


def read_response(version: str, uid: str, answer: Any, *, mutating: bool) -> Response:
    """The webhook's decoded answer (JSON), checked as the apiserver checks it; a :class:`CallFailure` if it fails."""
    if not isinstance(answer, dict):
        raise CallFailure(
            f"failed to call webhook: couldn't get version/kind; json parse error: json: cannot unmarshal "
            f"{gotypes.json_kind(answer)} into Go value of type {_KIND_STRUCT}"
        )
    problem = gotypes.first_error(answer, _REVIEW)
    if problem is not None:
        raise CallFailure(f"failed to call webhook: {problem}")
    response = answer.get("response")
    if not isinstance(response, dict):
        raise _invalid("webhook response was absent")
    patch_type = str(response.get("patchType") or "")
    patch = base64.b64decode(response.get("patch") or "")
    if version == "v1":  # v1beta1 answers are not checked for these (the apiserver's backwards compatibility)
        expected = f"{_GROUP}/v1, Kind=AdmissionReview"
        got = f"{_group_version(answer.get('apiVersion'))}, Kind={answer.get('kind') or ''}"
        if got != expected:
            raise _invalid(f"expected webhook response of {expected}, got {got}")
        if response.get("uid", "") != uid:
            raise _invalid(f'expected response.uid="{uid}", got "{response.get("uid", "")}"')
        if mutating and patch and not patch_type:
            raise _invalid("webhook returned response.patch but not response.patchType")
        if mutating and not patch and patch_type:
            raise _invalid("webhook returned response.patchType but not response.patch")
        if mutating and patch_type and patch_type != "JSONPatch":
            raise _invalid(f'webhook returned invalid response.patchType of "{patch_type}"')
    if not mutating and patch:
        raise _invalid("validating webhook may not return response.patch")
    if not mutating and patch_type:
        raise _invalid("validating webhook may not return response.patchType")
    status = response.get("status")
    return Response(
        allowed=bool(response.get("allowed")),
        patch=patch,
        patch_type=patch_type,
        status=dict(status) if isinstance(status, dict) else None,
        warnings=[str(warning) for warning in response.get("warnings") or ()],
    )


def _group_version(api_version: Any) -> str:
    """An ``apiVersion`` as Go prints a group-version: ``group/version``, ``/v1`` for the core group, ``/``."""
    text = str(api_version or "")
    return text if "/" in text else f"/{text}"


def _invalid(reason: str) -> CallFailure:
    return CallFailure(f"received invalid webhook response: {reason}")
