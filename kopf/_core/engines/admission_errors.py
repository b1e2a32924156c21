"""
The error type for admission handlers to reject an API request with a message, a code, and field causes.

It lives with the admission engine (not with the generic errors of the actions layer),
since only the admission webhooks know what to do with the code and the message.
"""

from collections.abc import Iterable, Mapping
from typing import Any, TypeAlias

from kopf._cogs.structs import reviews
from kopf._core.actions.errors import PermanentError

#: A field cause as given: ``(field, message)``, ``(field, message, reason)``, or a mapping with these keys.
AdmissionCause: TypeAlias = tuple[str, str] | tuple[str, str, str] | Mapping[str, Any]

#: The cause types of the apiserver's field errors, by the start of their messages (Go's ``field.Error``).
_REASONS_BY_PREFIX = (
    ("Invalid value", "FieldValueInvalid"),
    ("Required value", "FieldValueRequired"),
    ("Forbidden", "FieldValueForbidden"),
    ("Unsupported value", "FieldValueNotSupported"),
    ("Duplicate value", "FieldValueDuplicate"),
    ("Too long", "FieldValueTooLong"),
    ("Too many", "FieldValueTooMany"),
    ("Not found", "FieldValueNotFound"),
    ("Internal error", "InternalError"),
)


class AdmissionError(PermanentError):
    """
    Raised by admission handlers when an API operation under check is bad.

    It behaves as a permanent error but carries the message & the HTTP-like code
    for the admission review response. Other errors always produce the code 500.

    Optionally, the denial names the fields at fault (``causes``) and the reason of the status,
    as the apiserver's own validation does (a ``422 Invalid`` status with ``details.causes``):
    clients then show every field error (kubectl prints them as a bulleted list) and see the status
    as invalid (Go's ``apierrors.IsInvalid``). Each cause is ``(field, message)``,
    ``(field, message, reason)``, or a mapping with ``field``, ``message``, ``reason``; a missing
    reason is taken from the message as Go's field errors word it (``"Invalid value: …"`` is
    ``FieldValueInvalid``, ``"Required value…"`` is ``FieldValueRequired``, etc.). With causes and
    no reason, the reason is ``Invalid``; with causes and no message, the message lists the causes.
    """

    def __init__(
        self,
        message: str | None = "",
        code: int | None = 500,
        *,
        reason: str | None = None,
        causes: Iterable[AdmissionCause] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.causes: list[reviews.StatusCause] = [_as_cause(cause) for cause in causes or ()]
        self.reason = reason if reason is not None else ("Invalid" if self.causes else None)


def _as_cause(cause: AdmissionCause) -> reviews.StatusCause:
    """A field cause as the apiserver sends it: ``{"reason": …, "message": …, "field": …}``."""
    if isinstance(cause, Mapping):
        field, message, reason = cause.get("field"), cause.get("message"), cause.get("reason")
    elif isinstance(cause, tuple) and len(cause) in (2, 3):
        field, message, reason = cause[0], cause[1], (cause[2] if len(cause) == 3 else None)
    else:
        raise TypeError(f"An admission cause must be (field, message[, reason]) or a mapping; got {cause!r}.")
    if not isinstance(message, str) or not message:
        raise TypeError(f"An admission cause needs a non-empty message; got {cause!r}.")
    if field is not None and not isinstance(field, str):
        raise TypeError(
            f"An admission cause's field must be a string (a path like 'spec.items[0].name'); got {field!r}."
        )
    found: reviews.StatusCause = {"reason": str(reason) if reason else _reason_of(message), "message": message}
    if field:
        found["field"] = field
    return found


def _reason_of(message: str) -> str:
    for prefix, reason in _REASONS_BY_PREFIX:
        if message.startswith(prefix):
            return reason
    return "FieldValueInvalid"
