"""Sending a review to a webhook and reading its answer, with the apiserver's words for what goes wrong.

The apiserver posts the review to ``<url>?timeout=<n>s`` and gives up after ``timeoutSeconds`` (virtual
seconds under a virtual-time loop); transport failures are worded as Go's HTTP client words them
(``Post "<url>": dial tcp 127.0.0.1:1: connect: connection refused``), and answers as its REST client
reads them (a status other than 2xx, a content type it cannot decode, JSON that does not parse).
Webhooks registered in-process (by URL or by service) get the same JSON, with no sockets.
"""

from __future__ import annotations

import asyncio
import errno
import json
import os
import ssl
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import yaml

from kopf_sim.admission.configurations import Endpoint
from kopf_sim.admission.reviews import CallFailure
from kopf_sim.kube.objects import JsonDict

__all__ = ["InProcessHandler", "post"]

InProcessHandler = Callable[[JsonDict], Awaitable[JsonDict]]
_JSON_TYPES = ("application/json", "*/*")
_YAML_TYPES = ("application/yaml", "application/x-yaml", "text/yaml")
_TEXT_LIMIT = 1024  # how much of a text body the apiserver quotes


async def post(endpoint: Endpoint, review: JsonDict, *, timeout: int, handler: InProcessHandler | None) -> Any:
    """The webhook's answer, decoded; a :class:`CallFailure` in the apiserver's words if there is none."""
    url = f"{endpoint.url}?timeout={timeout}s"
    try:
        async with asyncio.timeout(timeout):
            if handler is not None:  # through JSON and back: in-process webhooks get what the wire would carry
                return json.loads(json.dumps(await handler(json.loads(json.dumps(review)))))
            return await _post_over_http(url, endpoint, review)
    except TimeoutError:
        raise CallFailure(f'failed to call webhook: Post "{url}": context deadline exceeded') from None
    except aiohttp.ClientError as exc:
        raise CallFailure(f'failed to call webhook: Post "{url}": {transport_error(exc, endpoint)}') from None
    except OSError as exc:
        raise CallFailure(f'failed to call webhook: Post "{url}": {_os_error(exc)}') from None


async def _post_over_http(url: str, endpoint: Endpoint, review: JsonDict) -> Any:
    ssl_context: ssl.SSLContext | bool = False
    if url.startswith("https://"):
        ssl_context = ssl.create_default_context()
        if endpoint.ca_bundle:
            try:
                ssl_context.load_verify_locations(cadata=endpoint.ca_bundle.decode(errors="replace"))
            except (ssl.SSLError, ValueError):
                raise CallFailure(
                    "failed to call webhook: could not get REST client: unable to load root certificates: "
                    "unable to parse bytes as PEM block"
                ) from None
    # A session per call: webhooks are few, and nothing outlives the request (no session to close later).
    async with (
        aiohttp.ClientSession() as session,
        session.post(url, json=review, ssl=ssl_context, headers={"Accept": "application/json, */*"}) as response,
    ):
        body = await response.read()
        return decoded_answer(response.status, response.headers.get("Content-Type", ""), body)


def decoded_answer(status: int, content_type: str, body: bytes) -> Any:
    """The answer as the apiserver's REST client decodes it; a :class:`CallFailure` with its words if it cannot."""
    media_type = content_type.split(";")[0].strip().lower() or "application/json"
    decodable = media_type in _JSON_TYPES or media_type in _YAML_TYPES
    if not 200 <= status <= 206:
        raise CallFailure(f"failed to call webhook: {_status_error(status, media_type, body, decodable)}")
    if not decodable:
        raise CallFailure(f"failed to call webhook: serializer for {content_type} doesn't exist")
    if not body:
        raise CallFailure(
            f"failed to call webhook: 0-length response with status code: {status} "
            f"and content type: {content_type or 'application/json'}"
        )
    try:
        if media_type in _YAML_TYPES:
            return yaml.safe_load(body)
        return json.loads(body)
    except (ValueError, yaml.YAMLError) as exc:
        detail = json_error(exc) if isinstance(exc, json.JSONDecodeError) else "error converting YAML to JSON"
        raise CallFailure(f"failed to call webhook: couldn't get version/kind; json parse error: {detail}") from None


