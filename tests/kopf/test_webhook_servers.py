"""
Webhook servers & tunnels: real HTTP(S) on loopback, with aiohttp as the apiserver's stand-in.

Every server listens on 127.0.0.1 on a free port (``port=0``), and is stopped at the end
of its test (by the ``serve`` fixture, which closes the servers' context managers).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import dataclasses
import gc
import inspect
import ipaddress
import json
import logging
import pathlib
import ssl
import sys
import types
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

import aiohttp
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.x509.oid import NameOID

from kopf._cogs.helpers.certificates import MissingDependencyError
from kopf._cogs.structs import reviews
from kopf._kits.webhooks import (
    ClusterDetector,
    ClusterKind,
    WebhookAutoServer,
    WebhookAutoTunnel,
    WebhookContextManager,
    WebhookDockerDesktopServer,
    WebhookK3dServer,
    WebhookMinikubeServer,
    WebhookNgrokTunnel,
    WebhookServer,
    detect_cluster,
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


@pytest.fixture
def fn() -> Recorder:
    return Recorder()


Serve = Callable[..., Awaitable[tuple[reviews.WebhookClientConfig, AsyncIterator[reviews.WebhookClientConfig]]]]


@pytest.fixture
async def serve(fn: Recorder) -> AsyncIterator[Serve]:
    """Start a server/tunnel, return its first client config and the iterator for more of them."""
    iterators: list[AsyncIterator[reviews.WebhookClientConfig]] = []  # not garbage-collected while in use
    async with contextlib.AsyncExitStack() as stack:

        async def start(
            server: Any, callback: Any = fn
        ) -> tuple[reviews.WebhookClientConfig, AsyncIterator[reviews.WebhookClientConfig]]:
            await stack.enter_async_context(server)
            configs = server(callback)
            iterators.append(configs)
            config = await asyncio.wait_for(anext(configs), timeout=5)
            return config, configs

        yield start


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


#
# The basic serving: HTTPS with a self-signed certificate, the handler ids from the URLs.
#


async def test_self_signed_https_by_default(serve: Serve, fn: Recorder) -> None:
    config, _ = await serve(WebhookServer(addr="127.0.0.1", port=0))
    port = port_of(config)
    assert config.get("url") == f"https://127.0.0.1:{port}"
    assert set(config) == {"url", "caBundle"}
    ca = cabundle(config)
    assert ca.startswith(b"-----BEGIN CERTIFICATE-----")

    status, response = await post(f"{config.get('url')}/handler1", context=ssl_context(ca))
    assert status == 200
    assert response == {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": {"uid": REVIEW["request"]["uid"], "allowed": True, "warnings": ["via handler1"]},
    }
    assert len(fn.calls) == 1
    assert fn.calls[0].request == REVIEW
    assert fn.calls[0].webhook == "handler1"
    assert fn.calls[0].sslpeer == {}
    assert fn.calls[0].headers is not None
    assert fn.calls[0].headers["Host"] == f"127.0.0.1:{port}"


async def test_untrusted_clients_are_refused_by_the_tls(serve: Serve) -> None:
    config, _ = await serve(WebhookServer(addr="127.0.0.1", port=0))
    with pytest.raises(aiohttp.ClientConnectorCertificateError):
        await post(f"{config.get('url')}/handler1")  # the default trust chain does not know the CA


async def test_headers_are_passed_through(serve: Serve, fn: Recorder) -> None:
    config, _ = await serve(WebhookServer(addr="127.0.0.1", port=0))
    await post(f"{config.get('url')}/h", context=ssl_context(cabundle(config)), headers={"Authorization": "Bearer xyz"})
    assert fn.calls[0].headers is not None
    assert fn.calls[0].headers["Authorization"] == "Bearer xyz"


async def test_many_handlers_on_one_server(serve: Serve, fn: Recorder) -> None:
    config, _ = await serve(WebhookServer(addr="127.0.0.1", port=0))
    context = ssl_context(cabundle(config))
    for handler_id in ["validate1", "mod.fn", "mutate-2"]:
        status, _ = await post(f"{config.get('url')}/{handler_id}", context=context)
        assert status == 200
    status, _ = await post(f"{config.get('url')}", context=context)
    assert status == 200
    assert [call.webhook for call in fn.calls] == ["validate1", "mod.fn", "mutate-2", None]


@pytest.mark.parametrize("path", ["/webhooks", "webhooks", "/webhooks/", "webhooks//"])
async def test_root_path(serve: Serve, fn: Recorder, path: str) -> None:
    config, _ = await serve(WebhookServer(addr="127.0.0.1", port=0, path=path))
    url = config.get("url")
    assert url is not None
    assert url.endswith(f":{port_of(config)}/webhooks")
    context = ssl_context(cabundle(config))

    assert (await post(f"{url}/h1", context=context))[0] == 200
    assert (await post(url, context=context))[0] == 200
    status, response = await post(url.replace("/webhooks", "/elsewhere/h1"), context=context)
    assert status == 404
    assert response["kind"] == "Status"
    assert [call.webhook for call in fn.calls] == ["h1", None]


async def test_cadump_writes_the_ca(serve: Serve, fn: Recorder, tmp_path: pathlib.Path) -> None:
    cadump = tmp_path / "ca.pem"
    config, _ = await serve(WebhookServer(addr="127.0.0.1", port=0, cadump=cadump))
    assert cadump.read_bytes() == cabundle(config)
    context = ssl.create_default_context(cafile=str(cadump))
    status, _ = await post(f"{config.get('url')}/h1", context=context)
    assert status == 200
    assert len(fn.calls) == 1


async def test_insecure_http(serve: Serve, fn: Recorder, tmp_path: pathlib.Path) -> None:
    cadump = tmp_path / "ca.pem"
    config, _ = await serve(WebhookServer(addr="127.0.0.1", port=0, insecure=True, cadump=cadump))
    assert config == {"url": f"http://127.0.0.1:{port_of(config)}"}
    assert not cadump.exists()  # no CA: nothing to dump
    status, response = await post(f"{config.get('url')}/h1")
    assert status == 200
    assert response["response"]["allowed"] is True
    assert fn.calls[0].webhook == "h1"
    assert fn.calls[0].sslpeer == {}


async def test_host_override(serve: Serve, fn: Recorder) -> None:
    config, _ = await serve(WebhookServer(addr="127.0.0.1", port=0, host="webhooks.example.com"))
    assert config.get("url") == f"https://webhooks.example.com:{port_of(config)}"
    cn, sans = sans_of(cabundle(config))
    assert cn == "webhooks.example.com"
    assert sans == ["webhooks.example.com", "127.0.0.1"]
    # The certificate is valid for the listening address too:
    status, _ = await post(f"https://127.0.0.1:{port_of(config)}/h", context=ssl_context(cabundle(config)))
    assert status == 200


async def test_extra_sans(serve: Serve) -> None:
    server = WebhookServer(addr="127.0.0.1", port=0, extra_sans=["svc.ns.svc", "10.0.0.1", "svc.ns.svc"])
    config, _ = await serve(server)
    cn, sans = sans_of(cabundle(config))
    assert cn == "svc.ns.svc"
    assert sans == ["svc.ns.svc", "127.0.0.1", "10.0.0.1"]


async def test_ipv6_urls_have_brackets(serve: Serve) -> None:
    server = WebhookServer(addr="127.0.0.1", port=0, host="::1", insecure=True)
    config, _ = await serve(server)
    assert config.get("url") == f"http://[::1]:{port_of(config)}"


#
# Provided certificates, client certificates, and the reloading of the files.
#


async def test_provided_certificate_files(serve: Serve, fn: Recorder, tmp_path: pathlib.Path) -> None:
    certfile, pkeyfile = write_cert(tmp_path, "server", ["127.0.0.1"], password="secret")
    assert b"ENCRYPTED" in pkeyfile.read_bytes()
    cadump = tmp_path / "dump.pem"
    server = WebhookServer(
        addr="127.0.0.1",
        port=0,
        certfile=certfile,
        pkeyfile=pkeyfile,
        password="secret",
        cafile=certfile,
        cadump=cadump,
    )
    config, _ = await serve(server)
    assert cabundle(config) == certfile.read_bytes()
    assert cadump.read_bytes() == certfile.read_bytes()
    status, _ = await post(f"{config.get('url')}/h1", context=ssl_context(certfile.read_bytes()))
    assert status == 200


async def test_provided_cadata(serve: Serve, tmp_path: pathlib.Path) -> None:
    certfile, pkeyfile = write_cert(tmp_path, "server", ["127.0.0.1"])
    server = WebhookServer(addr="127.0.0.1", port=0, certfile=certfile, pkeyfile=pkeyfile, cadata=certfile.read_bytes())
    config, _ = await serve(server)
    assert cabundle(config) == certfile.read_bytes()


async def test_provided_certificate_without_ca_is_its_own_ca_bundle(serve: Serve, tmp_path: pathlib.Path) -> None:
    # As the published framework does: a self-signed certificate verifies itself; a chain file carries its CAs.
    certfile, pkeyfile = write_cert(tmp_path, "server", ["127.0.0.1"])
    config, _ = await serve(WebhookServer(addr="127.0.0.1", port=0, certfile=certfile, pkeyfile=pkeyfile))
    assert config.get("url") == f"https://127.0.0.1:{port_of(config)}"
    assert cabundle(config) == certfile.read_bytes()
    status, _ = await post(f"{config.get('url')}/h1", context=ssl_context(certfile.read_bytes()))
    assert status == 200


async def test_ready_made_ssl_context(serve: Serve, tmp_path: pathlib.Path) -> None:
    certfile, pkeyfile = write_cert(tmp_path, "server", ["127.0.0.1"])
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(certfile, pkeyfile)
    config, _ = await serve(WebhookServer(addr="127.0.0.1", port=0, context=context, cafile=certfile))
    assert cabundle(config) == certfile.read_bytes()
    status, _ = await post(f"{config.get('url')}/h1", context=ssl_context(certfile.read_bytes()))
    assert status == 200


async def test_password_encrypts_the_generated_key(serve: Serve) -> None:
    config, _ = await serve(WebhookServer(addr="127.0.0.1", port=0, password="secret"))
    status, _ = await post(f"{config.get('url')}/h1", context=ssl_context(cabundle(config)))
    assert status == 200


async def test_pkeyfile_without_certfile_fails_at_startup(tmp_path: pathlib.Path, fn: Recorder) -> None:
    _, pkeyfile = write_cert(tmp_path, "server", ["127.0.0.1"])
    server = WebhookServer(addr="127.0.0.1", port=0, pkeyfile=pkeyfile)
    with pytest.raises(ValueError, match="certfile"):
        await anext(server(fn))


async def test_client_certificates_are_verified_and_passed_as_sslpeer(
    serve: Serve, fn: Recorder, tmp_path: pathlib.Path
) -> None:
    client_cert, client_key = write_cert(tmp_path, "client", ["client.example.com"])
    server = WebhookServer(addr="127.0.0.1", port=0, verify_cafile=client_cert)
    config, _ = await serve(server)
    ca = cabundle(config)

    status, _ = await post(f"{config.get('url')}/h1", context=ssl_context(ca, cert=client_cert, key=client_key))
    assert status == 200
    status, _ = await post(f"{config.get('url')}/h2", context=ssl_context(ca))  # no client cert: optional
    assert status == 200

    assert fn.calls[0].sslpeer is not None
    assert fn.calls[0].sslpeer["subject"] == ((("commonName", "client.example.com"),),)
    assert fn.calls[1].sslpeer == {}  # no client certificate: an empty mapping, as in the published framework


async def test_client_certificates_can_be_required(serve: Serve, tmp_path: pathlib.Path) -> None:
    client_cert, client_key = write_cert(tmp_path, "client", ["client.example.com"])
    server = WebhookServer(
        addr="127.0.0.1", port=0, verify_cadata=client_cert.read_text(), verify_mode=ssl.CERT_REQUIRED
    )
    config, _ = await serve(server)
    ca = cabundle(config)
    status, _ = await post(f"{config.get('url')}/h1", context=ssl_context(ca, cert=client_cert, key=client_key))
    assert status == 200
    with pytest.raises(aiohttp.ClientError):
        await post(f"{config.get('url')}/h2", context=ssl_context(ca))


async def test_untrusted_client_certificates_are_refused(serve: Serve, tmp_path: pathlib.Path) -> None:
    trusted_cert, _ = write_cert(tmp_path, "trusted", ["trusted.example.com"])
    other_cert, other_key = write_cert(tmp_path, "other", ["other.example.com"])
    config, _ = await serve(WebhookServer(addr="127.0.0.1", port=0, verify_cafile=trusted_cert))
    with pytest.raises(aiohttp.ClientError):
        await post(f"{config.get('url')}/h1", context=ssl_context(cabundle(config), cert=other_cert, key=other_key))


async def test_certificate_reload_on_file_change(serve: Serve, fn: Recorder, tmp_path: pathlib.Path) -> None:
    cert1, key1 = write_cert(tmp_path, "one", ["127.0.0.1"])
    certfile, pkeyfile = tmp_path / "cert.pem", tmp_path / "key.pem"
    certfile.write_bytes(cert1.read_bytes())
    pkeyfile.write_bytes(key1.read_bytes())
    cadump = tmp_path / "dump.pem"
    server = WebhookServer(
        addr="127.0.0.1",
        port=0,
        certfile=certfile,
        pkeyfile=pkeyfile,
        cafile=certfile,
        cadump=cadump,
        file_check_interval=0.01,
    )
    config1, configs = await serve(server)
    url = config1.get("url")
    assert cabundle(config1) == cert1.read_bytes()
    assert (await post(f"{url}/h1", context=ssl_context(cert1.read_bytes())))[0] == 200

    # The renewal: a new certificate & key at the same paths. A new CA means a new client config.
    cert2, key2 = write_cert(tmp_path, "two", ["127.0.0.1"])
    pkeyfile.write_bytes(key2.read_bytes())
    certfile.write_bytes(cert2.read_bytes())
    config2 = await asyncio.wait_for(anext(configs), timeout=5)
    assert config2.get("url") == url  # the same port after the restart
    assert cabundle(config2) == cert2.read_bytes()
    assert cadump.read_bytes() == cert2.read_bytes()

    assert (await post(f"{url}/h2", context=ssl_context(cert2.read_bytes())))[0] == 200
    with pytest.raises(aiohttp.ClientConnectorCertificateError):
        await post(f"{url}/h3", context=ssl_context(cert1.read_bytes()))
    assert [call.webhook for call in fn.calls] == ["h1", "h2"]


def reload_errors(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    """Only the server's own errors: other tests may leave other loggers chattier than the defaults."""
    return [r for r in caplog.records if r.name == "kopf._kits.webhooks" and r.levelno >= logging.ERROR]


