"""The kubeconfig's ``exec`` credential plugins: run with no terminal, their ``ExecCredential`` parsed."""

import base64
import dataclasses
import datetime
import json
import os
import subprocess
from collections.abc import Mapping, Sequence
from typing import Any

from kopf._cogs.helpers import loggers
from kopf._cogs.structs.credentials import LoginError
from kopf._core.intents.logins.kubeconfigs import KubeconfigEntry, parse_timestamp

__all__ = ["EXEC_API_VERSIONS", "EXEC_TIMEOUT", "ExecResult", "run_exec_plugin"]

#: How long an ``exec`` credential plugin may run (seconds) before the login fails.
EXEC_TIMEOUT = 60.0

EXEC_API_VERSIONS = frozenset(
    {
        "client.authentication.k8s.io/v1",
        "client.authentication.k8s.io/v1beta1",
        "client.authentication.k8s.io/v1alpha1",
    }
)


@dataclasses.dataclass(frozen=True)
class ExecResult:
    """What a plugin returned: a token, or a client certificate with its key, or both."""

    token: str | None
    certificate_data: bytes | None
    private_key_data: bytes | None
    expiration: datetime.datetime | None


def run_exec_plugin(spec: Mapping[str, Any], *, cluster: KubeconfigEntry, base_dir: str) -> ExecResult:
    """
    Run an ``exec`` credential plugin and parse the ``ExecCredential`` from its stdout.

    The plugin never gets a terminal (operators are not interactive), so the plugins
    that always require one (``interactiveMode: Always``) fail the login.
    """
    api_version = spec.get("apiVersion")
    if api_version not in EXEC_API_VERSIONS:
        raise LoginError(f"The exec plugin's apiVersion is not supported: {api_version!r}")
    command = _exec_command(spec, base_dir=base_dir)
    args = [str(arg) for arg in spec.get("args") or []]
    env = _exec_env(spec, api_version=api_version, cluster=cluster)
    stdout = _exec_stdout(spec, command=command, args=args, env=env)
    return _parse_exec_credential(stdout, command=command, api_version=api_version)


def _exec_command(spec: Mapping[str, Any], *, base_dir: str) -> str:
    """The plugin's executable: a path with separators is relative to the kubeconfig; a bare name is in $PATH."""
    command = spec.get("command")
    if not command:
        raise LoginError("The exec plugin has no command.")
    if spec.get("interactiveMode") == "Always":
        raise LoginError("The exec plugin requires an interactive terminal, which operators do not have.")
    command = os.path.expanduser(str(command))
    if os.sep in command or (os.altsep and os.altsep in command):
        command = command if os.path.isabs(command) else os.path.join(base_dir, command)
    return command


def _exec_env(spec: Mapping[str, Any], *, api_version: str, cluster: KubeconfigEntry) -> dict[str, str]:
    """The plugin's environment: ours, the spec's variables, and the request as ``KUBERNETES_EXEC_INFO``."""
    env = dict(os.environ)
    for item in spec.get("env") or []:
        if isinstance(item, Mapping) and item.get("name"):
            env[str(item["name"])] = str(item.get("value") or "")
    exec_info: dict[str, Any] = {
        "apiVersion": api_version,
        "kind": "ExecCredential",
        "spec": {"interactive": False},
    }
    if spec.get("provideClusterInfo"):
        exec_info["spec"]["cluster"] = _exec_cluster_info(cluster)
    env["KUBERNETES_EXEC_INFO"] = json.dumps(exec_info)
    return env


def _exec_stdout(spec: Mapping[str, Any], *, command: str, args: Sequence[str], env: Mapping[str, str]) -> bytes:
    """Run the plugin with no terminal and a time limit; its stdout, or a login error worded for the user."""
    try:
        completed = subprocess.run(
            [command, *args],
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=EXEC_TIMEOUT,
            check=False,
        )
    except FileNotFoundError as e:
        hint = spec.get("installHint")
        raise LoginError(f"The exec plugin {command!r} is not found." + (f" {hint}" if hint else "")) from e
    except subprocess.TimeoutExpired as e:
        raise LoginError(f"The exec plugin {command!r} did not finish in {EXEC_TIMEOUT}s.") from e
    except OSError as e:
        raise LoginError(f"The exec plugin {command!r} cannot be executed: {e}") from e

    if completed.returncode != 0:
        stderr = loggers.redact(completed.stderr.decode("utf-8", errors="replace").strip())[-1000:]
        raise LoginError(f"The exec plugin {command!r} failed with exit code {completed.returncode}: {stderr}")
    stdout: bytes = completed.stdout
    return stdout


def _parse_exec_credential(stdout: bytes, *, command: str, api_version: str) -> ExecResult:
    """The token or the client certificate (and the expiration) from the plugin's ``ExecCredential``."""
    try:
        credential = json.loads(stdout)
    except ValueError as e:
        raise LoginError(f"The exec plugin {command!r} returned no valid JSON.") from e
    if not isinstance(credential, Mapping) or credential.get("kind") != "ExecCredential":
        raise LoginError(f"The exec plugin {command!r} returned no ExecCredential.")
    if credential.get("apiVersion") != api_version:
        raise LoginError(
            f"The exec plugin {command!r} returned apiVersion {credential.get('apiVersion')!r}, "
            f"while {api_version!r} was requested."
        )
    status = credential.get("status") or {}
    if not isinstance(status, Mapping):
        raise LoginError(f"The exec plugin {command!r} returned a malformed status.")
    return _exec_result(status, command=command)


def _exec_result(status: Mapping[str, Any], *, command: str) -> ExecResult:
    """The credentials in the ``ExecCredential``'s status: a token, or a certificate with its key, or both."""
    token = status.get("token") or None
    cert = status.get("clientCertificateData") or None
    key = status.get("clientKeyData") or None
    if bool(cert) != bool(key):
        raise LoginError(f"The exec plugin {command!r} returned a client certificate without a key or vice versa.")
    if not token and not cert:
        raise LoginError(f"The exec plugin {command!r} returned neither a token nor a client certificate.")

    expiration: datetime.datetime | None = None
    if status.get("expirationTimestamp"):
        try:
            expiration = parse_timestamp(str(status["expirationTimestamp"]))
        except ValueError as e:
            raise LoginError(f"The exec plugin {command!r} returned a malformed expirationTimestamp.") from e

    return ExecResult(
        token=str(token) if token else None,
        certificate_data=str(cert).encode("utf-8") if cert else None,
        private_key_data=str(key).encode("utf-8") if key else None,
        expiration=expiration,
    )


def _exec_cluster_info(cluster: KubeconfigEntry) -> dict[str, Any]:
    """The cluster as the ExecCredential's ``spec.cluster`` describes it (for ``provideClusterInfo``)."""
    info: dict[str, Any] = {"server": cluster.data.get("server")}
    ca_data = cluster.data.get("certificate-authority-data")
    ca_path = cluster.path("certificate-authority")
    if not ca_data and ca_path and os.path.isfile(ca_path):
        with open(ca_path, "rb") as f:
            ca_data = base64.b64encode(f.read()).decode("ascii")
    if ca_data:
        info["certificate-authority-data"] = ca_data
    for key in ("insecure-skip-tls-verify", "tls-server-name", "proxy-url", "disable-compression"):
        if cluster.data.get(key) is not None:
            info[key] = cluster.data[key]
    extensions = cluster.data.get("extensions") or []
    for extension in extensions if isinstance(extensions, list) else []:
        if isinstance(extension, Mapping) and extension.get("name") == "client.authentication.k8s.io/exec":
            info["config"] = extension.get("extension")
    return info
