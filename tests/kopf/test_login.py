"""
The login functions: the rudimentary ones (kubeconfig, service account) and the piggybacking ones.
"""

import base64
import datetime
import json
import logging
import os
import ssl
import sys
import textwrap
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

import kopf
from kopf._cogs.helpers import loggers
from kopf._cogs.structs.credentials import ConnectionInfo, LoginError
from kopf._core.intents.causes import Activity
from kopf._core.intents.logins import execplugins, officialclient, pykubeclient, serviceaccount
from kopf._core.intents.logins.fallbacks import get_fallback_login_handlers, login_with_service_account_or_kubeconfig
from kopf._core.intents.logins.kubeconfiglogin import login_with_kubeconfig
from kopf._core.intents.logins.officialclient import connection_info_from_client_configuration, login_via_client
from kopf._core.intents.logins.pykubeclient import login_via_pykube
from kopf._core.intents.logins.serviceaccount import login_with_service_account

logger = logging.getLogger("test-login")

CA_PEM = b"-----BEGIN CERTIFICATE-----\nQ0EgZGF0YQ==\n-----END CERTIFICATE-----\n"
CERT_PEM = b"-----BEGIN CERTIFICATE-----\nY2VydCBkYXRh\n-----END CERTIFICATE-----\n"
KEY_PEM = b"-----BEGIN PRIVATE KEY-----\na2V5IGRhdGE=\n-----END PRIVATE KEY-----\n"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


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


def write_kubeconfig(
    path: Path,
    *,
    cluster: dict[str, Any] | None = None,
    user: dict[str, Any] | None = None,
    context: dict[str, Any] | None = None,
    current: str | None = "ctx",
    names: tuple[str, str, str] = ("cls", "usr", "ctx"),
) -> Path:
    cluster_name, user_name, context_name = names
    doc: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": cluster_name, "cluster": cluster or {"server": "https://example.com:6443"}}],
        "users": [{"name": user_name, "user": user or {}}],
        "contexts": [{"name": context_name, "context": context or {"cluster": cluster_name, "user": user_name}}],
    }
    if current is not None:
        doc["current-context"] = current
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.fixture
def kubeconfig_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "kube" / "config"
    monkeypatch.setenv("KUBECONFIG", str(path))
    return path


# -- kubeconfig: discovery --


def test_kubeconfig_absent_returns_none() -> None:
    assert login_with_kubeconfig() is None


def test_kubeconfig_absent_files_in_env_return_none(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join([str(tmp_path / "a"), str(tmp_path / "b")]))
    assert login_with_kubeconfig() is None


def test_kubeconfig_default_path_in_home(tmp_path: Path) -> None:
    write_kubeconfig(tmp_path / "home" / ".kube" / "config", user={"token": "home-token"})
    info = login_with_kubeconfig()
    assert info is not None
    assert info.server == "https://example.com:6443"
    assert info.token == "home-token"


def test_kubeconfig_empty_env_means_default_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECONFIG", "")
    write_kubeconfig(tmp_path / "home" / ".kube" / "config", user={"token": "home-token"})
    info = login_with_kubeconfig()
    assert info is not None and info.token == "home-token"


def test_kubeconfig_ignores_extra_kwargs(kubeconfig_path: Path) -> None:
    write_kubeconfig(kubeconfig_path)
    info = login_with_kubeconfig(logger=logger, retry=0, param=None, unknown=123)
    assert info is not None


# -- kubeconfig: variants --


def test_kubeconfig_minimal_is_anonymous(kubeconfig_path: Path) -> None:
    write_kubeconfig(kubeconfig_path, context={"cluster": "cls"})
    info = login_with_kubeconfig()
    assert info == ConnectionInfo(server="https://example.com:6443")


def test_kubeconfig_token_and_namespace(kubeconfig_path: Path) -> None:
    write_kubeconfig(
        kubeconfig_path, user={"token": "abc-token"}, context={"cluster": "cls", "user": "usr", "namespace": "ns1"}
    )
    info = login_with_kubeconfig()
    assert info is not None
    assert info.scheme == "Bearer"
    assert info.token == "abc-token"
    assert info.default_namespace == "ns1"
    assert info.username is None and info.password is None
    assert info.expiration is None