async def test_half_renewed_files_are_retried_later(
    serve: Serve, tmp_path: pathlib.Path, caplog: pytest.LogCaptureFixture
) -> None:
    cert1, key1 = write_cert(tmp_path, "one", ["127.0.0.1"])
    cert2, key2 = write_cert(tmp_path, "two", ["127.0.0.1"])
    certfile, pkeyfile = tmp_path / "cert.pem", tmp_path / "key.pem"
    certfile.write_bytes(cert1.read_bytes())
    pkeyfile.write_bytes(key1.read_bytes())
    server = WebhookServer(
        addr="127.0.0.1", port=0, certfile=certfile, pkeyfile=pkeyfile, cafile=certfile, file_check_interval=0.01
    )
    config1, configs = await serve(server)
    url = config1.get("url")

    # Only the certificate is renewed, the key is not yet: the old ones keep serving.
    with caplog.at_level(logging.ERROR, logger="kopf._kits.webhooks"):
        certfile.write_bytes(cert2.read_bytes())
        next_config = asyncio.ensure_future(anext(configs))
        for _ in range(500):  # a few file checks, up to a generous limit
            if reload_errors(caplog):
                break
            await asyncio.sleep(0.01)
    assert "cannot be loaded" in reload_errors(caplog)[0].getMessage()
    assert not next_config.done()
    assert (await post(f"{url}/h1", context=ssl_context(cert1.read_bytes())))[0] == 200

    # Now the key is renewed too: the server restarts with both.
    pkeyfile.write_bytes(key2.read_bytes())
    config2 = await asyncio.wait_for(next_config, timeout=5)
    assert cabundle(config2) == cert2.read_bytes()
    assert (await post(f"{url}/h2", context=ssl_context(cert2.read_bytes())))[0] == 200


