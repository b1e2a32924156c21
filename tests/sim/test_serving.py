"""Serving an app over HTTP(S) on loopback, with tokens, for kubectl and other real clients."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import shutil
import signal
import ssl
import stat
import threading
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
import yaml
from aiohttp import web

from kopf_sim.transports.kubeconfig import kubeconfig_dict, write_kubeconfig
from kopf_sim.transports.serving import UNAUTHORIZED_STATUS, ServedApp, serve_forever

TOKEN = "t0ken-for-tests"
KUBECTL = shutil.which("kubectl") or "/usr/bin/kubectl"


def make_app(lifecycle: list[str]) -> web.Application:
    async def ctx(app: web.Application) -> AsyncIterator[None]:
        lifecycle.append("startup")
        yield
        lifecycle.append("cleanup")

    async def healthz(request: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def whoami(request: web.Request) -> web.Response:
        return web.json_response({"remote": request.remote, "secure": request.secure})

    async def watch(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        await response.prepare(request)
        await response.write(b'{"type": "ADDED", "object": {}}\n')
        try:
            await asyncio.Event().wait()  # no more events, ever
        except asyncio.CancelledError:
            lifecycle.append("watch cancelled")
            raise
        return response

    app = web.Application()
    app.cleanup_ctx.append(ctx)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/whoami", whoami)
    app.router.add_get("/watch", watch)
    return app


def client_ssl(ca_pem: bytes | None) -> ssl.SSLContext:
    assert ca_pem is not None
    return ssl.create_default_context(cadata=ca_pem.decode())


# -- kubeconfig --


def test_kubeconfig_dict_with_everything() -> None:
    config = kubeconfig_dict(
        server="https://127.0.0.1:1234",
        token="abc",
        ca_pem=b"PEM",
        namespace="ns1",
        cluster_name="c",
        context_name="x",
        user_name="u",
    )
    assert config["current-context"] == "x"
    assert config["clusters"] == [
        {
            "name": "c",
            "cluster": {
                "server": "https://127.0.0.1:1234",
                "certificate-authority-data": base64.b64encode(b"PEM").decode(),
            },
        }
    ]
    assert config["users"] == [{"name": "u", "user": {"token": "abc"}}]
    assert config["contexts"] == [{"name": "x", "context": {"cluster": "c", "user": "u", "namespace": "ns1"}}]


def test_kubeconfig_dict_minimal() -> None:
    config = kubeconfig_dict(server="http://127.0.0.1:1234")
    assert config["clusters"][0]["cluster"] == {"server": "http://127.0.0.1:1234"}
    assert config["users"][0]["user"] == {}
    assert config["contexts"][0]["context"] == {"cluster": "kopf-sim", "user": "kopf-sim"}


def test_kubeconfig_file_is_private(tmp_path: Path) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text("old and longer content " * 100)
    path.chmod(0o644)
    write_kubeconfig(path, server="https://127.0.0.1:1234", token="abc")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert yaml.safe_load(path.read_text()) == kubeconfig_dict(server="https://127.0.0.1:1234", token="abc")


# -- ServedApp --


async def test_plain_http_without_token() -> None:
    lifecycle: list[str] = []
    async with ServedApp(make_app(lifecycle)) as served:
        assert served.url.startswith("http://127.0.0.1:")
        assert served.ca_pem is None
        assert lifecycle == ["startup"]
        async with aiohttp.ClientSession() as session, session.get(f"{served.url}/whoami") as resp:
            assert await resp.json() == {"remote": "127.0.0.1", "secure": False}
    assert lifecycle == ["startup", "cleanup"]


async def test_url_is_unavailable_before_start() -> None:
    with pytest.raises(RuntimeError):
        ServedApp(web.Application()).url  # noqa: B018


@pytest.mark.parametrize(
    ("authorization", "status"),
    [
        (f"Bearer {TOKEN}", 200),
        (f"bearer {TOKEN} and more", 200),  # the apiserver ignores what follows the token
        (f"bearer  {TOKEN} ", 401),  # two spaces: an empty token (the apiserver reads it so)
        (None, 401),
        ("Bearer", 401),
        ("Bearer wrong", 401),
        (f"Basic {TOKEN}", 401),
        (f"Bearer {TOKEN}x", 401),
    ],
)
async def test_https_with_token(authorization: str | None, status: int) -> None:
    async with ServedApp(make_app([]), tls=True, token=TOKEN) as served:
        assert served.url.startswith("https://127.0.0.1:")
        headers = {"Authorization": authorization} if authorization is not None else {}
        async with aiohttp.ClientSession(headers=headers) as session:
            async with session.get(f"{served.url}/whoami", ssl=client_ssl(served.ca_pem)) as resp:
                assert resp.status == status
                data = await resp.json()
            # Unknown paths are also hidden from unauthenticated clients.
            async with session.get(f"{served.url}/nowhere", ssl=client_ssl(served.ca_pem)) as resp:
                assert resp.status == (404 if status == 200 else 401)
    if status == 401:
        assert data == UNAUTHORIZED_STATUS
    else:
        assert data == {"remote": "127.0.0.1", "secure": True}


async def test_https_certificate_covers_hostnames() -> None:
    served = ServedApp(make_app([]), tls=True, extra_hostnames=["kopf-sim.test"])
    async with served, aiohttp.ClientSession() as session:
        for hostname in ["localhost", "kopf-sim.test"]:
            async with session.get(
                f"{served.url}/healthz", ssl=client_ssl(served.ca_pem), server_hostname=hostname
            ) as resp:
                assert resp.status == 200
        with pytest.raises(aiohttp.ClientConnectorCertificateError):
            await session.get(f"{served.url}/healthz", ssl=client_ssl(served.ca_pem), server_hostname="example.com")
        with pytest.raises(aiohttp.ClientConnectorCertificateError):
            await session.get(f"{served.url}/healthz")  # the system CAs do not know ours


async def test_client_disconnect_cancels_the_handler() -> None:
    lifecycle: list[str] = []
    async with ServedApp(make_app(lifecycle)) as served, aiohttp.ClientSession() as session:
        async with session.get(f"{served.url}/watch") as resp:
            assert json.loads(await resp.content.readline())["type"] == "ADDED"
        for _ in range(100):  # a few loop cycles for the socket's closure to be noticed
            if "watch cancelled" in lifecycle:
                break
            await asyncio.sleep(0)
        assert "watch cancelled" in lifecycle


async def test_open_streams_end_on_stop() -> None:
    async with aiohttp.ClientSession() as session:
        served = ServedApp(make_app([]), shutdown_timeout=0.01)
        await served.start()
        try:
            async with session.get(f"{served.url}/watch") as resp:
                await resp.content.readline()
                await served.stop()
                with pytest.raises(aiohttp.ClientPayloadError):
                    await resp.content.readline()
        finally:
            await served.stop()


# -- kubectl (Go's TLS and client-go's auth) --


async def run_kubectl(tmp_path: Path, kubeconfig: Path, *args: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        KUBECTL,
        "--kubeconfig",
        str(kubeconfig),
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)},
    )
    stdout, stderr = await asyncio.wait_for(proc.communicate(), timeout=60)
    assert proc.returncode is not None
    return proc.returncode, stdout.decode(), stderr.decode()


@pytest.mark.kubectl
async def test_kubectl_trusts_the_ca_and_sends_the_token(tmp_path: Path) -> None:
    async with ServedApp(make_app([]), tls=True, token=TOKEN) as served:
        served.write_kubeconfig(tmp_path / "good")
        rc, stdout, stderr = await run_kubectl(tmp_path, tmp_path / "good", "get", "--raw", "/healthz")
        assert (rc, stdout, stderr) == (0, "ok", "")

        write_kubeconfig(tmp_path / "bad", server=served.url, token="wrong", ca_pem=served.ca_pem)
        rc, stdout, stderr = await run_kubectl(tmp_path, tmp_path / "bad", "get", "--raw", "/healthz")
        assert rc != 0
        assert "Unauthorized" in stderr

        write_kubeconfig(tmp_path / "untrusted", server=served.url, token=TOKEN)
        rc, stdout, stderr = await run_kubectl(tmp_path, tmp_path / "untrusted", "get", "--raw", "/healthz")
        assert rc != 0
        assert "certificate" in stderr


# -- serve_forever --


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_serve_forever_until_signalled(tmp_path: Path, signum: signal.Signals) -> None:
    lifecycle: list[str] = []
    results: list[str] = []
    kubeconfig = tmp_path / "kubeconfig"

    def query_then_signal(served: ServedApp) -> None:
        try:
            headers = {"Authorization": f"Bearer {TOKEN}"}
            request = urllib.request.Request(f"{served.url}/healthz", headers=headers)
            with urllib.request.urlopen(request, context=client_ssl(served.ca_pem), timeout=30) as resp:
                results.append(resp.read().decode())
        finally:
            os.kill(os.getpid(), signum)

    def on_ready(served: ServedApp) -> None:
        results.append("ready")
        assert kubeconfig.exists()
        threading.Thread(target=query_then_signal, args=(served,)).start()

    serve_forever(
        make_app(lifecycle),
        host="127.0.0.1",
        port=0,
        token=TOKEN,
        tls=True,
        kubeconfig=str(kubeconfig),
        on_ready=on_ready,
    )
    assert results == ["ready", "ok"]
    assert lifecycle == ["startup", "cleanup"]
    config = yaml.safe_load(kubeconfig.read_text())
    assert config["users"][0]["user"] == {"token": TOKEN}
    assert config["clusters"][0]["cluster"]["server"].startswith("https://127.0.0.1:")
