"""What the webhook server tests share: a recording webhook function, requests over TLS, certificates."""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import json
import pathlib
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

import aiohttp
from cryptography import x509
from cryptography.x509.oid import NameOID

from kopf._cogs.structs import reviews
from kopf._kits.webhooks import (
    WebhookServer,
)

REVIEW: dict[str, Any] = {
    "apiVersion": "admission.k8s.io/v1",
    "kind": "AdmissionReview",
    "request": {
        "uid": "1ca13837-ad60-4c9e-abb8-86f29d6c0e84",
        "kind": {"group": "kopf.dev", "version": "v1", "kind": "KopfExample"},
        "resource": {"group": "kopf.dev", "version": "v1", "resource": "kopfexamples"},
        "name": "kex1",
        "namespace": "default",
        "operation": "CREATE",
        "userInfo": {"username": "admin", "uid": "admin", "groups": ["system:masters"]},
        "object": {"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "metadata": {"name": "kex1"}},
        "oldObject": None,
        "dryRun": False,
    },
}


@dataclasses.dataclass
class Call:
    request: Any
    webhook: str | None
    headers: Mapping[str, str] | None
    sslpeer: Mapping[str, Any] | None


class Recorder:
    """The framework's callback stand-in: remembers the calls, allows every request."""

    def __init__(self) -> None:
        self.calls: list[Call] = []
        self.error: Exception | None = None

    async def __call__(
        self,
        request: reviews.Request,
        *,
        webhook: str | None = None,
        headers: reviews.Headers | None = None,
        sslpeer: reviews.SSLPeer | None = None,
    ) -> reviews.Response:
        self.calls.append(Call(request, webhook, headers, sslpeer))
        if self.error is not None:
            raise self.error
        return {
            "apiVersion": request["apiVersion"],
            "kind": "AdmissionReview",
            "response": {"uid": request["request"]["uid"], "allowed": True, "warnings": [f"via {webhook}"]},
        }


Serve = Callable[..., Awaitable[tuple[reviews.WebhookClientConfig, AsyncIterator[reviews.WebhookClientConfig]]]]


def ssl_context(
    cadata: bytes | str | None, *, cert: pathlib.Path | None = None, key: pathlib.Path | None = None
) -> ssl.SSLContext:
    context = ssl.create_default_context(cadata=cadata.decode() if isinstance(cadata, bytes) else cadata)
    if cert is not None:
        context.load_cert_chain(cert, key)
    return context


def cabundle(config: reviews.WebhookClientConfig) -> bytes:
    value = config.get("caBundle")
    assert value is not None
    return base64.b64decode(value)


async def post(
    url: str,
    payload: Any = REVIEW,
    *,
    context: ssl.SSLContext | None = None,
    method: str = "POST",
    data: bytes | None = None,
    headers: Mapping[str, str] | None = None,
) -> tuple[int, Any]:
    body = data if data is not None else json.dumps(payload).encode()
    async with (
        aiohttp.ClientSession() as session,
        session.request(
            method, url, data=body, ssl=context if context is not None else True, headers=headers
        ) as response,
    ):
        raw = await response.read()
        return response.status, json.loads(raw) if raw else None


def port_of(config: reviews.WebhookClientConfig) -> int:
    url = config.get("url")
    assert url is not None
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    assert port > 0
    return port


def sans_of(pem: bytes) -> tuple[str, list[str]]:
    cert = x509.load_pem_x509_certificate(pem)
    cn = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    names = [str(name.value) for name in sans]
    return str(cn), names


def write_cert(
    tmp_path: pathlib.Path,
    name: str,
    hostnames: list[str],
    password: str | None = None,
) -> tuple[pathlib.Path, pathlib.Path]:
    cert, pkey = WebhookServer.build_certificate(hostnames, password)
    certfile, pkeyfile = tmp_path / f"{name}-cert.pem", tmp_path / f"{name}-key.pem"
    certfile.write_bytes(cert)
    pkeyfile.write_bytes(pkey)
    return certfile, pkeyfile


async def is_listening(port: int) -> bool:
    try:
        _, writer = await asyncio.open_connection("127.0.0.1", port)
    except OSError:
        return False
    writer.close()
    await writer.wait_closed()
    return True