async def test_unchanged_files_yield_nothing_new(serve: Serve, tmp_path: pathlib.Path) -> None:
    certfile, pkeyfile = write_cert(tmp_path, "one", ["127.0.0.1"])
    server = WebhookServer(
        addr="127.0.0.1", port=0, certfile=certfile, pkeyfile=pkeyfile, cafile=certfile, file_check_interval=0.001
    )
    _, configs = await serve(server)
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(anext(configs), timeout=0.05)


#
# Malformed requests: clear 4xx responses, and the server keeps serving.
#


class TinyServer(WebhookServer):
    MAX_BODY_SIZE = 1024


@pytest.mark.parametrize(
    ("data", "code", "reason"),
    [
        (b'{"kind": "AdmissionReview", ', 400, "BadRequest"),
        (b"\xff\xfe not utf-8", 400, "BadRequest"),
        (b"", 400, "BadRequest"),
        (b"[1, 2, 3]", 422, "Invalid"),
        (b'{"kind": "Pod", "apiVersion": "v1"}', 422, "Invalid"),
        (b'{"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1"}', 422, "Invalid"),
        (b'{"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1", "request": {}}', 422, "Invalid"),
        (b'{"kind": "AdmissionReview", "apiVersion": "v1", "request": {"uid": "x"}}', 422, "Invalid"),
        (b'{"x": "' + b"y" * 2000 + b'"}', 413, "RequestEntityTooLarge"),
    ],
)
async def test_malformed_requests(serve: Serve, fn: Recorder, data: bytes, code: int, reason: str) -> None:
    config, _ = await serve(TinyServer(addr="127.0.0.1", port=0, insecure=True))
    url = config.get("url")
    status, response = await post(f"{url}/h1", data=data)
    assert status == code
    assert response["kind"] == "Status"
    assert response["code"] == code
    assert response["reason"] == reason
    assert response["message"]
    assert fn.calls == []

    # The server keeps serving:
    status, response = await post(f"{url}/h2")
    assert status == 200
    assert [call.webhook for call in fn.calls] == ["h2"]


