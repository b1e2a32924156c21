"""TLS and tokens against a served simulated cluster (real loopback sockets, real time, no sleeps)."""

import asyncio
import base64
import importlib
import logging
import pathlib
import ssl
from collections.abc import AsyncIterator, Callable

import aiohttp
import pytest

import kopf
from kopf._cogs.clients import api, auth
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.structs.credentials import ConnectionInfo, Vault
from kopf_sim.http.app import build_app
from kopf_sim.store.cluster import Cluster
from kopf_sim.transports.certs import generate_self_signed
from kopf_sim.transports.serving import ServedApp

# The libraries' own logins are tested here: once imported, they are used instead of the built-in reader.
for _library in ("kubernetes",):
    importlib.import_module(_library)

NS_URL = "/api/v1/namespaces/default"


@pytest.fixture
async def served(cluster: Cluster) -> AsyncIterator[ServedApp]:
    async with ServedApp(build_app(cluster), tls=True, token="secret-token") as served:
        yield served


@pytest.fixture
def settings() -> OperatorSettings:
    settings = OperatorSettings()
    settings.networking.error_backoffs = []
    return settings


async def test_ca_data_and_token(served: ServedApp, settings: OperatorSettings) -> None:
    assert served.ca_pem is not None
    info = ConnectionInfo(served.url, ca_data=served.ca_pem, token="secret-token")
    async with Vault({"x": info}) as vault:
        rsp = await api.get(NS_URL, settings=settings, vault=vault)
    assert rsp["metadata"]["name"] == "default"


async def test_ca_data_base64_encoded(served: ServedApp, settings: OperatorSettings) -> None:
    assert served.ca_pem is not None
    info = ConnectionInfo(served.url, ca_data=base64.b64encode(served.ca_pem), token="secret-token")
    async with Vault({"x": info}) as vault:
        rsp = await api.get(NS_URL, settings=settings, vault=vault)
    assert rsp["metadata"]["name"] == "default"


async def test_ca_path(served: ServedApp, settings: OperatorSettings, tmp_path: pathlib.Path) -> None:
    assert served.ca_pem is not None
    (tmp_path / "ca.pem").write_bytes(served.ca_pem)
    info = ConnectionInfo(served.url, ca_path=str(tmp_path / "ca.pem"), token="secret-token")
    async with Vault({"x": info}) as vault:
        rsp = await api.get(NS_URL, settings=settings, vault=vault)
    assert rsp["metadata"]["name"] == "default"


async def test_insecure(served: ServedApp, settings: OperatorSettings) -> None:
    info = ConnectionInfo(served.url, insecure=True, token="secret-token")
    async with Vault({"x": info}) as vault:
        rsp = await api.get(NS_URL, settings=settings, vault=vault)
    assert rsp["metadata"]["name"] == "default"


async def test_untrusted_server_fails(served: ServedApp, settings: OperatorSettings) -> None:
    info = ConnectionInfo(served.url, token="secret-token")
    async with Vault({"x": info}) as vault:
        with pytest.raises(aiohttp.ClientConnectorCertificateError):
            await api.get(NS_URL, settings=settings, vault=vault)


def test_client_certificates_from_data_and_paths(tmp_path: pathlib.Path) -> None:
    bundle = generate_self_signed()
    from_data = ConnectionInfo("https://x", certificate_data=bundle.cert_pem, private_key_data=bundle.key_pem)
    assert isinstance(auth.build_ssl_context(from_data), ssl.SSLContext)
    (tmp_path / "c.pem").write_bytes(bundle.cert_pem)
    (tmp_path / "k.pem").write_bytes(bundle.key_pem)
    from_paths = ConnectionInfo(
        "https://x", certificate_path=str(tmp_path / "c.pem"), private_key_path=str(tmp_path / "k.pem")
    )
    assert isinstance(auth.build_ssl_context(from_paths), ssl.SSLContext)
    mismatched = ConnectionInfo(
        "https://x", certificate_data=bundle.cert_pem, private_key_data=generate_self_signed().key_pem
    )
    with pytest.raises(ssl.SSLError):
        auth.build_ssl_context(mismatched)


