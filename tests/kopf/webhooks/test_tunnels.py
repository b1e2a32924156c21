"""Ngrok tunnels, the auto-detection of the cluster kinds with the auto-servers/tunnels, and custom tunnels."""

from __future__ import annotations

import dataclasses
import sys
import types
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

import pytest

from kopf._cogs.helpers.certificates import MissingDependencyError
from kopf._cogs.structs import reviews
from kopf._kits.webhooks import (
    ClusterDetector,
    ClusterKind,
    WebhookAutoServer,
    WebhookAutoTunnel,
    WebhookNgrokTunnel,
    WebhookServer,
    detect_cluster,
)

from .helpers import Recorder, Serve, cabundle, is_listening, port_of, post, ssl_context


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