async def test_oversized_chunked_request(serve: Serve, fn: Recorder) -> None:
    config, _ = await serve(TinyServer(addr="127.0.0.1", port=0, insecure=True))
    url = config.get("url")

    async def chunks() -> AsyncIterator[bytes]:  # no Content-Length: only the reading detects the size
        for _ in range(3):
            yield b"x" * 512

    async with aiohttp.ClientSession() as session, session.post(f"{url}/h1", data=chunks()) as response:
        assert response.status == 413
        assert (await response.json())["reason"] == "RequestEntityTooLarge"
    assert (await post(f"{url}/h2"))[0] == 200
    assert [call.webhook for call in fn.calls] == ["h2"]


async def test_other_methods_are_not_allowed(serve: Serve, fn: Recorder) -> None:
    config, _ = await serve(WebhookServer(addr="127.0.0.1", port=0, insecure=True))
    async with aiohttp.ClientSession() as session, session.get(f"{config.get('url')}/h1") as response:
        assert response.status == 405
        assert response.headers["Allow"] == "POST"
    assert fn.calls == []


async def test_callback_failures_are_denials(serve: Serve, fn: Recorder, caplog: pytest.LogCaptureFixture) -> None:
    config, _ = await serve(WebhookServer(addr="127.0.0.1", port=0, insecure=True))
    fn.error = RuntimeError("boom")
    status, response = await post(f"{config.get('url')}/h1")
    assert status == 200
    assert response["kind"] == "AdmissionReview"
    assert response["response"]["uid"] == REVIEW["request"]["uid"]
    assert response["response"]["allowed"] is False
    assert response["response"]["status"]["code"] == 500
    assert response["response"]["status"]["reason"] == "InternalError"
    assert "boom" not in json.dumps(response)  # no internals leak to the clients
    assert any("boom" in (record.exc_text or "") or record.exc_info for record in caplog.records)
    fn.error = None
    assert (await post(f"{config.get('url')}/h2"))[0] == 200


#
# The lifecycle: stopping, the context manager protocol, startup failures.
#


async def is_listening(port: int) -> bool:
    try:
        _, writer = await asyncio.open_connection("127.0.0.1", port)
    except OSError:
        return False
    writer.close()
    await writer.wait_closed()
    return True


async def test_closing_the_iterator_stops_the_server(fn: Recorder) -> None:
    server = WebhookServer(addr="127.0.0.1", port=0, insecure=True)
    configs = server(fn)
    config = await anext(configs)
    assert await is_listening(port_of(config))
    await configs.aclose()  # type: ignore[attr-defined]
    assert not await is_listening(port_of(config))


