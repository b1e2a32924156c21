"""
The walkthrough (docs/walkthrough.md) works as written, step by step.

The page shows files as ```{code-block} blocks with a ``:caption:`` naming the file (``name (continued)``
appends to it). The files as they are after each step go into a directory of that step, and one ``pytest``
session runs them all, as a reader would after each step: the tests of a step and of the steps before it
must pass with the operator of that step. The step "Run it by hand" is run as a reader would: ``kopf run --sim`` in the
background, then the page's ``kubectl`` commands against the printed kubeconfig.
"""

from __future__ import annotations

import os
import pathlib
import queue
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from xml.etree import ElementTree

import pytest

ROOT = pathlib.Path(__file__).parent.parent
PAGE = ROOT / "docs" / "walkthrough.md"
KUBECTL = shutil.which("kubectl") or "/usr/bin/kubectl"

FILE_BLOCK = re.compile(r"```\{code-block\} \w+\n:caption: ([^\n]+)\n\n(.*?)```", re.DOTALL)
BASH_BLOCK = re.compile(r"```bash\n(.*?)```", re.DOTALL)


def steps() -> list[tuple[str, str]]:
    """The page's steps as (title, text), in order."""
    parts = re.split(r"^## (Step \d+: [^\n]+)\n", PAGE.read_text(), flags=re.MULTILINE)
    return list(zip(parts[1::2], parts[2::2], strict=True))


def files_until(step_index: int) -> dict[str, str]:
    """The files as they are after the given step (0-based), with the appended parts."""
    files: dict[str, str] = {}
    for _, text in steps()[: step_index + 1]:
        for caption, content in FILE_BLOCK.findall(text):
            name, continued = caption.removesuffix(" (continued)"), caption.endswith(" (continued)")
            files[name] = files[name].rstrip("\n") + "\n\n\n" + content if continued else content
    return files


def write_files(files: dict[str, str], directory: pathlib.Path) -> None:
    for name, content in files.items():
        (directory / name).write_text(content)


def test_the_page_has_steps_with_files_and_tests() -> None:
    titles = [title for title, _ in steps()]
    assert len(titles) >= 5
    final = files_until(len(titles) - 1)
    assert {"countdown-crd.yaml", "countdown.yaml", "countdown.py", "test_countdown.py"} <= set(final)


@pytest.mark.long_running
def test_the_tests_of_every_step_pass(tmp_path: pathlib.Path) -> None:
    """Every step's files in a directory of its own; one pytest run over all of them (one start-up)."""
    expected: dict[str, int] = {}
    for index, (_, text) in enumerate(steps()):
        files = files_until(index)
        if not FILE_BLOCK.search(text) or "test_countdown.py" not in files:
            continue
        step = f"step{index + 1}"
        (tmp_path / step).mkdir()
        write_files(files, tmp_path / step)
        expected[step] = len(re.findall(r"^async def test_", files["test_countdown.py"], flags=re.MULTILINE))
    assert len(expected) >= 4

    report = tmp_path / "report.xml"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--import-mode=importlib",
            "-W",
            "ignore::DeprecationWarning",
            f"--junit-xml={report}",
            *expected,
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    passed: dict[str, int] = {}
    for case in ElementTree.parse(report).iter("testcase"):
        if not list(case):  # no <failure>, <error>, <skipped>
            step = case.get("classname", "").split(".")[0]
            passed[step] = passed.get(step, 0) + 1
    assert passed == expected, result.stdout


@pytest.mark.kubectl
def test_the_operator_runs_by_hand_as_written(tmp_path: pathlib.Path) -> None:
    index, text = next((index, text) for index, (title, text) in enumerate(steps()) if "by hand" in title)
    write_files(files_until(index), tmp_path)
    run_block, kubectl_block = BASH_BLOCK.findall(text)[:2]
    command = shlex.split(run_block.strip())
    assert command[:3] == ["kopf", "run", "--sim"]

    operator = subprocess.Popen(
        [sys.executable, "-m", "kopf", *command[1:]],
        cwd=tmp_path,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in operator.stdout or ()], daemon=True).start()
    output: list[str] = []
    try:
        kubeconfig = None
        while kubeconfig is None:
            output.append(lines.get(timeout=60))
            if output[-1].startswith("Kubeconfig: "):
                kubeconfig = output[-1].removeprefix("Kubeconfig: ").strip()
        env = {**os.environ, "KUBECONFIG": kubeconfig}
        for line in kubectl_block.splitlines():
            if line.startswith("kubectl "):
                args = shlex.split(line.split("#", 1)[0])
                result = subprocess.run(
                    [KUBECTL, *args[1:]], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
                )
                assert result.returncode == 0, f"{line}: {result.stderr}"

        # The handler's result appears in the object's status shortly after (in real time here).
        deadline = time.monotonic() + 60
        while True:
            result = subprocess.run(
                [KUBECTL, "get", "countdown", "launch", "-o", "jsonpath={.status.start.from}"],
                env=env,
                capture_output=True,
                text=True,
                timeout=60,
            )
            if result.stdout == "30" or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert result.stdout == "30", result.stderr
    finally:
        operator.send_signal(signal.SIGINT)  # Ctrl+C, as the page says
        try:
            operator.wait(timeout=60)
        finally:
            operator.kill()
        while not lines.empty():
            output.append(lines.get())
    assert operator.returncode == 0, "".join(output)
    assert any("Counting down from 30 seconds." in line for line in output), "".join(output)
