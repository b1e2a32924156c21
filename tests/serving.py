"""``kopf-sim serve`` in a process of its own, for the tests that need a cluster over real HTTP (kubectl, processes).

On 127.0.0.1 with a free port; its output goes to a file (a chatty server never blocks on a full pipe); it is
ready once it has announced its URL; at the end it is stopped with SIGTERM and must exit cleanly.
"""

from __future__ import annotations

import contextlib
import dataclasses
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

ANNOUNCEMENT = "Serving a simulated Kubernetes API at "


@dataclasses.dataclass(frozen=True)
class Served:
    """A running ``kopf-sim serve``: its URL, the kubeconfig it wrote, and its log so far."""

    url: str
    kubeconfig: Path
    log_path: Path
    process: subprocess.Popen[bytes]

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


@contextlib.contextmanager
def served_simulator(
    kubeconfig: Path,
    *options: str,
    env: Mapping[str, str] | None = None,
    timeout: float = 60,
) -> Iterator[Served]:
    """Serve a simulated cluster until the end of the block; ``options`` go to ``kopf-sim serve`` as they are."""
    log_path = kubeconfig.with_name(f"{kubeconfig.name}.server.log")
    command = [sys.executable, "-m", "kopf_sim", "serve", "--host", "127.0.0.1", "--port", "0"]
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [*command, "--kubeconfig", str(kubeconfig), *options],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=None if env is None else dict(env),
        )
    try:
        url = _announced_url(process, log_path, kubeconfig, timeout=timeout)
        yield Served(url=url, kubeconfig=kubeconfig, log_path=log_path, process=process)
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    assert process.returncode == 0, log_path.read_text(errors="replace")


def _announced_url(process: subprocess.Popen[bytes], log_path: Path, kubeconfig: Path, *, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while True:
        text = log_path.read_text(errors="replace")
        for line in text.splitlines():
            if line.startswith(ANNOUNCEMENT) and kubeconfig.exists() and kubeconfig.stat().st_size:
                return line[len(ANNOUNCEMENT) :].split()[0]
        assert process.poll() is None, f"kopf-sim serve has exited:\n{text}"
        assert time.monotonic() < deadline, f"kopf-sim serve has not started in {timeout} s:\n{text}"
        time.sleep(0.05)
