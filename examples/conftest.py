"""
Shared by the examples' tests: ``kopf run`` as a process of its own, against the test's cluster.

What it fakes: nothing; the cluster is the plugin's ``kopf_cluster`` (simulated, or real with --kopf-real),
and the operator is the real ``kopf run`` in a subprocess, with a kubeconfig of that cluster.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import signal
import socket
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest


@dataclasses.dataclass
class OperatorProcess:
    """A running ``kopf run``: its output so far, and its liveness endpoint (if asked for)."""

    process: asyncio.subprocess.Process
    liveness_url: str | None
    lines: list[str] = dataclasses.field(default_factory=list)

    @property
    def output(self) -> str:
        return "".join(self.lines)

    async def read_until(self, text: str, timeout: float = 30) -> None:
        """Read the output lines until one of them contains the text."""
        assert self.process.stdout is not None
        async with asyncio.timeout(timeout):
            while not any(text in line for line in self.lines):
                line = await self.process.stdout.readline()
                if not line:
                    raise AssertionError(f"The operator has exited before {text!r}:\n{self.output}")
                self.lines.append(line.decode())


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def kopf_run(kopf_cluster: Any) -> Callable[..., contextlib.AbstractAsyncContextManager[OperatorProcess]]:
    """Run ``kopf run --standalone -n <the test's namespace> FILE`` as a user would, with the cluster's kubeconfig.

    The test must be marked ``kopf_real_time`` (a process has a real clock). On exit, the operator is
    stopped with SIGINT (as with Ctrl+C) and must exit with 0.
    """

    @contextlib.asynccontextmanager
    async def run(path: Path, *, liveness: bool = False) -> AsyncIterator[OperatorProcess]:
        kubeconfig = await kopf_cluster.kubeconfig()  # in sim mode: the simulated cluster served on 127.0.0.1
        url = f"http://127.0.0.1:{_free_port()}/healthz" if liveness else None
        args = ["run", "--standalone", "-n", kopf_cluster.namespace, *(["--liveness", url] if url else []), str(path)]
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "kopf",
            *args,
            env={**os.environ, "KUBECONFIG": str(kubeconfig)},
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        operator = OperatorProcess(process, url)
        try:
            yield operator
        finally:
            if process.returncode is None:
                process.send_signal(signal.SIGINT)
            rest, _ = await asyncio.wait_for(process.communicate(), timeout=30)
            operator.lines.append(rest.decode())
        assert process.returncode == 0, operator.output

    return run
