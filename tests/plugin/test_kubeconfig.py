"""The kubeconfig context of --kopf-real: kopf's own login read with the plugin's wording, and written back."""

from __future__ import annotations

import base64
import os
import ssl
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from kopf_sim.transports.certs import generate_self_signed
from pytest_kopf import _kubeconfig as kubeconfig
from pytest_kopf.errors import KopfConfigError

BUNDLE = generate_self_signed(["localhost"], ["127.0.0.1"])


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def write(path: Path, doc: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(doc))
    return path


def config(
    context: str,
    cluster: dict[str, Any],
    user: dict[str, Any],
    current: str | None = None,
    namespace: str | None = None,
) -> dict[str, Any]:
    ctx: dict[str, Any] = {"cluster": f"{context}-cluster", "user": f"{context}-user"}
    if namespace:
        ctx["namespace"] = namespace
    doc: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": f"{context}-cluster", "cluster": cluster}],
        "users": [{"name": f"{context}-user", "user": user}],
        "contexts": [{"name": context, "context": ctx}],
    }
    if current:
        doc["current-context"] = current
    return doc


def test_token_and_inline_ca(tmp_path: Path) -> None:
    path = write(
        tmp_path / "config",
        config(
            "one",
            {"server": "https://127.0.0.1:6443/", "certificate-authority-data": b64(BUNDLE.ca_pem)},
            {"token": "abc"},
            current="one",
            namespace="ns1",
        ),
    )
    login = kubeconfig.load([path])
    info = login.info
    assert (info.server, login.context, info.default_namespace, info.token) == (
        "https://127.0.0.1:6443/",
        "one",
        "ns1",
        "abc",
    )
    assert info.as_http_headers() == {"Authorization": "Bearer abc"}
    assert info.ca_data == BUNDLE.ca_pem
    assert info.as_ssl_context().verify_mode == ssl.CERT_REQUIRED


def test_files_relative_to_the_kubeconfig(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "ca.crt").write_bytes(BUNDLE.ca_pem)
    (tmp_path / "sub" / "client.crt").write_bytes(BUNDLE.cert_pem)
    (tmp_path / "sub" / "client.key").write_bytes(BUNDLE.key_pem)
    (tmp_path / "sub" / "token").write_text("from-file\n")
    path = write(
        tmp_path / "sub" / "config",
        config(
            "one",
            {"server": "https://127.0.0.1:6443", "certificate-authority": "ca.crt"},
            {"client-certificate": "client.crt", "client-key": "client.key", "tokenFile": "token"},
            current="one",
        ),
    )
    info = kubeconfig.load([path]).info
    assert (info.ca_path, info.certificate_path, info.private_key_path, info.token) == (
        str(tmp_path / "sub" / "ca.crt"),
        str(tmp_path / "sub" / "client.crt"),
        str(tmp_path / "sub" / "client.key"),
        "from-file",
    )
    assert info.as_ssl_context() is not None  # the client certificate & key load


def test_basic_auth_and_insecure(tmp_path: Path) -> None:
    path = write(
        tmp_path / "config",
        config(
            "one",
            {"server": "https://h:1", "insecure-skip-tls-verify": True},
            {"username": "u", "password": "p"},
            current="one",
        ),
    )
    info = kubeconfig.load([path]).info
    assert info.as_http_headers() == {"Authorization": f"Basic {b64(b'u:p')}"}
    context = info.as_ssl_context()
    assert context.verify_mode == ssl.CERT_NONE and not context.check_hostname


def test_merged_files_first_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = write(tmp_path / "a", config("one", {"server": "https://first"}, {"token": "t1"}))
    second_doc = config("one", {"server": "https://second"}, {"token": "t2"}, current="two")
    second_doc["contexts"].append({"name": "two", "context": {"cluster": "one-cluster", "user": "one-user"}})
    second = write(tmp_path / "b", second_doc)
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join([str(tmp_path / "absent"), str(first), str(second)]))
    login = kubeconfig.load()
    assert (login.context, login.info.server, login.info.token) == ("two", "https://first", "t1")
    assert kubeconfig.load(context="one").context == "one"
    assert login.paths == (str(first), str(second))


EXEC_PLUGIN = textwrap.dedent("""
    import json, sys
    print(json.dumps({"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
                      "status": {"token": "from-" + sys.argv[1]}}))
""")


def test_exec_plugins_run(tmp_path: Path) -> None:
    (tmp_path / "plugin.py").write_text(EXEC_PLUGIN)
    exec_spec = {
        "apiVersion": "client.authentication.k8s.io/v1",
        "command": sys.executable,
        "args": [str(tmp_path / "plugin.py"), "exec"],
        "interactiveMode": "Never",
    }
    path = write(tmp_path / "config", config("one", {"server": "https://h"}, {"exec": exec_spec}, current="one"))
    assert kubeconfig.load([path]).info.token == "from-exec"


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        (config("one", {"server": "https://h"}, {"token": "t"}), "no current context"),
        (
            config("one", {"server": "https://h"}, {"token": "t"}, current="two"),
            "current context 'two' is not defined (known: one)",
        ),
        (config("one", {}, {"token": "t"}, current="one"), "has no server"),
        (
            config("one", {"server": "https://h", "certificate-authority": "nope.crt"}, {}, current="one"),
            "TLS settings of the kubeconfig context 'one' are unusable",
        ),
        ({"contexts": [{"name": "x", "context": {"cluster": "c"}}], "current-context": "x"}, "cluster 'c'"),
    ],
)
def test_errors(tmp_path: Path, doc: dict[str, Any], message: str) -> None:
    path = write(tmp_path / "config", doc)
    with pytest.raises(KopfConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        kubeconfig.load([path])


def test_a_named_context_that_is_not_there(tmp_path: Path) -> None:
    path = write(tmp_path / "config", config("one", {"server": "https://h"}, {"token": "t"}, current="one"))
    with pytest.raises(KopfConfigError, match=r"context 'two' is not defined .*; use --kopf-context NAME"):
        kubeconfig.load([path], context="two")


def test_not_yaml_and_not_found(tmp_path: Path) -> None:
    (tmp_path / "bad").write_text("{")
    with pytest.raises(KopfConfigError, match="Cannot read the kubeconfig"):
        kubeconfig.load([tmp_path / "bad"])
    with pytest.raises(KopfConfigError, match="No kubeconfig found"):
        kubeconfig.load([tmp_path / "absent"])


def test_write_and_read_back(tmp_path: Path) -> None:
    (tmp_path / "ca.crt").write_bytes(BUNDLE.ca_pem)
    original = write(
        tmp_path / "original",
        config(
            "ctx",
            {"server": "https://127.0.0.1:6443", "certificate-authority": str(tmp_path / "ca.crt")},
            {"token": "tok", "client-certificate-data": b64(BUNDLE.cert_pem), "client-key-data": b64(BUNDLE.key_pem)},
            current="ctx",
            namespace="ns0",
        ),
    )
    path = tmp_path / "written"
    kubeconfig.write(path, kubeconfig.load([original]), namespace="ns1")
    assert path.stat().st_mode & 0o777 == 0o600
    login = kubeconfig.load([path])
    assert (login.context, login.paths) == ("ctx", (str(path),))
    info = login.info
    assert (info.server, info.default_namespace, info.token) == ("https://127.0.0.1:6443", "ns1", "tok")
    assert (info.ca_data, info.certificate_data, info.private_key_data) == (
        BUNDLE.ca_pem,
        BUNDLE.cert_pem,
        BUNDLE.key_pem,
    )
