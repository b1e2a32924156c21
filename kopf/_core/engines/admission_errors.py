"""
The error type for admission handlers to reject an API request with a message and a code.

It lives with the admission engine (not with the generic errors of the actions layer),
since only the admission webhooks know what to do with the code and the message.
"""

from kopf._core.actions.errors import PermanentError


class AdmissionError(PermanentError):
    """
    Raised by admission handlers when an API operation under check is bad.

    It behaves as a permanent error but carries the message & the HTTP-like code
    for the admission review response. Other errors always produce the code 500.
    """

    def __init__(
        self,
        message: str | None = "",
        code: int | None = 500,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
