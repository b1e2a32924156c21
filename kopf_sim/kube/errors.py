"""API errors as the apiserver reports them: ``kind: Status`` objects with its reasons, codes and texts.

Every failure in the simulator is raised as :class:`ApiError` and rendered by the HTTP layer,
so that clients (kubectl, the official client, kopf) see exactly what a real apiserver sends.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

JsonDict = dict[str, Any]


class ApiError(Exception):
    """A failed request: the HTTP code, the Status ``reason``, the message, optional details."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        *,
        details: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        list_meta: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = dict(details) if details else None
        self.headers = dict(headers) if headers else {}
        self.list_meta = dict(list_meta) if list_meta else {}  # the Status' own metadata (e.g. a continue token)

    def to_status(self) -> JsonDict:
        status: JsonDict = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": dict(self.list_meta),
            "status": "Failure",
            "message": self.message,
        }
        if self.reason:  # Go omits an empty reason (e.g. a webhook's denial that names none)
            status["reason"] = self.reason
        if self.details is not None:
            status["details"] = self.details
        status["code"] = self.code
        return status


def qualified(plural: str, group: str) -> str:
    """The resource name as the apiserver prints it in messages: ``widgets.acme.example`` or ``pods``."""
    return f"{plural}.{group}" if group else plural


def _details(plural: str, group: str, name: str | None) -> JsonDict:
    details: JsonDict = {}
    if name is not None:
        details["name"] = name
    if group:
        details["group"] = group
    details["kind"] = plural
    return details


def not_found(plural: str, group: str, name: str) -> ApiError:
    return ApiError(
        404, "NotFound", f'{qualified(plural, group)} "{name}" not found', details=_details(plural, group, name)
    )


def already_exists(plural: str, group: str, name: str) -> ApiError:
    return ApiError(
        409,
        "AlreadyExists",
        f'{qualified(plural, group)} "{name}" already exists',
        details=_details(plural, group, name),
    )


def conflict(plural: str, group: str, name: str) -> ApiError:
    message = (
        f'Operation cannot be fulfilled on {qualified(plural, group)} "{name}": '
        "the object has been modified; please apply your changes to the latest version and try again"
    )
    return ApiError(409, "Conflict", message, details=_details(plural, group, name))


def precondition_failed(plural: str, group: str, name: str, what: str) -> ApiError:
    message = f'Operation cannot be fulfilled on {qualified(plural, group)} "{name}": Precondition failed: {what}'
    return ApiError(409, "Conflict", message, details=_details(plural, group, name))


def invalid(kind: str, group: str, name: str, causes: Sequence[Mapping[str, str]]) -> ApiError:
    """422 Invalid with field causes, formatted as the apiserver aggregates them."""
    qualified_kind = f"{kind}.{group}" if group else kind
    texts = [f"{c['field']}: {c['message']}" if c.get("field") else c["message"] for c in causes]
    joined = texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"
    message = f'{qualified_kind} "{name}" is invalid: {joined}'
    details: JsonDict = {"name": name} if name else {}  # an empty name is omitted, as in Go
    if group:
        details["group"] = group
    details["kind"] = kind
    details["causes"] = [dict(c) for c in causes]
    return ApiError(422, "Invalid", message, details=details)


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def forbidden(plural: str, group: str, name: str, why: str) -> ApiError:
    message = f'{qualified(plural, group)} "{name}" is forbidden: {why}'
    return ApiError(403, "Forbidden", message, details=_details(plural, group, name))


def method_not_allowed() -> ApiError:
    return ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")


def unsupported_media_type(content_type: str, accepted: Sequence[str]) -> ApiError:
    message = "the body of the request was in an unknown format - accepted media types include: " + ", ".join(accepted)
    return ApiError(415, "UnsupportedMediaType", message)


def not_acceptable() -> ApiError:
    return ApiError(
        406, "NotAcceptable", "the server was unable to respond with a content type that the client supports"
    )


def request_too_large(limit: int) -> ApiError:
    return ApiError(413, "RequestEntityTooLarge", f"Request entity too large: limit is {limit}")


def expired(message: str, *, continue_token: str | None = None) -> ApiError:
    """410 Expired; for a compacted continue token, with the token that continues inconsistently instead."""
    return ApiError(410, "Expired", message, list_meta={"continue": continue_token} if continue_token else None)


def page_not_found() -> ApiError:
    return ApiError(404, "NotFound", "the server could not find the requested resource")


def unauthorized() -> ApiError:
    return ApiError(401, "Unauthorized", "Unauthorized")


def internal_error(exc: BaseException, request: str) -> ApiError:
    """A 500 for a failure of the server itself (a bug): the error, and the request it failed on."""
    cause = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return ApiError(
        500,
        "InternalError",
        f"Internal error occurred: {cause} (while handling {request})",
        details={"causes": [{"message": cause}]},
    )
