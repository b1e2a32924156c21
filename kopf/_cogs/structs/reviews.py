"""
The wire structures of admission control: reviews, client configs, and the webhook callback.

An apiserver POSTs an ``AdmissionReview`` with a ``request`` to a webhook server; the server
answers with an ``AdmissionReview`` with a ``response``. The client configs are what goes
into ``.webhooks[*].clientConfig`` of the validating/mutating webhook configurations:
either a ``url`` or a ``service``, optionally with a ``caBundle`` (base64 of PEM).

All of these are plain JSON-compatible dicts; the typed dicts only give hints.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, Literal, NotRequired, Protocol, TypeAlias, TypedDict, cast

#: The HTTP(S) headers of a webhook request, as passed to the admission handlers.
Headers: TypeAlias = Mapping[str, str]

#: The client's certificate as parsed by :meth:`ssl.SSLSocket.getpeercert` (if provided & verified).
SSLPeer: TypeAlias = Mapping[str, Any]

#: The operations of admission requests.
Operation: TypeAlias = Literal["CREATE", "UPDATE", "DELETE", "CONNECT"]

#: The operations of admission handlers: ``None`` or ``"*"`` for all of them.
OperationSpec: TypeAlias = Operation | Literal["*"] | None

#: The subresources of admission handlers: ``None`` for the main body only, ``"*"`` for all.
SubResource: TypeAlias = str | None

#: All known operations, in the order as the Kubernetes documentation lists them.
OPERATIONS: tuple[Operation, ...] = ("CREATE", "UPDATE", "DELETE", "CONNECT")

#: The API versions of the reviews as sent by apiservers (``v1`` since Kubernetes 1.16).
REVIEW_API_VERSIONS: tuple[str, ...] = ("admission.k8s.io/v1", "admission.k8s.io/v1beta1")
REVIEW_KIND = "AdmissionReview"


class WebhookClientConfigService(TypedDict, total=False):
    """A reference to an in-cluster service that serves the webhooks."""

    namespace: str | None
    name: str | None
    path: str | None
    port: int | None


class WebhookClientConfig(TypedDict, total=False):
    """
    How apiservers reach a webhook server: either a URL or a service, plus a CA bundle.

    The dict goes into the managed webhook configurations "as is". The framework adds
    the handler ids as the last path component to ``url`` and to ``service.path``.
    """

    caBundle: str | None  # base64-encoded PEM
    url: str | None
    service: WebhookClientConfigService | None


class UserInfo(TypedDict):
    """The identity of the requester (e.g. the user of ``kubectl``) who triggered the admission."""

    username: str
    uid: str
    groups: list[str]


class RequestKind(TypedDict):
    group: str
    version: str
    kind: str


class RequestResource(TypedDict):
    group: str
    version: str
    resource: str


class RequestPayload(TypedDict):
    """The ``request`` field of an admission review as sent by apiservers."""

    uid: str
    kind: RequestKind
    resource: RequestResource
    subResource: NotRequired[str]
    requestKind: NotRequired[RequestKind]
    requestResource: NotRequired[RequestResource]
    requestSubResource: NotRequired[str]
    name: NotRequired[str]
    namespace: NotRequired[str]
    operation: Operation
    userInfo: UserInfo
    object: NotRequired[Mapping[str, Any] | None]
    oldObject: NotRequired[Mapping[str, Any] | None]
    options: NotRequired[Mapping[str, Any] | None]
    dryRun: NotRequired[bool]


class Request(TypedDict):
    """A whole admission review with a request, as POSTed to the webhook servers."""

    apiVersion: str
    kind: str
    request: RequestPayload


class StatusCause(TypedDict, total=False):
    """A field at fault in a rejection, as the apiserver's validation names it (``details.causes[*]``)."""

    reason: str  # e.g. FieldValueInvalid, FieldValueRequired
    message: str
    field: str  # a path like spec.items[0].name


class StatusDetails(TypedDict, total=False):
    """What a rejection is about: the object, and the fields at fault."""

    name: str
    group: str
    kind: str
    causes: list[StatusCause]


class ResponseStatus(TypedDict, total=False):
    """The reason of a rejection (a shortened ``kind: Status``)."""

    code: int
    message: str
    reason: str
    details: StatusDetails


