"""The basic serving (HTTPS with a self-signed certificate, the handler ids from the URLs), and malformed requests."""

from __future__ import annotations

import json
import pathlib
import ssl
from collections.abc import AsyncIterator

import aiohttp
import pytest

from kopf._kits.webhooks import (
    WebhookServer,
)

from .helpers import REVIEW, Recorder, Serve, cabundle, port_of, post, sans_of, ssl_context


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
