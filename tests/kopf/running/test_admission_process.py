"""Admission over real HTTPS: ``kopf run`` with ``kopf.WebhookServer()`` and managed configurations,
against ``kopf-sim serve``, driven by kubectl — denials, mutations and warnings as kubectl prints them."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest

from .test_processes import CRD, KUBECTL, ROOT, Lines, kubectl, poll, stop

pytestmark = pytest.mark.kubectl

EXAMPLE = str(ROOT / "examples" / "02-admission" / "example.py")


def configurations(kubeconfig: str, kind: str) -> list[str]:
    items = json.loads(kubectl(kubeconfig, "get", kind, "-o", "json"))["items"]
    return [item["metadata"]["name"] for item in items]


def create(kubeconfig: str, name: str, spec: dict[str, str]) -> subprocess.CompletedProcess[str]:
    body = {
        "apiVersion": "kopf.dev/v1",
        "kind": "KopfExample",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }
    return subprocess.run(
        [KUBECTL, "--kubeconfig", kubeconfig, "create", "-f", "-"],
        input=json.dumps(body),
        capture_output=True,
        text=True,
        timeout=30,
    )


def test_admission_webhooks_of_kopf_run_against_kopf_sim_serve(tmp_path: pathlib.Path) -> None:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    kubeconfig = str(tmp_path / "kubeconfig")
    server = subprocess.Popen(
        [sys.executable, "-m", "kopf_sim", "serve", "--port", "0", "--kubeconfig", kubeconfig, "--load", CRD],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    assert server.stdout is not None
    log_path = tmp_path / "operator.log"
    try:
        Lines(server.stdout).wait_for("Kubeconfig:")
        with open(log_path, "w") as log:
            operator = subprocess.Popen(
                [sys.executable, "-m", "kopf", "run", "-A", "--standalone", EXAMPLE],
                stdout=log,
                stderr=subprocess.STDOUT,
                text=True,
                env={**env, "KUBECONFIG": kubeconfig},
            )
            try:
                poll(
                    lambda: (
                        configurations(kubeconfig, "validatingwebhookconfigurations")
                        and configurations(kubeconfig, "mutatingwebhookconfigurations")
                    )
                )

                denied = create(kubeconfig, "bad", {"field": "forbidden", "duration": "5m"})
                assert denied.returncode != 0
                assert (
                    'admission webhook "no-forbidden-fields.auto.kopf.dev" denied the request: '
                    "The field must not be 'forbidden'." in denied.stderr
                )

                created = create(kubeconfig, "good", {"field": "fine"})
                assert created.returncode == 0, created.stderr
                assert "Warning: No duration is given: 1m is assumed." in created.stderr
                obj = json.loads(kubectl(kubeconfig, "get", "kopfexample", "good", "-n", "default", "-o", "json"))
                assert obj["spec"] == {"field": "fine", "duration": "1m"}
            finally:
                returncode = stop(operator)
        assert returncode == 0, log_path.read_text()
        assert configurations(kubeconfig, "validatingwebhookconfigurations") == []
        assert configurations(kubeconfig, "mutatingwebhookconfigurations") == []
    finally:
        stop(server)