async def test_exiting_the_context_manager_stops_the_servers(fn: Recorder) -> None:
    async with WebhookServer(addr="127.0.0.1", port=0, insecure=True) as server:
        configs1, configs2 = server(fn), server(fn)
        config1, config2 = await anext(configs1), await anext(configs2)
        assert await is_listening(port_of(config1))
        assert await is_listening(port_of(config2))
    assert not await is_listening(port_of(config1))
    assert not await is_listening(port_of(config2))


async def test_discarded_iterators_stop_the_servers(fn: Recorder) -> None:
    config = await anext(WebhookServer(addr="127.0.0.1", port=0, insecure=True)(fn))
    gc.collect()  # usually not needed in CPython, but not guaranteed
    for _ in range(100):
        if not await is_listening(port_of(config)):
            break
        await asyncio.sleep(0.001)
    assert not await is_listening(port_of(config))


async def test_exiting_the_context_manager_while_served_in_another_task(fn: Recorder) -> None:
    started: asyncio.Queue[reviews.WebhookClientConfig] = asyncio.Queue()

    async def consume(server: WebhookServer) -> None:
        async for config in server(fn):
            await started.put(config)

    async with WebhookServer(addr="127.0.0.1", port=0, insecure=True) as server:
        task = asyncio.create_task(consume(server))
        config = await started.get()
        await asyncio.sleep(0)  # let it get back into the iterator, waiting there
        assert await is_listening(port_of(config))
    assert not await is_listening(port_of(config))
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


async def test_cancelling_the_consumer_stops_the_server(fn: Recorder) -> None:
    started: asyncio.Queue[reviews.WebhookClientConfig] = asyncio.Queue()

    async def consume() -> None:
        async for config in WebhookServer(addr="127.0.0.1", port=0, insecure=True)(fn):
            await started.put(config)

    task = asyncio.create_task(consume())
    config = await started.get()
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    assert not await is_listening(port_of(config))


async def test_busy_port_fails_at_startup(serve: Serve, fn: Recorder) -> None:
    config, _ = await serve(WebhookServer(addr="127.0.0.1", port=0, insecure=True))
    with pytest.raises(OSError):
        async with WebhookServer(addr="127.0.0.1", port=port_of(config), insecure=True) as other:
            await anext(other(fn))


async def test_missing_cryptography_fails_at_startup_with_advice(
    monkeypatch: pytest.MonkeyPatch, fn: Recorder, serve: Serve
) -> None:
    monkeypatch.setitem(sys.modules, "cryptography", None)  # makes it unimportable
    with pytest.raises(MissingDependencyError, match=r"pip install kopf\[dev\]"):
        await anext(WebhookServer(addr="127.0.0.1", port=0)(fn))
    with pytest.raises(ImportError):  # the same, for those who catch the generic one
        await anext(WebhookK3dServer(addr="127.0.0.1", port=0)(fn))

    # Insecure servers need no certificates, and so no cryptography:
    config, _ = await serve(WebhookServer(addr="127.0.0.1", port=0, insecure=True))
    assert (await post(f"{config.get('url')}/h1"))[0] == 200


#
# Servers with magic hostnames.
#


@pytest.mark.parametrize(
    ("cls", "host"),
    [
        (WebhookK3dServer, "host.k3d.internal"),
        (WebhookMinikubeServer, "host.minikube.internal"),
        (WebhookDockerDesktopServer, "host.docker.internal"),
    ],
)
async def test_magic_hostnames(serve: Serve, fn: Recorder, cls: type[WebhookServer], host: str) -> None:
    assert host == cls.DEFAULT_HOST
    config, _ = await serve(cls(addr="127.0.0.1", port=0, path="/hooks"))
    assert config.get("url") == f"https://{host}:{port_of(config)}/hooks"
    cn, sans = sans_of(cabundle(config))
    assert cn == host
    assert sans == [host, "127.0.0.1"]
    # The same server, reached locally (as the magic hostname leads there from the cluster):
    status, _ = await post(f"https://127.0.0.1:{port_of(config)}/hooks/h1", context=ssl_context(cabundle(config)))
    assert status == 200
    assert fn.calls[0].webhook == "h1"


async def test_magic_servers_can_be_overridden(serve: Serve) -> None:
    config, _ = await serve(WebhookK3dServer(addr="127.0.0.1", port=0, host="k3d.example.com"))
    assert config.get("url") == f"https://k3d.example.com:{port_of(config)}"


async def test_magic_servers_listen_on_all_interfaces_by_default() -> None:
    assert await WebhookK3dServer()._endpoint() == ("host.k3d.internal", "0.0.0.0")
    assert await WebhookMinikubeServer(addr="127.0.0.1")._endpoint() == ("host.minikube.internal", "127.0.0.1")
    assert await WebhookServer()._endpoint() == (None, "localhost")
    assert await WebhookServer(host="example.com")._endpoint() == ("example.com", "localhost")


#
# Ngrok tunnels: pyngrok is not installed; the happy path uses a fake pyngrok.
#


