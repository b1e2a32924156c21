"""
The acceptance: ``kopf run`` as a process, ``kopf run --sim``, and ``KopfRunner``, driven by kubectl.

These tests use real processes, sockets (loopback only) and time, so they poll with short timeouts.
"""

from __future__ import annotations

import json
import logging
import os
import pathlib
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import IO, Any

import pytest

import kopf
from kopf.testing import KopfRunner
from tests.serving import served_simulator

ROOT = pathlib.Path(__file__).parent.parent.parent.parent
CRD = str(ROOT / "examples" / "crd.yaml")
OBJECTS = str(ROOT / "examples" / "objects.yaml")
EXAMPLE = str(ROOT / "examples" / "01-minimal" / "example.py")
KUBECTL = shutil.which("kubectl") or "/usr/bin/kubectl"

pytestmark = pytest.mark.kubectl


class Lines:
    """The lines of a process's stream, read in a thread (so that waiting for them can time out)."""

    def __init__(self, stream: IO[str]) -> None:
        self.seen: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            self._queue.put(line.rstrip("\n"))
        self._queue.put(None)

    def wait_for(self, prefix: str, timeout: float = 30) -> str:
        deadline = time.monotonic() + timeout
        while True:
            for line in self.seen:
                if line.startswith(prefix):
                    return line
            try:
                line = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"No line starting with {prefix!r} in {timeout}s; seen: {self.seen}") from None
            if line is None:
                raise AssertionError(f"The stream has ended with no {prefix!r}; seen: {self.seen}")
            self.seen.append(line)


