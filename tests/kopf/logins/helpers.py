"""What the login tests share: the credentials' data, and kubeconfig & exec-plugin writers."""

import base64
import logging
import sys
import textwrap
from pathlib import Path
from typing import Any

import yaml

logger = logging.getLogger("test-login")

CA_PEM = b"-----BEGIN CERTIFICATE-----\nQ0EgZGF0YQ==\n-----END CERTIFICATE-----\n"
CERT_PEM = b"-----BEGIN CERTIFICATE-----\nY2VydCBkYXRh\n-----END CERTIFICATE-----\n"
KEY_PEM = b"-----BEGIN PRIVATE KEY-----\na2V5IGRhdGE=\n-----END PRIVATE KEY-----\n"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


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
