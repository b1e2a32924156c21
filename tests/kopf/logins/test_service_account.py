"""The in-cluster login from the pod's service account."""

from pathlib import Path

import pytest

from kopf._cogs.structs.credentials import ConnectionInfo, LoginError
from kopf._core.intents.logins.fallbacks import login_with_service_account_or_kubeconfig
from kopf._core.intents.logins.serviceaccount import login_with_service_account

from .helpers import logger, write_kubeconfig


def test_service_account_absent() -> None:
    assert login_with_service_account() is None


def test_service_account_full(service_account: Path) -> None:
    info = login_with_service_account(logger=logger)
    assert info == ConnectionInfo(
        server="https://10.96.0.1:6443",
        ca_path=str(service_account / "ca.crt"),
        scheme="Bearer",
        token="sa-token",
        default_namespace="sa-namespace",
    )


def test_service_account_minimal(service_account: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (service_account / "ca.crt").unlink()
    (service_account / "namespace").unlink()
    monkeypatch.delenv("KUBERNETES_SERVICE_PORT")
    info = login_with_service_account()
    assert info == ConnectionInfo(server="https://10.96.0.1:443", scheme="Bearer", token="sa-token")


def test_service_account_ipv6_host(service_account: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "fd00::1")
    info = login_with_service_account()
    assert info is not None and info.server == "https://[fd00::1]:6443"


def test_service_account_outside_of_the_cluster(service_account: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST")
    assert login_with_service_account() is None


def test_service_account_without_token(service_account: Path) -> None:
    (service_account / "token").unlink()
    assert login_with_service_account() is None


def test_service_account_empty_token(service_account: Path) -> None:
    (service_account / "token").write_text("\n")
    with pytest.raises(LoginError, match="empty"):
        login_with_service_account()


def test_service_account_preferred_over_kubeconfig(service_account: Path, kubeconfig_path: Path) -> None:
    write_kubeconfig(kubeconfig_path, user={"token": "kubeconfig-token"})
    info = login_with_service_account_or_kubeconfig(logger=logger)
    assert info is not None and info.token == "sa-token"
    (service_account / "token").unlink()
    info = login_with_service_account_or_kubeconfig(logger=logger)
    assert info is not None and info.token == "kubeconfig-token"
