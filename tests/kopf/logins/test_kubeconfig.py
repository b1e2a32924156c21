"""The login from the kubeconfig files: which files, which context, which credentials, which errors."""

import datetime
import os
import ssl
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from kopf._cogs.structs.credentials import ConnectionInfo, LoginError
from kopf._core.intents.logins.kubeconfiglogin import login_with_kubeconfig

from .helpers import CA_PEM, CERT_PEM, KEY_PEM, b64, logger, write_kubeconfig

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