def kubectl(kubeconfig: str, *args: str) -> str:
    result = subprocess.run([KUBECTL, "--kubeconfig", kubeconfig, *args], capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    return result.stdout


def poll(fn: Callable[[], Any], timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = fn()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"Not met in {timeout}s: {fn}")
        time.sleep(0.2)


NOT_INTERESTED = "Something has changed, but we are not interested (the essence is the same)."


class LogLines(logging.Handler):
    """The messages logged while the operator runs (KopfRunner's output is there only after it exits)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def message_of(kubeconfig: str, name: str = "kopf-example-1") -> str | None:
    obj = json.loads(kubectl(kubeconfig, "get", "kopfexample", name, "-n", "default", "-o", "json"))
    return ((obj.get("status") or {}).get("create_fn") or {}).get("message")


def stop(proc: subprocess.Popen[str], sig: int = signal.SIGINT, timeout: float = 30) -> int:
    if proc.poll() is None:
        proc.send_signal(sig)
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise


@pytest.fixture
def env() -> dict[str, str]:
    return {**os.environ, "PYTHONUNBUFFERED": "1"}


@pytest.fixture
def served(tmp_path: pathlib.Path, env: dict[str, str]) -> Iterator[str]:
    """A simulated cluster served by ``kopf-sim serve`` (a process) with the CRD; yields its kubeconfig."""
    with served_simulator(tmp_path / "kubeconfig", "--load", CRD, env=env) as served:
        yield str(served.kubeconfig)


def test_kopf_run_process_against_a_served_sim(served: str, env: dict[str, str], tmp_path: pathlib.Path) -> None:
    log = open(tmp_path / "operator.log", "w+")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        [sys.executable, "-m", "kopf", "run", "-A", "--standalone", "--verbose", EXAMPLE],
        stdout=log,
        stderr=subprocess.STDOUT,
        text=True,
        env={**env, "KUBECONFIG": served},
    )
    try:
        kubectl(served, "create", "-f", OBJECTS)
        assert poll(lambda: message_of(served)) == "hello, kopf-example-1"
        events = json.loads(kubectl(served, "get", "events", "-n", "default", "-o", "json"))["items"]
        assert any("And here we are!" in event["message"] for event in events)
    finally:
        returncode = stop(proc)
        log.seek(0)
        output = log.read()
        log.close()
    assert returncode == 0, output
    assert "And here we are!" in output
    assert "Signal SIGINT is received" in output


def test_kopf_run_process_stops_on_sigterm(served: str, env: dict[str, str]) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "kopf", "run", "-A", "--standalone", EXAMPLE],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**env, "KUBECONFIG": served},
    )
    try:
        kubectl(served, "create", "-f", OBJECTS)
        poll(lambda: message_of(served))
    finally:
        returncode = stop(proc, signal.SIGTERM)
    assert proc.stdout is not None
    output = proc.stdout.read()
    proc.stdout.close()
    assert returncode == 0, output
    assert "Signal SIGTERM is received" in output


def test_kopf_run_with_the_embedded_sim(env: dict[str, str]) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "kopf", "run", "--sim", CRD, EXAMPLE],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    try:
        lines = Lines(proc.stdout)
        url = lines.wait_for("Simulated cluster: ").split(": ", 1)[1]
        kubeconfig = lines.wait_for("Kubeconfig: ").split(": ", 1)[1]
        assert url.startswith("http://127.0.0.1:")
        assert os.path.exists(kubeconfig)
        kubectl(kubeconfig, "create", "-f", OBJECTS)
        assert poll(lambda: message_of(kubeconfig)) == "hello, kopf-example-1"
        table = kubectl(kubeconfig, "get", "kopfexamples", "-A")
        assert "hello, kopf-example-1" in table
    finally:
        returncode = stop(proc)
    proc.stdout.close()
    assert returncode == 0
    assert not os.path.exists(kubeconfig)


def test_kopf_run_sim_with_handlers_that_load_the_kubeconfig(env: dict[str, str], tmp_path: pathlib.Path) -> None:
    operator = tmp_path / "operator.py"
    operator.write_text(
        "import kopf\n"
        "import kubernetes  # imported with the operator: it reads $KUBECONFIG as its default path now\n"
        "\n"
        "@kopf.on.create('kopfexamples')\n"
        "def create_fn(name, namespace, **_):\n"
        "    kubernetes.config.load_kube_config()\n"
        "    core = kubernetes.client.CoreV1Api()\n"
        "    core.create_namespaced_config_map(namespace, {'metadata': {'name': f'{name}-child'}})\n"
        "    return 'made'\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "kopf", "run", "--sim", CRD, str(operator)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={key: value for key, value in env.items() if key != "KUBECONFIG"},
    )
    assert proc.stdout is not None
    try:
        lines = Lines(proc.stdout)
        kubeconfig = lines.wait_for("Kubeconfig: ").split(": ", 1)[1]
        kubectl(kubeconfig, "create", "-f", OBJECTS)
        assert poll(lambda: "kopf-example-1-child" in kubectl(kubeconfig, "get", "configmaps", "-o", "name"))
    finally:
        returncode = stop(proc)
    proc.stdout.close()
    assert returncode == 0


def test_kopf_run_process_imports_the_sibling_modules_of_its_file(env: dict[str, str], tmp_path: pathlib.Path) -> None:
    directory = tmp_path / "operator"
    directory.mkdir()
    (directory / "naming.py").write_text("def child_name(name):\n    return f'{name}-from-a-sibling'\n")
    (directory / "operator.py").write_text(
        "import kopf\n"
        "from naming import child_name\n"
        "\n"
        "@kopf.on.create('kopfexamples')\n"
        "def create_fn(name, **_):\n"
        "    return child_name(name)\n"
    )
    (tmp_path / "elsewhere").mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-m", "kopf", "run", "--sim", CRD, str(directory / "operator.py")],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
        cwd=tmp_path / "elsewhere",  # neither the file's directory nor the project's
    )
    assert proc.stdout is not None
    try:
        lines = Lines(proc.stdout)
        kubeconfig = lines.wait_for("Kubeconfig: ").split(": ", 1)[1]
        kubectl(kubeconfig, "create", "-f", OBJECTS)

        def result() -> Any:
            obj = json.loads(kubectl(kubeconfig, "get", "kopfexample", "kopf-example-1", "-n", "default", "-o", "json"))
            return (obj.get("status") or {}).get("create_fn")

        assert poll(result) == "kopf-example-1-from-a-sibling"
    finally:
        returncode = stop(proc)
    proc.stdout.close()
    assert returncode == 0


def test_kopf_runner_against_a_served_sim(served: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECONFIG", served)
    registry = kopf.OperatorRegistry()
    seen = LogLines()
    logging.getLogger("kopf").addHandler(seen)
    try:
        with KopfRunner(["run", "-A", "--standalone", "--verbose", EXAMPLE], registry=registry, timeout=30) as runner:
            kubectl(served, "create", "-f", OBJECTS)
            assert poll(lambda: message_of(served)) == "hello, kopf-example-1"
            # The operator sees its own patch after the status shows it: a deletion before that would be
            # merged with it (one batch, the latest state), and the line below never logged.
            poll(lambda: NOT_INTERESTED in seen.lines)
            kubectl(served, "delete", "-f", OBJECTS)
    finally:
        logging.getLogger("kopf").removeHandler(seen)
    assert runner.exit_code == 0
    assert runner.exception is None
    assert "And here we are!" in runner.stdout
    assert "Stop-flag is set to True. Operator is stopping." in runner.output
    assert [handler.id for handler in registry.changing] == ["create_fn"]
    # The lines that the operators' tests written for the published framework wait for:
    assert "Handler 'create_fn' is invoked." in runner.output
    assert "Handler 'create_fn' succeeded." in runner.output
    assert NOT_INTERESTED in runner.output
    assert "Root tasks are stopped: finishing normally; tasks left: set()" in runner.output
    assert "Hung tasks stopping is skipped: no tasks given." in runner.output


def test_kopf_runner_lets_freeze_and_resume_finish(
    served: str, monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path
) -> None:
    # As in the published framework: exiting the block waits for the command, it does not stop it.
    monkeypatch.setenv("KUBECONFIG", served)
    kubectl(served, "apply", "-f", str(ROOT / "peering.yaml"))
    (tmp_path / "peering.yaml").write_text(
        "apiVersion: kopf.dev/v1\nkind: ClusterKopfPeering\nmetadata: {name: default}\n"
    )
    kubectl(served, "apply", "-f", str(tmp_path / "peering.yaml"))

    def peers() -> dict[str, Any]:
        return json.loads(kubectl(served, "get", "clusterkopfpeering", "default", "-o", "json")).get("status") or {}

    with KopfRunner(
        ["freeze", "-A", "-t", "600", "-P", "default", "-p", "100", "-i", "maintenance"], timeout=30
    ) as runner:
        pass
    assert runner.exit_code == 0
    assert peers()["maintenance"]["priority"] == 100
    with KopfRunner(["resume", "-A", "-P", "default", "-i", "maintenance"], timeout=30) as runner:
        pass
    assert runner.exit_code == 0
    assert "maintenance" not in peers()


def test_kopf_runner_reraises_a_usage_error_as_the_exit() -> None:
    with pytest.raises(SystemExit) as e, KopfRunner(["run", "--no-such-option"], timeout=30):
        pass
    assert e.value.code == 2


def test_kopf_runner_reraises_the_operator_errors(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "failing.py"
    path.write_text(
        "import kopf\n\n@kopf.on.startup(errors=kopf.ErrorsMode.PERMANENT)\n"
        "def startup_fn(**_):\n    raise ValueError('no start')\n"
    )
    with (
        pytest.raises(Exception, match="no start"),
        KopfRunner(["run", "-A", "--standalone", str(path)], registry=kopf.OperatorRegistry(), timeout=30),
    ):
        pass

    with KopfRunner(
        ["run", "-A", "--standalone", str(path)], registry=kopf.OperatorRegistry(), reraise=False, timeout=30
    ) as runner:
        pass
    assert runner.exit_code != 0
    assert "no start" in str(runner.exception)