def test_kubeconfig_token_file_relative_to_the_config(kubeconfig_path: Path) -> None:
    (kubeconfig_path.parent / "secrets").mkdir(parents=True)
    (kubeconfig_path.parent / "secrets" / "token").write_text("file-token\n")
    write_kubeconfig(kubeconfig_path, user={"tokenFile": "secrets/token"})
    info = login_with_kubeconfig()
    assert info is not None
    assert info.token == "file-token"
    assert info.scheme == "Bearer"


def test_kubeconfig_inline_token_wins_over_token_file(kubeconfig_path: Path) -> None:
    write_kubeconfig(kubeconfig_path, user={"token": "inline", "tokenFile": "/nonexistent/token"})
    info = login_with_kubeconfig()
    assert info is not None and info.token == "inline"


def test_kubeconfig_unreadable_token_file(kubeconfig_path: Path) -> None:
    write_kubeconfig(kubeconfig_path, user={"tokenFile": "missing-token"})
    with pytest.raises(LoginError, match="token file"):
        login_with_kubeconfig()


def test_kubeconfig_basic_auth(kubeconfig_path: Path) -> None:
    write_kubeconfig(kubeconfig_path, user={"username": "admin", "password": "pa55word"})
    info = login_with_kubeconfig()
    assert info is not None
    assert info.username == "admin"
    assert info.password == "pa55word"
    assert info.token is None and info.scheme is None


def test_kubeconfig_files_are_resolved_relative_to_the_config(kubeconfig_path: Path) -> None:
    write_kubeconfig(
        kubeconfig_path,
        cluster={"server": "https://10.0.0.1", "certificate-authority": "ca.crt"},
        user={"client-certificate": "certs/client.crt", "client-key": "/abs/client.key"},
    )
    info = login_with_kubeconfig()
    assert info is not None
    assert info.ca_path == str(kubeconfig_path.parent / "ca.crt")
    assert info.certificate_path == str(kubeconfig_path.parent / "certs" / "client.crt")
    assert info.private_key_path == "/abs/client.key"
    assert info.ca_data is None and info.certificate_data is None and info.private_key_data is None


def test_kubeconfig_home_relative_files(kubeconfig_path: Path, tmp_path: Path) -> None:
    write_kubeconfig(kubeconfig_path, cluster={"server": "https://h", "certificate-authority": "~/ca.crt"})
    info = login_with_kubeconfig()
    assert info is not None
    assert info.ca_path == str(tmp_path / "home" / "ca.crt")


def test_kubeconfig_embedded_data(kubeconfig_path: Path) -> None:
    write_kubeconfig(
        kubeconfig_path,
        cluster={"server": "https://10.0.0.1", "certificate-authority-data": b64(CA_PEM)},
        user={"client-certificate-data": b64(CERT_PEM), "client-key-data": b64(KEY_PEM)},
    )
    info = login_with_kubeconfig()
    assert info is not None
    assert info.ca_data == CA_PEM
    assert info.certificate_data == CERT_PEM
    assert info.private_key_data == KEY_PEM
    assert info.ca_path is None and info.certificate_path is None and info.private_key_path is None


@pytest.mark.parametrize(("value", "expected"), [(True, True), (False, False), (None, None)])
def test_kubeconfig_insecure_flag(kubeconfig_path: Path, value: bool | None, expected: bool | None) -> None:
    cluster: dict[str, Any] = {"server": "https://h"}
    if value is not None:
        cluster["insecure-skip-tls-verify"] = value
    write_kubeconfig(kubeconfig_path, cluster=cluster)
    info = login_with_kubeconfig()
    assert info is not None
    assert info.insecure is expected


def test_kubeconfig_auth_provider_token_as_is(kubeconfig_path: Path) -> None:
    write_kubeconfig(
        kubeconfig_path,
        user={
            "auth-provider": {"name": "oidc", "config": {"id-token": "oidc-token", "expiry": "2099-01-02T03:04:05Z"}}
        },
    )
    info = login_with_kubeconfig()
    assert info is not None
    assert info.token == "oidc-token"
    assert info.scheme == "Bearer"
    assert info.expiration == datetime.datetime(2099, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)


def test_kubeconfig_selects_the_current_context(kubeconfig_path: Path) -> None:
    doc = {
        "current-context": "second",
        "clusters": [
            {"name": "c1", "cluster": {"server": "https://one"}},
            {"name": "c2", "cluster": {"server": "https://two"}},
        ],
        "users": [{"name": "u1", "user": {"token": "t-one"}}, {"name": "u2", "user": {"token": "t-two"}}],
        "contexts": [
            {"name": "first", "context": {"cluster": "c1", "user": "u1"}},
            {"name": "second", "context": {"cluster": "c2", "user": "u2", "namespace": "n2"}},
        ],
    }
    kubeconfig_path.parent.mkdir(parents=True)
    kubeconfig_path.write_text(yaml.safe_dump(doc))
    info = login_with_kubeconfig()
    assert info == ConnectionInfo(server="https://two", scheme="Bearer", token="t-two", default_namespace="n2")


