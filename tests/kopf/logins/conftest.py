"""The login tests run isolated: no real kubeconfig, service account, secrets, or client defaults."""

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kopf._cogs.helpers import loggers
from kopf._core.intents.logins import serviceaccount

from .helpers import CA_PEM, PLUGIN


@pytest.fixture(autouse=True)
def isolated_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No real kubeconfig, no real service account, no secrets from other tests."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_PORT", raising=False)
    monkeypatch.setattr(serviceaccount, "SERVICE_ACCOUNT_DIR", str(tmp_path / "no-service-account"))
    loggers.forget_secrets()
    yield
    loggers.forget_secrets()


@pytest.fixture
def kubeconfig_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "kube" / "config"
    monkeypatch.setenv("KUBECONFIG", str(path))
    return path


@pytest.fixture
def plugin_path(tmp_path: Path) -> Path:
    path = tmp_path / "kube" / "bin" / "plugin.py"
    path.parent.mkdir(parents=True)
    path.write_text(f"#!{sys.executable}\n{PLUGIN}")
    path.chmod(0o755)
    return path


@pytest.fixture
def service_account(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "serviceaccount"
    path.mkdir()
    (path / "token").write_text("sa-token\n")
    (path / "ca.crt").write_bytes(CA_PEM)
    (path / "namespace").write_text("sa-namespace")
    monkeypatch.setattr(serviceaccount, "SERVICE_ACCOUNT_DIR", str(path))
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "6443")
    return path


@pytest.fixture(autouse=True)
def restored_client_defaults() -> Iterator[None]:
    """The login sets the libraries' global default configurations: restore them for other tests."""
    import kubernetes.client
    import kubernetes_asyncio.client

    sync_before = kubernetes.client.Configuration.get_default_copy()
    async_before = kubernetes_asyncio.client.Configuration.get_default_copy()
    yield
    kubernetes.client.Configuration.set_default(sync_before)
    kubernetes_asyncio.client.Configuration.set_default(async_before)