def _status_error(status: int, media_type: str, body: bytes, decodable: bool) -> str:
    """What client-go says of an answer that is not a success (a Status' own message, if it sent one)."""
    if decodable:
        try:
            sent = json.loads(body)
        except ValueError:
            sent = None
        if isinstance(sent, dict) and sent.get("kind") == "Status" and sent.get("message"):
            return str(sent["message"])
    text = body[:_TEXT_LIMIT].decode(errors="replace").strip() if media_type.startswith("text/") else "unknown"
    generic = {
        400: "the server rejected our request for an unknown reason",
        401: "the server has asked for the client to provide credentials",
        403: text,
        404: "the server could not find the requested resource",
        405: "the server does not allow this method on the requested resource",
        409: "the server reported a conflict",
        422: "the server rejected our request due to an error in our request",
        429: "the server has received too many requests and has asked us to try again later",
        503: "the server is currently unable to handle the request",
        504: "the server was unable to return a response in the time allotted, but may still be processing the request",
    }
    if status in generic:
        return generic[status]
    if status >= 500:
        return f"an error on the server ({json.dumps(text)}) has prevented the request from succeeding"
    return f"the server responded with the status code {status} but did not return more information"


def json_error(exc: json.JSONDecodeError) -> str:
    """Go's ``encoding/json`` words for a document that does not parse (the common cases)."""
    text = exc.doc
    position = exc.pos
    if position >= len(text.rstrip()):
        return "unexpected end of JSON input"
    char = text[position]
    shown = json.dumps(char)[1:-1] if char != "'" else "\\'"
    if exc.msg.startswith("Extra data"):
        return f"invalid character '{shown}' after top-level value"
    if exc.msg.startswith("Expecting property name"):
        return f"invalid character '{shown}' looking for beginning of object key string"
    if exc.msg.startswith("Expecting ':'"):
        return f"invalid character '{shown}' after object key"
    if exc.msg.startswith("Expecting ',' delimiter"):
        return f"invalid character '{shown}' after object key:value pair"
    return f"invalid character '{shown}' looking for beginning of value"


def transport_error(exc: aiohttp.ClientError, endpoint: Endpoint) -> str:
    """Go's words for a request that got no answer (connecting, TLS, the connection closed)."""
    if isinstance(exc, aiohttp.ClientConnectorCertificateError):
        return f"tls: failed to verify certificate: {_x509_error(exc.certificate_error, exc.host)}"
    if isinstance(exc, aiohttp.ClientConnectorSSLError | aiohttp.ClientSSLError):
        return _tls_error(exc)
    if isinstance(exc, aiohttp.ClientConnectorError):
        os_error = exc.os_error
        if (isinstance(os_error, OSError) and os_error.errno in (-2, -3, -5)) or "Name or service" in str(os_error):
            return f"dial tcp: lookup {exc.host}: no such host"
        return f"dial tcp {_address(exc.host, exc.port)}: connect: {_os_reason(os_error)}"
    if isinstance(exc, aiohttp.ServerDisconnectedError):
        return "EOF"
    if isinstance(exc, aiohttp.ClientOSError):
        return _os_error(exc)
    if isinstance(exc, aiohttp.ClientPayloadError | aiohttp.ClientResponseError):
        return "unexpected EOF"
    return str(exc) or type(exc).__name__


def _os_error(exc: OSError) -> str:
    if exc.errno == errno.ECONNRESET:
        return "read: connection reset by peer"
    if isinstance(exc, ssl.SSLError):
        return _tls_error(exc)
    return _os_reason(exc)


def _os_reason(exc: BaseException) -> str:
    """An errno's text as Go prints it (lower case: ``connection refused``)."""
    if isinstance(exc, OSError) and exc.errno and exc.errno > 0:
        text = os.strerror(exc.errno)
        return text[:1].lower() + text[1:]
    return str(exc) or type(exc).__name__


def _address(host: str, port: int | None) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _x509_error(error: BaseException, host: str) -> str:
    text = str(getattr(error, "verify_message", "") or error)
    if "mismatch" in text:
        return f"x509: certificate is not valid for {host}"
    if "expired" in text or "not yet valid" in text:
        return "x509: certificate has expired or is not yet valid"
    return "x509: certificate signed by unknown authority"


def _tls_error(exc: BaseException) -> str:
    text = str(exc)
    if "WRONG_VERSION_NUMBER" in text or "wrong version number" in text:
        return "http: server gave HTTP response to HTTPS client"
    return "remote error: tls: handshake failure"
