"""Record and replay, end to end: a live run against a served simulator, recorded by ``kopf-sim record``,
replayed into the same operator under test in virtual time, calls the same handlers in the same order.

The live run is real: a served simulator (127.0.0.1, HTTPS, a token), the operator as ``kopf run``,
the recorder as ``kopf-sim record``, the changes made by kubectl, each after the operator has
handled the previous one (as people would make them, seconds apart, not all in one instant).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kopf_sim.recording.replaying import read_log

from .conftest import BASE, NO_ASYNCIO, ServedCluster

pytestmark = pytest.mark.kubectl

KUBECTL = shutil.which("kubectl") or "/usr/bin/kubectl"
BIN = Path(sys.executable).parent
CRD = Path(__file__).resolve().parents[2] / "examples" / "crd.yaml"

OPERATOR = textwrap.dedent("""
    import json, os
    import kopf

    def note(*call):
        with open(os.environ["KOPF_TEST_CALLS"], "a", encoding="utf-8") as calls:
            calls.write(json.dumps(call) + "\\n")

    @kopf.on.create("kopfexamples")
    def created(name, spec, **_):
        note("create", name, spec.get("field"))

    @kopf.on.update("kopfexamples")
    def updated(name, old, new, **_):
        note("update", name, old["spec"].get("field"), new["spec"].get("field"))

    @kopf.on.field("kopfexamples", field="metadata.labels.tier")
    def retiered(name, old, new, **_):
        note("tier", name, old, new)

    @kopf.on.delete("kopfexamples")
    def deleted(name, spec, **_):
        note("delete", name, spec.get("field"))
""")

REPLAY_TEST = textwrap.dedent("""
    import asyncio, os

    async def test_replayed(kopf_cluster, kopf_operator):
        await kopf_cluster.apply(os.environ["KOPF_TEST_CRD"])
        await kopf_operator.start(paths=[os.environ["KOPF_TEST_OPERATOR"]])
        replay = await kopf_cluster.replay(os.environ["KOPF_TEST_LOG"])   # at the recorded pace, in virtual time
        await asyncio.sleep(60)                                           # whatever the last change causes
        await kopf_operator.stop()
        assert kopf_operator.exception is None
        assert [step.action for step in replay.steps if step.resource.plural == "kopfexamples"].count("create") == 2
        assert await kopf_cluster.list("kopfexamples") == []