# -- kubeconfig: multiple files --


def test_kubeconfig_multiple_files_are_merged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The first file has only the current context; the second one has the definitions.
    first = tmp_path / "first" / "config"
    first.parent.mkdir()
    first.write_text(yaml.safe_dump({"current-context": "ctx"}))
    second = write_kubeconfig(
        tmp_path / "second" / "config",
        current="other",
        cluster={"server": "https://merged", "certificate-authority": "ca.crt"},
        user={"token": "merged-token"},
    )
    missing = tmp_path / "missing" / "config"
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join([str(missing), str(first), str(second)]))
    info = login_with_kubeconfig()
    assert info is not None
    assert info.server == "https://merged"
    assert info.token == "merged-token"
    assert info.ca_path == str(second.parent / "ca.crt")  # relative to its own file


def test_kubeconfig_first_file_wins_for_the_same_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = write_kubeconfig(tmp_path / "a.yaml", cluster={"server": "https://first"}, user={"token": "first"})
    second = write_kubeconfig(
        tmp_path / "b.yaml",
        cluster={"server": "https://second"},
        user={"token": "second"},
        current="ctx2",
        names=("cls", "usr", "ctx2"),
    )
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join([str(first), str(second)]))
    info = login_with_kubeconfig()
    assert info is not None
    assert (info.server, info.token) == ("https://first", "first")

    # The current context of the first file wins even if the context itself is defined later.
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join([str(second), str(first)]))
    info = login_with_kubeconfig()
    assert info is not None
    assert (info.server, info.token) == ("https://second", "second")


def test_kubeconfig_empty_file_among_others(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    config = write_kubeconfig(tmp_path / "config.yaml", user={"token": "tkn"})
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join([str(empty), str(config)]))
    info = login_with_kubeconfig()
    assert info is not None and info.token == "tkn"


# -- kubeconfig: errors --


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(current=None), "no current context"),
        (dict(current="absent"), "context 'absent' is not defined"),
        (dict(context={"cluster": "nope", "user": "usr"}), "cluster 'nope'"),
        (dict(context={"cluster": "cls", "user": "nope"}), "user 'nope'"),
        (dict(cluster={"insecure-skip-tls-verify": True}), "has no server"),
        (dict(cluster={"server": "https://h", "certificate-authority-data": "!!!"}), "base64"),
    ],
)
def test_kubeconfig_errors(kubeconfig_path: Path, kwargs: dict[str, Any], match: str) -> None:
    write_kubeconfig(kubeconfig_path, **kwargs)
    with pytest.raises(LoginError, match=match):
        login_with_kubeconfig()


@pytest.mark.parametrize(
    "text", ["{{{ not yaml", "- a list\n- not a mapping\n", "clusters: 123\n", "clusters: [{cluster: {server: x}}]\n"]
)
def test_kubeconfig_malformed(kubeconfig_path: Path, text: str) -> None:
    kubeconfig_path.parent.mkdir(parents=True)
    kubeconfig_path.write_text(text)
    with pytest.raises(LoginError):
        login_with_kubeconfig()


# -- kubeconfig: exec plugins --

PLUGIN = textwrap.dedent("""
    import json, os, sys
    info = json.loads(os.environ['KUBERNETES_EXEC_INFO'])
    mode = os.environ.get('PLUGIN_MODE', 'token')
    if mode == 'fail':
        sys.stderr.write('plugin failure: password=s3cr3t-p4ss\\n')
        sys.exit(3)
    if mode == 'garbage':
        print('not json')
        sys.exit(0)
    status = {}
    if mode == 'token':
        status = {'token': 'exec-token', 'expirationTimestamp': '2099-12-31T23:59:59Z'}
    elif mode == 'echo':
        status = {'token': json.dumps({'info': info, 'args': sys.argv[1:], 'extra': os.environ.get('EXTRA')})}
    elif mode == 'cert':
        status = {'clientCertificateData': os.environ['CERT'], 'clientKeyData': os.environ['KEY']}
    elif mode == 'cert-only':
        status = {'clientCertificateData': os.environ['CERT']}
    elif mode == 'empty':
        status = {}
    elif mode == 'bad-expiration':
        status = {'token': 'x', 'expirationTimestamp': 'tomorrow'}
    api_version = os.environ.get('REPLY_VERSION', info['apiVersion'])
    print(json.dumps({'apiVersion': api_version, 'kind': 'ExecCredential', 'status': status}))
""")


