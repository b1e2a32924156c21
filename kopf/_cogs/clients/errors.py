"""
API errors: the HTTP errors of the Kubernetes API as exceptions, with the parsed ``Status``.

The Kubernetes API reports failures as ``kind: Status`` objects with ``code``, ``reason``,
``message``, and ``details``. The exceptions carry them as attributes; the specific classes
are picked by the HTTP status code, so that callers can catch e.g. only the 404s or only
the 5xx errors.
"""

import json
from collections.abc import Mapping
from typing import Any, TypedDict, cast

import aiohttp


class RawStatusDetails(TypedDict, total=False):
    name: str
    group: str
    kind: str
    uid: str
    causes: list[dict[str, Any]]
    retryAfterSeconds: int


class RawStatus(TypedDict, total=False):
    apiVersion: str
    kind: str
    metadata: dict[str, Any]
    status: str
    message: str
    reason: str
    details: RawStatusDetails
    code: int


class APIError(Exception):
    """An HTTP error of the Kubernetes API (any status code of 400+)."""

    def __init__(
        self,
        payload: RawStatus | None = None,
        *,
        status: int,
        method: str | None = None,
        url: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self._payload: RawStatus = payload if payload is not None else RawStatus()
        self._status = status
        self._method = method
        self._url = url
        self._headers = dict(headers or {})
        message = self._payload.get("message") or f"HTTP {status}"
        where = f" ({method} {url})" if method and url else ""
        super().__init__(f"{message}{where}", self._payload)

    @property
    def status(self) -> int:
        """The HTTP status code of the response."""
        return self._status

    @property
    def code(self) -> int | None:
        """The ``code`` of the Status object, if any (normally the same as the HTTP status)."""
        return self._payload.get("code")

    @property
    def message(self) -> str | None:
        return self._payload.get("message")

    @property
    def reason(self) -> str | None:
        return self._payload.get("reason")

    @property
    def details(self) -> RawStatusDetails | None:
        return self._payload.get("details")

    @property
    def payload(self) -> RawStatus:
        return self._payload

    @property
    def method(self) -> str | None:
        return self._method

    @property
    def url(self) -> str | None:
        return self._url

    @property
    def headers(self) -> Mapping[str, str]:
        return self._headers

    @property
    def retry_after(self) -> float | None:
        """The server's advice on when to retry: ``Retry-After`` or ``details.retryAfterSeconds``."""
        header = self._headers.get("Retry-After")
        if header is not None:
            try:
                return max(0.0, float(header))
            except ValueError:
                pass  # an HTTP-date: not used by the Kubernetes API; fall back to the details.
        details = self.details or {}
        seconds = details.get("retryAfterSeconds")
        return float(seconds) if isinstance(seconds, (int, float)) else None


class APIClientError(APIError):
    """4xx: the request is wrong; retrying it unchanged will not help."""


class APIServerError(APIError):
    """5xx: the server is wrong, presumably temporarily."""


class APIUnauthorizedError(APIClientError):
    """401: the credentials are invalid or expired."""


class APIForbiddenError(APIClientError):
    """403: the credentials are valid, but the permissions are insufficient."""


class APINotFoundError(APIClientError):
    """404: the object, the resource, or the namespace does not exist."""


class APIConflictError(APIClientError):
    """409: the object already exists, or was modified concurrently."""


class APIGoneError(APIClientError):
    """410: the requested resource version (or continue token) is too old, expired."""


class APIUnprocessableEntityError(APIClientError):
    """422: the object or the patch is invalid (e.g. fails the schema validation)."""


class APITooManyRequests(APIClientError):
    """429: throttled by the server; see :attr:`retry_after`."""


_CLASSES: Mapping[int, type[APIError]] = {
    401: APIUnauthorizedError,
    403: APIForbiddenError,
    404: APINotFoundError,
    409: APIConflictError,
    410: APIGoneError,
    422: APIUnprocessableEntityError,
    429: APITooManyRequests,
}


def parse_status(data: bytes | str | Mapping[str, Any] | None) -> RawStatus | None:
    """Extract a ``Status`` object from a response body, if it is one (otherwise, None)."""
    if data is None:
        return None
    if isinstance(data, (bytes, str)):
        try:
            data = json.loads(data)
        except ValueError:
            return None
    if isinstance(data, Mapping) and data.get("kind") == "Status":
        return cast(RawStatus, dict(data))
    return None


def make_error(
    status: int,
    payload: RawStatus | None = None,
    *,
    method: str | None = None,
    url: str | None = None,
    headers: Mapping[str, str] | None = None,
    text: str | None = None,
) -> APIError:
    """Build the most specific exception for an HTTP status code."""
    cls = _CLASSES.get(status)
    if cls is None:
        cls = APIServerError if status >= 500 else APIClientError if status >= 400 else APIError
    if payload is None and text:
        payload = RawStatus(message=text[:1000], code=status)
    return cls(payload, status=status, method=method, url=url, headers=headers)


async def check_response(response: aiohttp.ClientResponse) -> None:
    """Raise the API error if the response is an error (400+); do nothing otherwise."""
    if response.status < 400:
        return
    try:
        body = await response.read()
    except (aiohttp.ClientError, OSError):
        body = b""
    payload = parse_status(body)
    text = body.decode("utf-8", errors="replace") if payload is None and body else None
    raise make_error(
        response.status,
        payload,
        method=response.method,
        url=str(response.url.with_query(None)),
        headers=dict(response.headers),
        text=text,
    )
