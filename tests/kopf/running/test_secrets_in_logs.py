"""Secrets stay secret: a full operator run at ``--debug`` over HTTPS with a bearer token never logs the token."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

from .test_processes import CRD, EXAMPLE, OBJECTS, Lines, kubectl, message_of, poll, stop

pytestmark = pytest.mark.kubectl

TOKEN = "s3cr3t-t0ken-that-must-never-be-logged"


def test_debug_log_of_a_full_run_has_no_token(tmp_path: pathlib.Path) -> None:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    kubeconfig = str(tmp_path / "kubeconfig")
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kopf_sim",
            "serve",
            "--port",
            "0",
            "--tls",
            "--token",
            TOKEN,
            "--kubeconfig",
            kubeconfig,
            "--load",
            CRD,
        ],
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
                [sys.executable, "-m", "kopf", "run", "-A", "--standalone", "--debug", "--log-format=full", EXAMPLE],
                stdout=log,
                stderr=subprocess.STDOUT,
                text=True,
                env={**env, "KUBECONFIG": kubeconfig},
            )
            try:
                kubectl(kubeconfig, "create", "-f", OBJECTS)
                assert poll(lambda: message_of(kubeconfig)) == "hello, kopf-example-1"
                kubectl(kubeconfig, "delete", "-f", OBJECTS)
            finally:
                returncode = stop(operator)
    finally:
        stop(server)
    output = log_path.read_text()
    assert returncode == 0, output
    assert "And here we are!" in output  # the run really happened and was logged at length
    assert "DEBUG" in output
    assert TOKEN not in output
    assert TOKEN[:12] not in output
    assert "Bearer s3" not in output