""")


def example(name: str, field: str, **labels: str) -> str:
    return json.dumps(
        {
            "apiVersion": "kopf.dev/v1",
            "kind": "KopfExample",
            "metadata": {"name": name, "labels": labels},
            "spec": {"field": field},
        }
    )


class Live:
    """The processes of the live run, and the handler calls that the operator has made so far."""

    def __init__(self, kubeconfig: Path, calls: Path) -> None:
        self.kubeconfig = kubeconfig
        self.calls = calls
        self.env = {**os.environ, "KUBECONFIG": str(kubeconfig), "KOPF_TEST_CALLS": str(calls), "PYTHONUNBUFFERED": "1"}

    def kubectl(self, *args: str, input: str | None = None) -> None:
        subprocess.run(
            [KUBECTL, *args], input=input, env=self.env, check=True, capture_output=True, text=True, timeout=30
        )

    def handled(self) -> list[list[str]]:
        lines = self.calls.read_text().splitlines() if self.calls.exists() else []
        return [json.loads(line) for line in lines]

    def wait_for_calls(self, count: int, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while len(self.handled()) < count:
            assert time.monotonic() < deadline, f"the live operator made only these calls: {self.handled()}"
            time.sleep(0.05)


def start(command: list[str], env: dict[str, str], ready: str, timeout: float = 30) -> subprocess.Popen[str]:
    """Start a process; return once a line containing ``ready`` appears on its stderr."""
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert process.stderr is not None
    deadline = time.monotonic() + timeout
    seen = []
    while time.monotonic() < deadline:
        line = process.stderr.readline()
        seen.append(line)
        if ready in line:
            return process
        if not line and process.poll() is not None:
            break
    process.kill()
    raise AssertionError(f"{command[0]} did not start: {''.join(seen)}")


@pytest.fixture
def processes() -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    yield started
    for process in started:
        if process.poll() is None:
            process.kill()
            process.wait(10)


def test_a_recorded_run_replays_with_the_same_handler_calls(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    served_cluster: ServedCluster,
    processes: list[subprocess.Popen[str]],
    tmp_path: Path,
) -> None:
    operator, log = tmp_path / "operator.py", tmp_path / "live.jsonl"
    operator.write_text(OPERATOR)
    live = Live(served_cluster.kubeconfig, tmp_path / "live-calls.jsonl")
    live.kubectl("apply", "-f", str(CRD))

    processes.append(
        start(
            [str(BIN / "kopf-sim"), "record", "-r", "kopfexamples", "-n", "default", "-o", str(log)],
            live.env,
            ready="Recording",
        )
    )
    processes.append(
        start(
            [str(BIN / "kopf"), "run", "--standalone", "--verbose", "-n", "default", str(operator)],
            live.env,
            ready="Serving the resource kopfexamples",
        )
    )
    live.kubectl("create", "-f", "-", input=example("ex1", "a"))
    live.wait_for_calls(1)
    live.kubectl("create", "-f", "-", input=example("ex2", "x", tier="web"))
    live.wait_for_calls(3)  # the creation handler and the field handler (the label is set)
    live.kubectl("patch", "kopfexamples", "ex1", "--type=merge", "-p", '{"spec": {"field": "b"}}')
    live.wait_for_calls(4)
    live.kubectl("label", "kopfexamples", "ex2", "tier=db", "--overwrite")
    live.wait_for_calls(6)  # the update handler and the field handler
    live.kubectl("delete", "kopfexamples", "ex1")  # waits until the operator lets it go
    live.wait_for_calls(7)
    live.kubectl("patch", "kopfexamples", "ex2", "--type=merge", "-p", '{"spec": {"field": "y"}}')
    live.wait_for_calls(8)
    live.kubectl("delete", "kopfexamples", "ex2")
    live.wait_for_calls(9)
    for process in processes:
        process.send_signal(signal.SIGINT)
    for process in processes:
        assert process.wait(30) == 0, process.args

    recorded = read_log(log)
    assert recorded.headers[0]["source"]["recorder"] == "kopf-sim record"
    # The CRD of the recorded resource first (the log replays alone), then the objects.
    assert recorded.events[0].resource.plural == "customresourcedefinitions"
    assert {event.resource.plural for event in recorded.events[1:]} == {"kopfexamples"}
    assert [event.type for event in recorded.changes()][-1] == "DELETED"

    replayed_calls = tmp_path / "replayed-calls.jsonl"
    for name, value in {
        "KOPF_TEST_CALLS": replayed_calls,
        "KOPF_TEST_CRD": CRD,
        "KOPF_TEST_LOG": log,
        "KOPF_TEST_OPERATOR": operator,
    }.items():
        monkeypatch.setenv(name, str(value))
    pytester.makepyfile(test_replayed=REPLAY_TEST)
    pytester.runpytest_inprocess(*NO_ASYNCIO, *BASE).assert_outcomes(passed=1)

    replayed = [json.loads(line) for line in replayed_calls.read_text().splitlines()]
    assert replayed == live.handled()
    assert replayed == [
        ["create", "ex1", "a"],
        ["create", "ex2", "x"],
        ["tier", "ex2", None, "web"],
        ["update", "ex1", "a", "b"],
        ["update", "ex2", "x", "x"],
        ["tier", "ex2", "web", "db"],
        ["delete", "ex1", "b"],
        ["update", "ex2", "x", "y"],
        ["delete", "ex2", "y"],
    ]
