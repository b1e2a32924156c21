"""The kubeconfig's ``proxy-url``: kopf's requests go through the proxy (a forward proxy on loopback, real sockets)."""

from __future__ import annotations

import importlib
import logging
import pathlib
from collections.abc import AsyncIterator

import aiohttp
import pytest
import yaml
from aiohttp import web

import kopf
from kopf._cogs.clients import api
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.structs.credentials import Vault
from kopf_sim.http.app import build_app
from kopf_sim.store.cluster import Cluster
from kopf_sim.transports.serving import ServedApp

# The libraries' own logins are tested here: once imported, they are used instead of the built-in reader.
for _library in ("kubernetes", "pykube"):
    importlib.import_module(_library)


class ForwardProxy:
    """A plain-HTTP forward proxy: requests in the absolute form, forwarded as they are; the URLs seen."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.app = web.Application()
        self.app.router.add_route("*", "/{tail:.*}", self.forward)

    async def forward(self, request: web.Request) -> web.StreamResponse:
        target = str(request.url)
        self.seen.append(target)
        hop_by_hop = {"host", "proxy-connection"}
        headers = {key: value for key, value in request.headers.items() if key.lower() not in hop_by_hop}
        async with (
            aiohttp.ClientSession() as session,
            session.request(request.method, target, headers=headers, data=await request.read()) as response,
        ):
            return web.Response(status=response.status, body=await response.read(), content_type=response.content_type)


@pytest.fixture
async def served(cluster: Cluster) -> AsyncIterator[ServedApp]:
    async with ServedApp(build_app(cluster)) as served:
        yield served


@pytest.fixture
async def proxy() -> AsyncIterator[tuple[ForwardProxy, str]]:
    forward_proxy = ForwardProxy()
    runner = web.AppRunner(forward_proxy.app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    yield forward_proxy, f"http://127.0.0.1:{port}"
    await runner.cleanup()


@pytest.mark.parametrize("login", [kopf.login_with_kubeconfig, kopf.login_via_client, kopf.login_via_pykube])
async def test_the_kubeconfigs_proxy_is_used(
    served: ServedApp,
    proxy: tuple[ForwardProxy, str],
    tmp_path: pathlib.Path,
    monkeypatch: pytest.MonkeyPatch,
    login: object,
) -> None:
    forward_proxy, proxy_url = proxy
    kubeconfig = tmp_path / "kubeconfig"
    served.write_kubeconfig(kubeconfig)
    config = yaml.safe_load(kubeconfig.read_text())
    config["clusters"][0]["cluster"]["proxy-url"] = proxy_url
    kubeconfig.write_text(yaml.safe_dump(config))
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)

    info = login(logger=logging.getLogger("test"), settings=OperatorSettings())  # type: ignore[operator]
    assert info is not None and info.proxy_url == proxy_url
    async with Vault({"login": info}) as vault:
        rsp = await api.get("/api/v1/namespaces/default", settings=OperatorSettings(), vault=vault)
    assert rsp["metadata"]["name"] == "default"
    assert forward_proxy.seen == [f"{served.url}/api/v1/namespaces/default"]