class ResponsePayload(TypedDict):
    """The ``response`` field of an admission review as returned to apiservers."""

    uid: str
    allowed: bool
    warnings: NotRequired[list[str]]
    status: NotRequired[ResponseStatus]  # on the wire, the rejection reason is "status" (not "result")
    patch: NotRequired[str]  # base64-encoded JSON-patch
    patchType: NotRequired[Literal["JSONPatch"]]


class Response(TypedDict):
    """A whole admission review with a response, as returned by the webhook servers."""

    apiVersion: str
    kind: str
    response: ResponsePayload


class WebhookFn(Protocol):
    """
    The framework's callback that webhook servers invoke for every admission request.

    The framework provides it; servers and tunnels only call it with the parsed payload
    (plus the hints from the URL and the connection), await it, and send its result back
    as JSON. What happens inside is the framework's business.
    """

    def __call__(
        self,
        request: Request,
        *,
        webhook: str | None = None,
        headers: Headers | None = None,
        sslpeer: SSLPeer | None = None,
    ) -> Awaitable[Response]: ...


#: A webhook server or tunnel: called once with the callback, it yields the client configs.
WebhookServerProtocol: TypeAlias = Callable[[WebhookFn], AsyncIterator[WebhookClientConfig]]


class MalformedReviewError(ValueError):
    """A payload that is valid JSON but not an admission review request."""


def check_request(payload: Any) -> Request:
    """Make sure that a parsed JSON payload looks like an admission review request, and return it typed."""
    if not isinstance(payload, Mapping):
        raise MalformedReviewError(f"An {REVIEW_KIND} must be a JSON object, got {type(payload).__name__}.")
    kind = payload.get("kind")
    if kind != REVIEW_KIND:
        raise MalformedReviewError(f"The kind must be {REVIEW_KIND!r}, got {kind!r}.")
    api_version = payload.get("apiVersion")
    if not isinstance(api_version, str) or not api_version.startswith("admission.k8s.io/"):
        raise MalformedReviewError(f"The apiVersion must be admission.k8s.io/*, got {api_version!r}.")
    request = payload.get("request")
    if not isinstance(request, Mapping):
        raise MalformedReviewError(f"An {REVIEW_KIND} must have a 'request' object.")
    uid = request.get("uid")
    if not isinstance(uid, str) or not uid:
        raise MalformedReviewError(f"An {REVIEW_KIND}'s request must have a 'uid' string.")
    _check_fields(request)
    return cast(Request, payload)


# The fields of a review's request and their JSON types, as apiservers send them (absent or null is fine).
_STRING_FIELDS = ("subResource", "requestSubResource", "name", "namespace", "operation")
_OBJECT_FIELDS = ("object", "oldObject", "options", "userInfo")
_GVK_FIELDS = {
    "kind": ("group", "version", "kind"),
    "requestKind": ("group", "version", "kind"),
    "resource": ("group", "version", "resource"),
    "requestResource": ("group", "version", "resource"),
}


def _check_fields(request: Mapping[str, Any]) -> None:
    """Make sure that the request's fields have the types that the framework relies on."""

    def refuse(field: str, what: str) -> MalformedReviewError:
        return MalformedReviewError(
            f"An {REVIEW_KIND}'s request.{field} must be {what}, got {type(request[field]).__name__}."
        )

    for field in _STRING_FIELDS:
        if request.get(field) is not None and not isinstance(request[field], str):
            raise refuse(field, "a string")
    for field in _OBJECT_FIELDS:
        if request.get(field) is not None and not isinstance(request[field], Mapping):
            raise refuse(field, "an object")
    for field, parts in _GVK_FIELDS.items():
        value = request.get(field)
        if value is None:
            continue
        if not isinstance(value, Mapping) or any(not isinstance(value.get(part, ""), str) for part in parts):
            raise MalformedReviewError(
                f"An {REVIEW_KIND}'s request.{field} must be an object with the strings {', '.join(parts)}."
            )
    if request.get("dryRun") is not None and not isinstance(request["dryRun"], bool):
        raise refuse("dryRun", "a boolean")
    user = request.get("userInfo") or {}
    if not isinstance(user.get("username", ""), str) or not isinstance(user.get("groups") or [], list):
        raise MalformedReviewError(
            f"An {REVIEW_KIND}'s request.userInfo must have a string username and a list of groups."
        )
