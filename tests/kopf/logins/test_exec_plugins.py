"""The kubeconfig's exec credential plugins: run with no terminal, their ExecCredential parsed."""

import datetime
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from kopf._cogs.structs.credentials import LoginError
from kopf._core.intents.logins import execplugins
from kopf._core.intents.logins.kubeconfiglogin import login_with_kubeconfig

from .helpers import CA_PEM, CERT_PEM, KEY_PEM, b64, exec_user, write_kubeconfig


def test_exec_plugin_token_with_expiration(kubeconfig_path: Path, plugin_path: Path) -> None:
    write_kubeconfig(kubeconfig_path, user=exec_user(plugin_path, "token"))
    info = login_with_kubeconfig()
    assert info is not None
    assert info.token == "exec-token"
    assert info.scheme == "Bearer"
    assert info.expiration == datetime.datetime(2099, 12, 31, 23, 59, 59, tzinfo=datetime.UTC)
    assert not info.is_expired()


@pytest.mark.parametrize("api_version", ["client.authentication.k8s.io/v1beta1", "client.authentication.k8s.io/v1"])
def test_exec_plugin_gets_the_request_args_env(
    kubeconfig_path: Path,
    plugin_path: Path,
    api_version: str,
) -> None:
    user = exec_user(plugin_path, "echo", apiVersion=api_version, provideClusterInfo=True)
    user["exec"]["args"].extend(["--flag", "value"])
    user["exec"]["env"].append({"name": "EXTRA", "value": "extra-value"})
    write_kubeconfig(
        kubeconfig_path,
        user=user,
        cluster={
            "server": "https://exec-cluster",
            "certificate-authority-data": b64(CA_PEM),
            "extensions": [{"name": "client.authentication.k8s.io/exec", "extension": {"audience": "x"}}],
        },
    )
    info = login_with_kubeconfig()
    assert info is not None and info.token is not None
    echoed = json.loads(info.token)
    assert echoed["args"] == ["--flag", "value"]
    assert echoed["extra"] == "extra-value"
    assert echoed["info"]["apiVersion"] == api_version
    assert echoed["info"]["kind"] == "ExecCredential"
    assert echoed["info"]["spec"]["interactive"] is False
    assert echoed["info"]["spec"]["cluster"] == {
        "server": "https://exec-cluster",
        "certificate-authority-data": b64(CA_PEM),
        "config": {"audience": "x"},
    }


def test_exec_plugin_without_cluster_info(kubeconfig_path: Path, plugin_path: Path) -> None:
    write_kubeconfig(kubeconfig_path, user=exec_user(plugin_path, "echo"))
    info = login_with_kubeconfig()
    assert info is not None and info.token is not None
    assert "cluster" not in json.loads(info.token)["info"]["spec"]


def test_exec_plugin_client_certificate(
    kubeconfig_path: Path,
    plugin_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CERT", CERT_PEM.decode())
    monkeypatch.setenv("KEY", KEY_PEM.decode())
    user = {**exec_user(plugin_path, "cert"), "client-certificate": "static.crt", "client-key": "static.key"}
    write_kubeconfig(kubeconfig_path, user=user)
    info = login_with_kubeconfig()
    assert info is not None
    assert info.certificate_data == CERT_PEM
    assert info.private_key_data == KEY_PEM
    assert info.certificate_path is None and info.private_key_path is None  # replaced by the plugin's
    assert info.token is None and info.expiration is None


def test_exec_plugin_command_relative_to_the_config(kubeconfig_path: Path, plugin_path: Path) -> None:
    user = exec_user(plugin_path, "token", command="./bin/plugin.py", args=[])
    write_kubeconfig(kubeconfig_path, user=user)
    info = login_with_kubeconfig()
    assert info is not None and info.token == "exec-token"


@pytest.mark.parametrize(
    ("mode", "extra", "match"),
    [
        ("fail", {}, "exit code 3"),
        ("garbage", {}, "no valid JSON"),
        ("empty", {}, "neither a token nor a client certificate"),
        ("cert-only", {}, "without a key"),
        ("bad-expiration", {}, "expirationTimestamp"),
        ("token", {"apiVersion": "client.authentication.k8s.io/v9"}, "not supported"),
        ("token", {"interactiveMode": "Always"}, "interactive"),
        ("token", {"command": ""}, "no command"),
        ("token", {"command": "kopf-no-such-plugin", "installHint": "Install the plugin."}, "Install the plugin."),
    ],
)
def test_exec_plugin_failures(
    kubeconfig_path: Path,
    plugin_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    mode: str,
    extra: dict[str, Any],
    match: str,
) -> None:
    monkeypatch.setenv("CERT", CERT_PEM.decode())
    write_kubeconfig(kubeconfig_path, user=exec_user(plugin_path, mode, **extra))
    with pytest.raises(LoginError, match=match) as err:
        login_with_kubeconfig()
    assert "s3cr3t-p4ss" not in str(err.value)  # the plugin's stderr is redacted


def test_exec_plugin_api_version_mismatch(
    kubeconfig_path: Path,
    plugin_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("REPLY_VERSION", "client.authentication.k8s.io/v1beta1")
    write_kubeconfig(kubeconfig_path, user=exec_user(plugin_path, "token"))
    with pytest.raises(LoginError, match="apiVersion"):
        login_with_kubeconfig()


def test_exec_plugin_timeout(
    kubeconfig_path: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    blocker = tmp_path / "blocker.py"
    blocker.write_text("import select; select.select([], [], [])\n")  # blocks forever
    monkeypatch.setattr(execplugins, "EXEC_TIMEOUT", 0.05)
    write_kubeconfig(
        kubeconfig_path,
        user={
            "exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": sys.executable, "args": [str(blocker)]}
        },
    )
    with pytest.raises(LoginError, match="did not finish"):
        login_with_kubeconfig()