async def test_ngrok_without_pyngrok_fails_at_startup_with_advice(
    monkeypatch: pytest.MonkeyPatch, fn: Recorder
) -> None:
    monkeypatch.setitem(sys.modules, "pyngrok", None)
    tunnel = WebhookNgrokTunnel(addr="127.0.0.1", port=0)  # creating is fine: the failure is at startup
    with pytest.raises(MissingDependencyError, match=r"pip install pyngrok"):
        await anext(tunnel(fn))


@pytest.fixture
def fake_pyngrok(monkeypatch: pytest.MonkeyPatch) -> types.SimpleNamespace:
    state = types.SimpleNamespace(configs=[], connected=[], disconnected=[])

    class PyngrokConfig:
        def __init__(self, **kwargs: Any) -> None:
            self.kwargs = kwargs
            state.configs.append(kwargs)

    def connect(addr: str, **kwargs: Any) -> Any:
        state.connected.append((addr, kwargs))
        return types.SimpleNamespace(public_url="https://abc123.ngrok.example/")

    def disconnect(public_url: str, **kwargs: Any) -> None:
        state.disconnected.append(public_url)

    package = types.ModuleType("pyngrok")
    conf = types.ModuleType("pyngrok.conf")
    ngrok = types.ModuleType("pyngrok.ngrok")
    conf.PyngrokConfig = PyngrokConfig  # type: ignore[attr-defined]
    ngrok.connect = connect  # type: ignore[attr-defined]
    ngrok.disconnect = disconnect  # type: ignore[attr-defined]
    package.conf = conf  # type: ignore[attr-defined]
    package.ngrok = ngrok  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "pyngrok", package)
    monkeypatch.setitem(sys.modules, "pyngrok.conf", conf)
    monkeypatch.setitem(sys.modules, "pyngrok.ngrok", ngrok)
    return state


async def test_ngrok_tunnel(fake_pyngrok: types.SimpleNamespace, fn: Recorder) -> None:
    tunnel = WebhookNgrokTunnel(addr="127.0.0.1", port=0, path="/xyz", token="tkn", region="eu", binary="/bin/ngrok")
    async with tunnel:
        configs = tunnel(fn)
        config = await anext(configs)
        assert config == {"url": "https://abc123.ngrok.example/xyz"}
        assert fake_pyngrok.configs == [{"ngrok_path": "/bin/ngrok", "auth_token": "tkn", "region": "eu"}]
        [(target, options)] = fake_pyngrok.connected
        assert options["bind_tls"] is True

        # The tunnel's target is a local plain-HTTP server:
        host, port = target.rsplit(":", 1)
        assert host == "127.0.0.1"
        status, _ = await post(f"http://{target}/xyz/h1")
        assert status == 200
        assert fn.calls[0].webhook == "h1"
        assert fake_pyngrok.disconnected == []
    assert fake_pyngrok.disconnected == ["https://abc123.ngrok.example"]
    assert not await is_listening(int(port))


#
# Auto-detection of the cluster kinds, and the auto-servers/tunnels.
#


def fetcher(responses: Mapping[str, Any]) -> Callable[[str], Awaitable[Any]]:
    async def fetch(url: str) -> Any:
        response = responses[url]
        if isinstance(response, Exception):
            raise response
        return response

    return fetch


def node(name: str, labels: Mapping[str, str] | None = None, provider_id: str | None = None) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": dict(labels or {})},
        "spec": {"providerID": provider_id} if provider_id else {},
    }


@pytest.mark.parametrize(
    ("responses", "expected"),
    [
        ({"/version": {"gitVersion": "v1.30.4+k3s1"}}, ClusterKind.K3D),
        (
            {
                "/version": {"gitVersion": "v1.30.4"},
                "/api/v1/nodes": {"items": [node("k3d-x-server-0", provider_id="k3s://k3d-x-server-0")]},
            },
            ClusterKind.K3D,
        ),
        ({"/version": {"gitVersion": "v1.30.4"}, "/api/v1/nodes": {"items": [node("minikube")]}}, ClusterKind.MINIKUBE),
        (
            {
                "/version": {"gitVersion": "v1.30.4"},
                "/api/v1/nodes": {"items": [node("n", {"minikube.k8s.io/name": "dev"})]},
            },
            ClusterKind.MINIKUBE,
        ),
        (
            {"/version": {"gitVersion": "v1.30.4"}, "/api/v1/nodes": {"items": [node("docker-desktop")]}},
            ClusterKind.DOCKER_DESKTOP,
        ),
        (
            {"/version": {"gitVersion": "v1.30.4"}, "/api/v1/nodes": {"items": [node("kind-control-plane")]}},
            ClusterKind.UNKNOWN,
        ),
        ({"/version": {"gitVersion": "v1.30.4"}, "/api/v1/nodes": RuntimeError("forbidden")}, ClusterKind.UNKNOWN),
        ({"/version": RuntimeError("no credentials")}, ClusterKind.UNKNOWN),
    ],
)
async def test_cluster_detection(responses: Mapping[str, Any], expected: ClusterKind) -> None:
    assert await detect_cluster(environ={}, fetch=fetcher(responses)) == expected


async def test_in_cluster_detection_asks_nothing() -> None:
    environ = {"KUBERNETES_SERVICE_HOST": "10.96.0.1"}
    assert await detect_cluster(environ=environ, fetch=fetcher({})) == ClusterKind.IN_CLUSTER