@pytest.fixture
def plugin_path(tmp_path: Path) -> Path:
    path = tmp_path / "kube" / "bin" / "plugin.py"
    path.parent.mkdir(parents=True)
    path.write_text(f"#!{sys.executable}\n{PLUGIN}")
    path.chmod(0o755)
    return path


def exec_user(plugin_path: Path, mode: str, **extra: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "apiVersion": "client.authentication.k8s.io/v1",
        "command": sys.executable,
        "args": [str(plugin_path)],
        "env": [{"name": "PLUGIN_MODE", "value": mode}],
        "interactiveMode": "Never",
    }
    spec.update(extra)
    return {"exec": spec}


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


# -- the service account --


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


# -- the default (fallback) login handlers --


@pytest.mark.parametrize(
    ("pykube", "client", "expected"),
    [
        (True, True, ["login_via_pykube", "login_via_client"]),
        (True, False, ["login_via_pykube"]),
        (False, True, ["login_via_client"]),
        (False, False, ["login_with_service_account_or_kubeconfig"]),
    ],
)
def test_fallback_handlers(
    monkeypatch: pytest.MonkeyPatch,
    pykube: bool,
    client: bool,
    expected: list[str],
) -> None:
    monkeypatch.setattr(pykubeclient, "has_pykube", lambda: pykube)
    monkeypatch.setattr(officialclient, "has_client", lambda: client)
    handlers = get_fallback_login_handlers()
    assert [handler.id for handler in handlers] == expected
    assert all(handler.activity == Activity.AUTHENTICATION for handler in handlers)
    assert all(handler.retries is None and handler.timeout is None for handler in handlers)
    assert [handler.fn.__name__ for handler in handlers] == expected


def test_library_detection_does_not_import(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "pykube", raising=False)
    assert officialclient.has_client() is True  # installed in the test environment
    assert pykubeclient.has_pykube() is True  # installed in the test environment (the compatibility harness)
    assert "pykube" not in sys.modules


# -- redaction of the obtained credentials --


def test_obtained_secrets_are_registered_for_redaction(kubeconfig_path: Path) -> None:
    write_kubeconfig(
        kubeconfig_path,
        user={
            "token": "registered-token-1",
            "password": "registered-pass",
            "username": "someone",
            "client-key-data": b64(KEY_PEM),
            "client-certificate-data": b64(CERT_PEM),
        },
    )
    info = login_with_kubeconfig()
    assert info is not None
    text = loggers.redact(f"token registered-token-1, pwd registered-pass; key {KEY_PEM!r}; {b64(KEY_PEM)}")
    assert "registered-token-1" not in text
    assert "registered-pass" not in text
    assert "a2V5IGRhdGE=" not in text
    assert b64(KEY_PEM) not in text
    assert "someone" in loggers.redact("user someone")  # usernames are not secrets


# -- a real HTTPS cluster (the served simulator) --


async def test_kubeconfig_of_a_served_simulator(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kopf_sim.http.app import build_app
    from kopf_sim.store.cluster import Cluster
    from kopf_sim.transports.serving import ServedApp

    async with ServedApp(build_app(Cluster()), tls=True, token="t") as served:
        path = tmp_path / "sim-kubeconfig"
        served.write_kubeconfig(path)
        monkeypatch.setenv("KUBECONFIG", str(path))

        info = login_with_kubeconfig()
        assert info is not None
        assert info.server == served.url
        assert info.server.startswith("https://127.0.0.1:")
        assert info.ca_data is not None and info.token == "t"

        context = ssl.create_default_context(cadata=info.ca_data.decode("ascii"))
        headers = {"Authorization": f"{info.scheme} {info.token}"}
        async with aiohttp.ClientSession() as session:
            async with session.get(f"{info.server}/api/v1/namespaces", headers=headers, ssl=context) as resp:
                assert resp.status == 200
                data = await resp.json()
            async with session.get(f"{info.server}/api/v1/namespaces", ssl=context) as resp:
                assert resp.status == 401
    assert data["kind"] == "NamespaceList"


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