@pytest.mark.parametrize("login", [kopf.login_with_kubeconfig, kopf.login_via_client])
async def test_login_functions_against_the_served_cluster(
    served: ServedApp,
    settings: OperatorSettings,
    tmp_path: pathlib.Path,
    monkeypatch: pytest.MonkeyPatch,
    login: Callable[..., ConnectionInfo | None],
) -> None:
    """The kubeconfig and the official client's configuration both lead kopf's clients to the HTTPS server."""
    kubeconfig = tmp_path / "kubeconfig"
    served.write_kubeconfig(kubeconfig)
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    info = login(logger=logging.getLogger("test"))
    assert info is not None and info.server == served.url
    async with Vault({"login": info}) as vault:
        rsp = await api.get(NS_URL, settings=settings, vault=vault)
    assert rsp["metadata"]["name"] == "default"


# As the published framework takes them (its type hints): the certificates' data as text, the paths as path-likes.


@pytest.mark.parametrize(
    "encode",
    [
        pytest.param(lambda pem: pem.decode("ascii"), id="pem-text"),
        pytest.param(lambda pem: base64.b64encode(pem).decode("ascii"), id="base64-text"),
    ],
)
async def test_ca_data_as_text(served: ServedApp, settings: OperatorSettings, encode: Callable[[bytes], str]) -> None:
    assert served.ca_pem is not None
    info = ConnectionInfo(served.url, ca_data=encode(served.ca_pem), token="secret-token")
    async with Vault({"x": info}) as vault:
        rsp = await api.get(NS_URL, settings=settings, vault=vault)
    assert rsp["metadata"]["name"] == "default"


async def test_ca_path_as_a_path(served: ServedApp, settings: OperatorSettings, tmp_path: pathlib.Path) -> None:
    assert served.ca_pem is not None
    (tmp_path / "ca.pem").write_bytes(served.ca_pem)
    info = ConnectionInfo(served.url, ca_path=tmp_path / "ca.pem", token="secret-token")
    async with Vault({"x": info}) as vault:
        rsp = await api.get(NS_URL, settings=settings, vault=vault)
    assert rsp["metadata"]["name"] == "default"


def test_client_certificates_as_text_and_path_likes(tmp_path: pathlib.Path) -> None:
    bundle = generate_self_signed()
    from_text = ConnectionInfo(
        "https://x",
        certificate_data=bundle.cert_pem.decode("ascii"),
        private_key_data=base64.b64encode(bundle.key_pem).decode("ascii"),
    )
    assert isinstance(auth.build_ssl_context(from_text), ssl.SSLContext)
    (tmp_path / "c.pem").write_bytes(bundle.cert_pem)
    (tmp_path / "k.pem").write_bytes(bundle.key_pem)
    from_paths = ConnectionInfo("https://x", certificate_path=tmp_path / "c.pem", private_key_path=tmp_path / "k.pem")
    assert isinstance(auth.build_ssl_context(from_paths), ssl.SSLContext)


async def test_an_operator_logged_in_with_the_ca_as_text(served: ServedApp, cluster: Cluster) -> None:
    """End to end: a login handler as written for the published framework, an operator, an object handled."""
    assert served.ca_pem is not None
    ca_text = served.ca_pem.decode("ascii")
    registry = kopf.OperatorRegistry()
    handled: list[str] = []

    @kopf.on.login(registry=registry)
    def login_fn(**_: object) -> kopf.ConnectionInfo:
        return kopf.ConnectionInfo(server=served.url, ca_data=ca_text, token="secret-token")

    @kopf.on.event("configmaps", registry=registry)
    def seen_fn(name: str, **_: object) -> None:
        handled.append(name)

    settings = kopf.OperatorSettings()
    settings.peering.standalone = True
    stop = asyncio.Event()
    task = asyncio.create_task(kopf.operator(registry=registry, settings=settings, clusterwide=True, stop_flag=stop))
    configmaps = cluster.resource("", "v1", "configmaps")
    cluster.create(configmaps, "default", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm1"}})
    try:
        async with asyncio.timeout(30):
            while "cm1" not in handled:
                assert not task.done(), task.exception()
                await asyncio.sleep(0.05)
    finally:
        stop.set()
        await asyncio.wait_for(task, timeout=30)