async def test_detection_without_an_operator_context_is_unknown(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    assert await ClusterDetector().guess_kind() == ClusterKind.UNKNOWN  # no vault: no API, no guess
    assert await ClusterDetector().guess_host() is None


def detected(cls: type[Any], kind: ClusterKind) -> type[Any]:
    """A server/tunnel class with the detection replaced (as tests or developers can do)."""

    async def guess_kind(self: Any) -> ClusterKind:
        return kind

    return dataclasses.dataclass(kw_only=True, eq=False)(type(cls.__name__, (cls,), {"guess_kind": guess_kind}))


@pytest.mark.parametrize(
    ("kind", "host"),
    [
        (ClusterKind.K3D, "host.k3d.internal"),
        (ClusterKind.MINIKUBE, "host.minikube.internal"),
        (ClusterKind.DOCKER_DESKTOP, "host.docker.internal"),
        (ClusterKind.IN_CLUSTER, "127.0.0.1"),
        (ClusterKind.UNKNOWN, "127.0.0.1"),
    ],
)
async def test_auto_server(serve: Serve, fn: Recorder, kind: ClusterKind, host: str) -> None:
    config, _ = await serve(detected(WebhookAutoServer, kind)(addr="127.0.0.1", port=0))
    assert config.get("url") == f"https://{host}:{port_of(config)}"
    status, _ = await post(f"https://127.0.0.1:{port_of(config)}/h1", context=ssl_context(cabundle(config)))
    assert status == 200
    assert fn.calls[0].webhook == "h1"


async def test_auto_server_listening_defaults() -> None:
    assert await detected(WebhookAutoServer, ClusterKind.K3D)()._endpoint() == ("host.k3d.internal", "0.0.0.0")
    assert await detected(WebhookAutoServer, ClusterKind.UNKNOWN)()._endpoint() == (None, "localhost")
    assert await detected(WebhookAutoServer, ClusterKind.K3D)(host="x.com")._endpoint() == ("x.com", "localhost")


@pytest.mark.parametrize(
    ("kind", "host"),
    [
        (ClusterKind.K3D, "host.k3d.internal"),
        (ClusterKind.MINIKUBE, "host.minikube.internal"),
        (ClusterKind.DOCKER_DESKTOP, "host.docker.internal"),
        (ClusterKind.IN_CLUSTER, "127.0.0.1"),
    ],
)
async def test_auto_tunnel_uses_servers_when_possible(serve: Serve, fn: Recorder, kind: ClusterKind, host: str) -> None:
    config, _ = await serve(detected(WebhookAutoTunnel, kind)(addr="127.0.0.1", port=0, path="p"))
    assert config.get("url") == f"https://{host}:{port_of(config)}/p"
    status, _ = await post(f"https://127.0.0.1:{port_of(config)}/p/h1", context=ssl_context(cabundle(config)))
    assert status == 200


async def test_auto_tunnel_tunnels_otherwise(serve: Serve, fake_pyngrok: types.SimpleNamespace) -> None:
    config, _ = await serve(detected(WebhookAutoTunnel, ClusterKind.UNKNOWN)(addr="127.0.0.1", port=0, path="p"))
    assert config == {"url": "https://abc123.ngrok.example/p"}


async def test_auto_tunnel_without_pyngrok_fails_at_startup(monkeypatch: pytest.MonkeyPatch, fn: Recorder) -> None:
    monkeypatch.setitem(sys.modules, "pyngrok", None)
    async with detected(WebhookAutoTunnel, ClusterKind.UNKNOWN)(addr="127.0.0.1", port=0) as tunnel:
        with pytest.raises(MissingDependencyError, match="pyngrok"):
            await anext(tunnel(fn))


async def test_auto_tunnel_closes_its_server(fn: Recorder) -> None:
    async with detected(WebhookAutoTunnel, ClusterKind.K3D)(addr="127.0.0.1", port=0) as tunnel:
        config = await anext(tunnel(fn))
        assert await is_listening(port_of(config))
    assert not await is_listening(port_of(config))


#
# The self-signed certificates & the documented shapes of the classes.
#


def test_build_certificate_names() -> None:
    cert, pkey = WebhookServer.build_certificate(["0.0.0.0", "10.0.0.1", "Svc.Example.COM", "::1", "[::1]", "x.y"])
    cn, sans = sans_of(cert)
    assert cn == "svc.example.com"  # the first non-IP name
    assert sans == ["svc.example.com", "x.y", "10.0.0.1", "::1"]  # IPs as IPs, no wildcards, no duplicates
    assert b"PRIVATE KEY" in pkey
    assert b"ENCRYPTED" not in pkey


def test_build_certificate_with_only_ips() -> None:
    cert, _ = WebhookServer.build_certificate(["::", "127.0.0.1"])
    cn, sans = sans_of(cert)
    assert cn == "127.0.0.1"
    assert sans == ["127.0.0.1"]
    parsed = x509.load_pem_x509_certificate(cert)
    ips = parsed.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(
        x509.IPAddress
    )
    assert ips == [ipaddress.ip_address("127.0.0.1")]


def test_build_certificate_with_a_password() -> None:
    _, pkey = WebhookServer.build_certificate(["localhost"], password="secret")
    assert b"ENCRYPTED" in pkey
    serialization.load_pem_private_key(pkey, password=b"secret")
    with pytest.raises(ValueError):
        serialization.load_pem_private_key(pkey, password=b"wrong")


def test_build_certificate_needs_names() -> None:
    with pytest.raises(ValueError, match="at least one"):
        WebhookServer.build_certificate(["0.0.0.0"])


def test_certificate_is_its_own_ca() -> None:
    cert, _ = WebhookServer.build_certificate(["localhost"])
    parsed = x509.load_pem_x509_certificate(cert)
    assert parsed.issuer == parsed.subject
    assert parsed.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is True


@pytest.mark.parametrize(
    "cls", [WebhookServer, WebhookK3dServer, WebhookMinikubeServer, WebhookAutoServer, WebhookDockerDesktopServer]
)
def test_server_signatures(cls: type[WebhookServer]) -> None:
    params = inspect.signature(cls).parameters
    assert all(param.kind == inspect.Parameter.KEYWORD_ONLY for param in params.values())
    assert list(params) == [
        "addr",
        "port",
        "path",
        "host",
        "cadata",
        "cafile",
        "cadump",
        "context",
        "insecure",
        "certfile",
        "pkeyfile",
        "password",
        "extra_sans",
        "verify_mode",
        "verify_cafile",
        "verify_capath",
        "verify_cadata",
        "file_check_interval",
    ]
    server = cls()
    assert server.insecure is False
    assert server.extra_sans == ()
    assert server.file_check_interval == 60
    assert all(
        getattr(server, name) is None
        for name in params
        if name not in {"insecure", "extra_sans", "file_check_interval"}
    )
    assert isinstance(server, WebhookContextManager)


def test_tunnel_signatures() -> None:
    assert str(inspect.signature(WebhookNgrokTunnel)) == (
        "(*, addr: 'str | None' = None, port: 'int | None' = None, path: 'str | None' = None, "
        "token: 'str | None' = None, region: 'str | None' = None, binary: 'PathLike | None' = None) -> None"
    )
    assert list(inspect.signature(WebhookAutoTunnel).parameters) == ["addr", "port", "path"]
    assert issubclass(WebhookAutoServer, ClusterDetector)
    assert issubclass(WebhookAutoTunnel, ClusterDetector)
    assert WebhookServer.DEFAULT_HOST is None


#
# End to end: the simulated apiserver calls the server as configured by the yielded client config.
#


async def test_the_simulated_apiserver_calls_the_server(serve: Serve) -> None:
    from kopf_sim.http.app import build_app
    from kopf_sim.store.cluster import Cluster
    from kopf_sim.transports.inmemory import InMemoryServer

    async def deny_some(request: reviews.Request, *, webhook: str | None = None, **_: Any) -> reviews.Response:
        obj: Any = request["request"].get("object") or {}
        allowed = obj.get("data", {}).get("ok") == "yes"
        return {
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "response": {
                "uid": request["request"]["uid"],
                "allowed": allowed,
                "status": {"code": 400, "message": f"{webhook} says no"},
            },
        }

    config, _ = await serve(WebhookServer(addr="127.0.0.1", port=0, path="/hooks"), deny_some)
    client_config = dict(config, url=f"{config.get('url')}/check-data")
    hooks = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "auto.kopf.dev"},
        "webhooks": [
            {
                "name": "check-data.auto.kopf.dev",
                "clientConfig": client_config,
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
                "rules": [
                    {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["configmaps"]}
                ],
            }
        ],
    }
    base = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
    async with InMemoryServer(build_app(Cluster())) as apiserver, apiserver.session() as session:
        async with session.post(base, json=hooks) as response:
            assert response.status == 201
        cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm1"}, "data": {"ok": "no"}}
        async with session.post("/api/v1/namespaces/default/configmaps", json=cm) as response:
            assert response.status == 400
            assert "check-data says no" in (await response.json())["message"]
        cm["data"] = {"ok": "yes"}
        async with session.post("/api/v1/namespaces/default/configmaps", json=cm) as response:
            assert response.status == 201


