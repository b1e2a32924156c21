"""Provided certificates, client certificates, reloading; the self-signed certificates & the classes' shapes."""

from __future__ import annotations

import asyncio
import inspect
import ipaddress
import logging
import pathlib
import ssl

import aiohttp
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from kopf._kits.webhooks import (
    ClusterDetector,
    WebhookAutoServer,
    WebhookAutoTunnel,
    WebhookContextManager,
    WebhookDockerDesktopServer,
    WebhookK3dServer,
    WebhookMinikubeServer,
    WebhookNgrokTunnel,
    WebhookServer,
)

from .helpers import Recorder, Serve, cabundle, port_of, post, sans_of, ssl_context, write_cert


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
