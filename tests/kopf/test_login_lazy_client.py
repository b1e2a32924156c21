"""
The logins via the client libraries do not import them unless needed (a fresh interpreter each).

The library's default configuration is still set: when the operator's code imports the library later.
"""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import yaml

SCRIPT = textwrap.dedent(
    """
    import json, logging, sys
    import kopf
    from kopf._core.intents import clientdefaults

    pykube_info = kopf.login_via_pykube(logger=logging.getLogger("test"))
    info = kopf.login_via_client(logger=logging.getLogger("test"))
    imported_by_login = "kubernetes" in sys.modules
    pykube_imported = "pykube" in sys.modules
    pending = clientdefaults.pending()
    import importlib.util
    assert importlib.util.find_spec("kubernetes") is not None  # looking does not consume the hook
    assert "kubernetes" not in sys.modules or not pending
    from kubernetes import client as _
    import kubernetes.client
    default = kubernetes.client.Configuration.get_default_copy()
    default_auth = default.get_api_key_with_prefix("authorization") or default.api_key
    print(json.dumps({
        "server": info.server, "token": info.token, "scheme": info.scheme,
        "namespace": info.default_namespace,
        "imported_by_login": imported_by_login, "pykube_imported": pykube_imported,
        "pykube": [pykube_info.server, pykube_info.token, pykube_info.default_namespace],
        "pending": pending, "pending_after": clientdefaults.pending(),
        "default_host": default.host, "default_auth": str(default_auth),
    }))
    """
)


def run_login(tmp_path: Path, user: dict[str, object]) -> dict[str, object]:
    path = tmp_path / "kubeconfig"
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "ctx",
        "clusters": [{"name": "cls", "cluster": {"server": "https://lazy-host:6443"}}],
        "users": [{"name": "usr", "user": user}],
        "contexts": [{"name": "ctx", "context": {"cluster": "cls", "user": "usr", "namespace": "lazy-ns"}}],
    }
    path.write_text(yaml.safe_dump(config))
    env = {"KUBECONFIG": str(path), "HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    completed = subprocess.run(
        [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert completed.returncode == 0, completed.stderr
    result: dict[str, object] = json.loads(completed.stdout.strip().splitlines()[-1])
    return result


def test_plain_kubeconfig_is_read_without_the_client_and_becomes_its_default_on_import(tmp_path: Path) -> None:
    result = run_login(tmp_path, {"token": "lazy-token"})
    assert result["imported_by_login"] is False
    assert result["pykube_imported"] is False
    assert result["pykube"] == ["https://lazy-host:6443", "lazy-token", "lazy-ns"]
    assert result["pending"] is True
    assert result["pending_after"] is False
    assert (result["server"], result["scheme"], result["token"]) == ("https://lazy-host:6443", "Bearer", "lazy-token")
    assert result["namespace"] == "lazy-ns"
    assert result["default_host"] == "https://lazy-host:6443"  # what a handler's bare CoreV1Api() uses
    assert "lazy-token" in str(result["default_auth"])


def test_auth_provider_is_left_to_the_client_library(tmp_path: Path) -> None:
    provider = {"name": "oidc", "config": {"id-token": "oidc-token", "client-id": "x", "idp-issuer-url": "https://x"}}
    result = run_login(tmp_path, {"auth-provider": provider})
    assert result["imported_by_login"] is True
    assert result["pykube_imported"] is True
    assert result["pending"] is False
    assert result["server"] == "https://lazy-host:6443"
    assert result["default_host"] == "https://lazy-host:6443"
