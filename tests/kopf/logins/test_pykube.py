"""Piggybacking pykube-ng."""

import logging
import os
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from kopf._cogs.structs.credentials import ConnectionInfo, LoginError
from kopf._core.intents.logins import serviceaccount
from kopf._core.intents.logins.pykubeclient import login_via_pykube

from .helpers import logger

# -- pykube-ng --


def test_pykube_not_installed(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setitem(sys.modules, "pykube", None)
    with caplog.at_level(logging.WARNING, logger="test-login"):
        assert login_via_pykube(logger=logger) is None
    assert "pykube-ng is not installed" in caplog.text


class FakeBytesOrFile:
    def __init__(self, path: str) -> None:
        self._path = path

    def filename(self) -> str:
        return self._path


def fake_pykube(*, service_account: bool, kubeconfig: bool) -> types.ModuleType:
    calls: list[str] = []

    class KubeConfig:
        def __init__(self, cluster: dict[str, Any], user: dict[str, Any], namespace: str) -> None:
            self.cluster = cluster
            self.user = user
            self.namespace = namespace

        @classmethod
        def from_service_account(cls, path: str) -> "KubeConfig":
            calls.append(f"sa:{path}")
            if not service_account:
                raise FileNotFoundError(path)
            return cls(
                {"server": "https://pykube-sa", "certificate-authority": FakeBytesOrFile("/sa/ca.crt")},
                {"token": "pykube-sa-token"},
                "sa-ns",
            )

        @classmethod
        def from_file(cls, filename: str) -> "KubeConfig":
            calls.append(f"file:{filename}")
            if not kubeconfig:
                raise RuntimeError(f"Configuration file {filename} not found")
            return cls(
                {"server": "https://pykube-file", "insecure-skip-tls-verify": True},
                {
                    "username": "u",
                    "password": "p4ssw0rd",
                    "client-certificate": FakeBytesOrFile("/c.crt"),
                    "client-key": "/c.key",
                },
                "default",
            )

    module = types.ModuleType("pykube")
    module.KubeConfig = KubeConfig  # type: ignore[attr-defined]
    module.calls = calls  # type: ignore[attr-defined]
    return module


def test_pykube_in_cluster(monkeypatch: pytest.MonkeyPatch) -> None:
    module = fake_pykube(service_account=True, kubeconfig=True)
    monkeypatch.setitem(sys.modules, "pykube", module)
    info = login_via_pykube(logger=logger)
    assert info == ConnectionInfo(
        server="https://pykube-sa",
        ca_path="/sa/ca.crt",
        scheme="Bearer",
        token="pykube-sa-token",
        default_namespace="sa-ns",
    )
    assert module.calls == [f"sa:{serviceaccount.SERVICE_ACCOUNT_DIR}"]


def test_pykube_via_kubeconfig(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    module = fake_pykube(service_account=False, kubeconfig=True)
    monkeypatch.setitem(sys.modules, "pykube", module)
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join([str(tmp_path / "a"), str(tmp_path / "b")]))
    info = login_via_pykube(logger=logger)
    assert info == ConnectionInfo(
        server="https://pykube-file",
        insecure=True,
        username="u",
        password="p4ssw0rd",
        certificate_path="/c.crt",
        private_key_path="/c.key",
        default_namespace="default",
    )
    assert module.calls[-1] == f"file:{tmp_path / 'a'}"


def test_pykube_fails_without_any_config(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pykube", fake_pykube(service_account=False, kubeconfig=False))
    with pytest.raises(LoginError, match="neither in-cluster"):
        login_via_pykube(logger=logger)
