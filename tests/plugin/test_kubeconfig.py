"""The plugin's small kubeconfig reader (for --kopf-real) and writer (for subprocesses)."""
from __future__ import annotations

import base64
import dataclasses
import os
import ssl
from pathlib import Path
from typing import Any

import pytest
import yaml

from kopf_sim.certs import generate_self_signed
from pytest_kopf import kubeconfig
from pytest_kopf.errors import KopfConfigError

BUNDLE = generate_self_signed(["localhost"], ["127.0.0.1"])


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def write(path: Path, doc: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(doc))
    return path


def config(context: str, cluster: dict[str, Any], user: dict[str, Any], current: str | None = None,
           namespace: str | None = None) -> dict[str, Any]:
    ctx: dict[str, Any] = {"cluster": f"{context}-cluster", "user": f"{context}-user"}
    if namespace:
        ctx["namespace"] = namespace
    doc: dict[str, Any] = {
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": f"{context}-cluster", "cluster": cluster}],
        "users": [{"name": f"{context}-user", "user": user}],
        "contexts": [{"name": context, "context": ctx}],
    }
    if current:
        doc["current-context"] = current
    return doc


def test_token_and_inline_ca(tmp_path: Path) -> None:
    path = write(tmp_path / "config", config("one", {"server": "https://127.0.0.1:6443/",
                                                     "certificate-authority-data": b64(BUNDLE.ca_pem)},
                                             {"token": "abc"}, current="one", namespace="ns1"))
    loaded = kubeconfig.load([path])
    assert (loaded.server, loaded.context, loaded.namespace, loaded.token) == \
        ("https://127.0.0.1:6443", "one", "ns1", "abc")
    assert loaded.headers() == {"Authorization": "Bearer abc"}
    assert loaded.ca_pem == BUNDLE.ca_pem
    context = loaded.ssl_context()
    assert context is not None and context.verify_mode == ssl.CERT_REQUIRED


def test_files_relative_to_the_kubeconfig(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "ca.crt").write_bytes(BUNDLE.ca_pem)
    (tmp_path / "sub" / "client.crt").write_bytes(BUNDLE.cert_pem)
    (tmp_path / "sub" / "client.key").write_bytes(BUNDLE.key_pem)
    (tmp_path / "sub" / "token").write_text("from-file\n")
    path = write(tmp_path / "sub" / "config", config(
        "one", {"server": "https://127.0.0.1:6443", "certificate-authority": "ca.crt"},
        {"client-certificate": "client.crt", "client-key": "client.key", "tokenFile": "token"}, current="one"))
    loaded = kubeconfig.load([path])
    assert (loaded.ca_pem, loaded.client_cert_pem, loaded.client_key_pem, loaded.token) == \
        (BUNDLE.ca_pem, BUNDLE.cert_pem, BUNDLE.key_pem, "from-file")
    assert loaded.ssl_context() is not None  # the client certificate & key load


def test_basic_auth_insecure_and_plain_http(tmp_path: Path) -> None:
    path = write(tmp_path / "config", config("one", {"server": "https://h:1", "insecure-skip-tls-verify": True},
                                             {"username": "u", "password": "p"}, current="one"))
    loaded = kubeconfig.load([path])
    assert loaded.headers() == {"Authorization": f"Basic {b64(b'u:p')}"}
    context = loaded.ssl_context()
    assert context is not None and context.verify_mode == ssl.CERT_NONE and not context.check_hostname
    plain = dataclasses.replace(loaded, server="http://h:1")
    assert plain.ssl_context() is None


def test_merged_files_first_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = write(tmp_path / "a", config("one", {"server": "https://first"}, {"token": "t1"}))
    second_doc = config("one", {"server": "https://second"}, {"token": "t2"}, current="two")
    second_doc["contexts"].append({"name": "two", "context": {"cluster": "one-cluster", "user": "one-user"}})
    second = write(tmp_path / "b", second_doc)
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join([str(tmp_path / "absent"), str(first), str(second)]))
    loaded = kubeconfig.load()
    assert (loaded.context, loaded.server, loaded.token) == ("two", "https://first", "t1")
    assert kubeconfig.load(context="one").context == "one"
    assert loaded.paths == (str(first), str(second))


@pytest.mark.parametrize(("doc", "message"), [
    (config("one", {"server": "https://h"}, {"token": "t"}), "has no current context"),
    (config("one", {"server": "https://h"}, {"token": "t"}, current="two"), "has no context 'two' (known: one)"),
    (config("one", {}, {"token": "t"}, current="one"), "has no server"),
    (config("one", {"server": "https://h"}, {"exec": {"command": "aws"}}, current="one"), "exec/auth-provider"),
    (config("one", {"server": "https://h", "certificate-authority": "nope.crt"}, {}, current="one"),
     "Cannot read"),
    ({"contexts": [{"name": "x", "context": {"cluster": "c"}}], "current-context": "x"}, "unknown cluster 'c'"),
])
def test_errors(tmp_path: Path, doc: dict[str, Any], message: str) -> None:
    path = write(tmp_path / "config", doc)
    with pytest.raises(KopfConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        kubeconfig.load([path])


def test_not_yaml_and_not_found(tmp_path: Path) -> None:
    (tmp_path / "bad").write_text("{")
    with pytest.raises(KopfConfigError, match="not valid YAML"):
        kubeconfig.load([tmp_path / "bad"])
    with pytest.raises(KopfConfigError, match="No kubeconfig found"):
        kubeconfig.load([tmp_path / "absent"])


def test_write_and_read_back(tmp_path: Path) -> None:
    original = kubeconfig.KubeConfig(
        server="https://127.0.0.1:6443", context="ctx", namespace="ns0", ca_pem=BUNDLE.ca_pem, insecure=False,
        tls_server_name="api.local", token="tok", client_cert_pem=BUNDLE.cert_pem, client_key_pem=BUNDLE.key_pem)
    path = tmp_path / "written"
    kubeconfig.write(path, original, namespace="ns1")
    assert path.stat().st_mode & 0o777 == 0o600
    loaded = kubeconfig.load([path])
    assert loaded == dataclasses.replace(original, namespace="ns1", paths=(str(path),))
