"""
The errors that handlers raise to control their own retrying, and the modes of retrying.

The execution machinery interprets these errors: temporary ones are retried after a delay,
permanent ones stop the handler for the current change-set, and arbitrary errors are
treated according to the handler's ``errors=`` mode.
"""

import enum

# The documented default delay of retries: both for `TemporaryError` and for `backoff=`.
DEFAULT_RETRY_DELAY = 60


class ErrorsMode(enum.Enum):
    """How arbitrary (non-temporary/non-permanent) exceptions are treated."""

    IGNORED = 1
    TEMPORARY = 2
    PERMANENT = 3


class PermanentError(Exception):
    """A fatal handler error, the retries are useless."""


class TemporaryError(Exception):
    """A potentially recoverable error, should be retried."""

    def __init__(
        self,
        __msg: str | None = None,
        delay: float | None = DEFAULT_RETRY_DELAY,
    ) -> None:
        super().__init__(__msg)
        self.delay = delay


class HandlerTimeoutError(PermanentError):
    """An error for the handler's timeout (if set)."""


class HandlerRetriesError(PermanentError):
    """An error for the handler's retries exceeded (if set)."""
