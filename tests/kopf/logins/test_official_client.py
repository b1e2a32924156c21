"""Piggybacking the official kubernetes client and its async twin."""

import logging
import sys
from pathlib import Path
from typing import Any

import pytest

import kopf
from kopf._cogs.structs.credentials import ConnectionInfo, LoginError
from kopf._core.intents.logins.officialclient import connection_info_from_client_configuration, login_via_client

from .helpers import CA_PEM, b64, logger, write_kubeconfig

# -- the official client --


def test_client_configuration_with_prefixed_api_key() -> None:
    from kubernetes.client import Configuration

    config = Configuration(
        host="https://client-host:6443",
        api_key={"authorization": "xyz-token"},
        api_key_prefix={"authorization": "Bearer"},
    )
    config.verify_ssl = False
    config.ssl_ca_cert = "/ca.crt"
    config.cert_file = "/client.crt"
    config.key_file = "/client.key"
    info = connection_info_from_client_configuration(config, default_namespace="ns")
    assert info == ConnectionInfo(
        server="https://client-host:6443",
        ca_path="/ca.crt",
        insecure=True,
        scheme="Bearer",
        token="xyz-token",
        certificate_path="/client.crt",
        private_key_path="/client.key",
        default_namespace="ns",
    )


def test_client_configuration_with_header_in_api_key() -> None:
    from kubernetes.client import Configuration

    config = Configuration(host="https://h", api_key={"authorization": "bearer in-cluster-token"})
    info = connection_info_from_client_configuration(config)
    assert info.scheme == "bearer"
    assert info.token == "in-cluster-token"
    assert info.insecure is False


def test_client_configuration_without_prefix_or_credentials() -> None:
    from kubernetes.client import Configuration

    info = connection_info_from_client_configuration(Configuration(host="https://h", api_key={"authorization": "x"}))
    assert (info.scheme, info.token) == (None, "x")
    info = connection_info_from_client_configuration(Configuration(host="https://h"))
    assert (info.scheme, info.token, info.username, info.password) == (None, None, None, None)


def test_client_configuration_calls_the_refresh_hook() -> None:
    from kubernetes.client import Configuration

    config = Configuration(host="https://h", api_key={"authorization": "Bearer old"})

    def refresh(cfg: Any) -> None:
        cfg.api_key["authorization"] = "Bearer new"

    config.refresh_api_key_hook = refresh  # type: ignore[assignment]
    info = connection_info_from_client_configuration(config)
    assert info.token == "new"


def test_client_via_kubeconfig(kubeconfig_path: Path) -> None:
    write_kubeconfig(
        kubeconfig_path,
        cluster={"server": "https://client-kubeconfig:6443", "certificate-authority-data": b64(CA_PEM)},
        user={"token": "client-token"},
        context={"cluster": "cls", "user": "usr", "namespace": "client-ns"},
    )
    info = login_via_client(logger=logger)
    assert info is not None
    assert info.server == "https://client-kubeconfig:6443"
    assert (info.scheme, info.token) == ("Bearer", "client-token")
    assert info.default_namespace == "client-ns"
    assert info.insecure is False
    assert info.ca_path is not None
    assert Path(info.ca_path).read_bytes() == CA_PEM  # the library's own temporary file


def test_client_via_kubeconfig_becomes_the_default_config(kubeconfig_path: Path) -> None:
    from kubernetes.client import Configuration

    write_kubeconfig(kubeconfig_path, cluster={"server": "https://piggybacked"}, user={"token": "tkn"})
    info = login_via_client(logger=logger)
    assert info is not None and info.server == "https://piggybacked"
    default = Configuration.get_default_copy()
    assert default.host == "https://piggybacked"  # what a handler's bare CoreV1Api() uses
    assert "tkn" in str(default.get_api_key_with_prefix("authorization") or default.api_key)


async def test_async_client_via_kubeconfig(kubeconfig_path: Path) -> None:
    from kubernetes_asyncio.client import Configuration

    write_kubeconfig(
        kubeconfig_path,
        cluster={"server": "https://async-host:6443"},
        user={"token": "async-tkn"},
        context={"cluster": "cls", "user": "usr", "namespace": "async-ns"},
    )
    info = await kopf.login_via_async_client(logger=logger)
    assert info is not None
    assert (info.server, info.scheme, info.token) == ("https://async-host:6443", "Bearer", "async-tkn")
    assert info.default_namespace == "async-ns"
    assert Configuration.get_default_copy().host == "https://async-host:6443"


async def test_async_client_fails_clearly_without_any_config(kubeconfig_path: Path) -> None:
    with pytest.raises(LoginError, match="neither in-cluster"):
        await kopf.login_via_async_client(logger=logger)


def test_client_in_cluster(service_account: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import kubernetes.config.incluster_config as incluster

    monkeypatch.setattr(incluster, "SERVICE_TOKEN_FILENAME", str(service_account / "token"))
    monkeypatch.setattr(incluster, "SERVICE_CERT_FILENAME", str(service_account / "ca.crt"))
    info = login_via_client(logger=logger)
    assert info is not None
    assert info.server == "https://10.96.0.1:6443"
    assert info.token == "sa-token"
    assert info.scheme is not None and info.scheme.lower() == "bearer"
    assert info.ca_path == str(service_account / "ca.crt")
    assert info.default_namespace == "sa-namespace"


def test_client_fails_without_any_config() -> None:
    with pytest.raises(LoginError, match="neither in-cluster"):
        login_via_client(logger=logger)


def test_client_not_installed(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setitem(sys.modules, "kubernetes", None)  # makes the import fail
    with caplog.at_level(logging.WARNING, logger="test-login"):
        assert login_via_client(logger=logger) is None
    assert "not installed" in caplog.text


def test_kopf_run_sim_points_the_client_libraries_to_the_embedded_cluster(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kubernetes.client import Configuration

    from kopf import cli

    path = tmp_path / "sim.kubeconfig"
    write_kubeconfig(path, cluster={"server": "http://127.0.0.1:12345"}, user={"token": "sim"})
    monkeypatch.setenv("KUBECONFIG", str(path))  # set by `kopf run --sim` before the operator's files load
    cli._point_client_libraries_to_the_sim()
    assert Configuration.get_default_copy().host == "http://127.0.0.1:12345"