#
# The documented ways to build custom tunnels on top of the provided server.
#


async def test_custom_tunnel_by_inheritance(serve: Serve, fn: Recorder) -> None:
    class MyTunnel(WebhookServer):
        async def __call__(self, fn: reviews.WebhookFn) -> AsyncIterator[reviews.WebhookClientConfig]:
            async for client_config in super().__call__(fn):
                yield {"url": f"{client_config.get('url')}/tunnelled", "caBundle": client_config.get("caBundle")}

    config, _ = await serve(MyTunnel(addr="127.0.0.1", port=0))
    url = config.get("url")
    assert url == f"https://127.0.0.1:{port_of(config)}/tunnelled"
    status, _ = await post(f"https://127.0.0.1:{port_of(config)}/h1", context=ssl_context(cabundle(config)))
    assert status == 200
    assert fn.calls[0].webhook == "h1"


async def test_custom_tunnel_by_composition(fn: Recorder) -> None:
    class MyTunnel:
        async def __call__(self, fn: reviews.WebhookFn) -> AsyncIterator[reviews.WebhookClientConfig]:
            async with WebhookServer(addr="127.0.0.1", port=0, insecure=True) as server:
                async for client_config in server(fn):
                    yield client_config

    configs = MyTunnel()(fn)
    config = await anext(configs)
    assert (await post(f"{config.get('url')}/h1"))[0] == 200
    await configs.aclose()  # type: ignore[attr-defined]
    assert not await is_listening(port_of(config))
